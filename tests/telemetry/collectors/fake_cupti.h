// Scripted state of the fake libcupti (fake_cupti.cc), reached by the test through dlsym on the same
// handle the collector loads.
#pragma once

#include <cstddef>
#include <cstdint>

namespace wirewise::collectors::testing {

struct FakeKernelRecord {
  int kind = 10;  // CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL
  const char* name = "";
  uint64_t start = 0, end = 0;
  uint32_t device = 0, stream = 0, correlation = 0;
};

struct FakeCuptiState {
  uint32_t version = 130001;  // CUPTI_API_VERSION of CUDA 13.0
  int registerResult = 0, enableResult = 0;
  int enabledKind = -1, disableCalls = 0, flushCalls = 0, forcedFlushes = 0, buffersDelivered = 0;
  size_t dropped = 0;
  int pending = 0;
  // While non-zero, flushes deliver nothing. Read and written with __atomic builtins: lets a test stage
  // records while a sampler thread is flushing, then release them at once.
  int hold = 0;
  FakeKernelRecord records[32];
  // cuptiGetStreamIdEx / cuptiGetStreamId: stream handle -> CUPTI stream id; unknown handles fail.
  struct StreamId {
    const void* handle = nullptr;
    uint32_t id = 0;
  } streams[8];
  int nStreams = 0;
  int streamIdCalls = 0;
  void (*request)(uint8_t**, size_t*, size_t*) = nullptr;
  void (*complete)(void*, uint32_t, uint8_t*, size_t, size_t) = nullptr;
};

using FakeCuptiStateFn = FakeCuptiState* (*)();

}  // namespace wirewise::collectors::testing
