// A fake libcupti.so: the Activity API entry points the collector calls. cuptiActivityFlushAll asks
// the collector's real buffer-request callback for a buffer, writes CUpti_ActivityKernel10-layout
// records into it and hands it to the real buffer-complete callback, as CUPTI's worker does. Built
// three times: complete, without cuptiActivityGetNextRecord (FAKE_CUPTI_OMIT_NEXT_RECORD), and without
// the stream-id functions (FAKE_CUPTI_OMIT_STREAM_ID). cuptiGetStreamIdEx maps the handles the test
// registered in FakeCuptiState::streams.
#include <cstddef>
#include <cstring>

#include "tests/telemetry/collectors/fake_cupti.h"

using wirewise::collectors::testing::FakeCuptiState;

#define FAKE_EXPORT extern "C" __attribute__((visibility("default")))

namespace {

FakeCuptiState g_state;

// The CUDA 13.0 cupti_activity.h field list of CUpti_ActivityKernel10 up to `name`, packed and
// 8-aligned like PACKED_ALIGNMENT, padded to the header's sizeof (216).
struct __attribute__((packed, aligned(8))) Kernel10 {
  int32_t kind;
  uint8_t cacheConfig, sharedMemoryConfig;
  uint16_t registersPerThread;
  int32_t partitionedGlobalCacheRequested, partitionedGlobalCacheExecuted;
  uint64_t start, end, completed;
  uint32_t deviceId, contextId, streamId;
  int32_t gridX, gridY, gridZ, blockX, blockY, blockZ, staticSharedMemory, dynamicSharedMemory;
  uint32_t localMemoryPerThread, localMemoryTotal, correlationId;
  int64_t gridId;
  const char* name;
  uint8_t rest[216 - 112];
};
static_assert(sizeof(Kernel10) == 216 && offsetof(Kernel10, name) == 104 && offsetof(Kernel10, correlationId) == 92);

}  // namespace

FAKE_EXPORT FakeCuptiState* fakeCuptiState() { return &g_state; }

FAKE_EXPORT int cuptiGetVersion(uint32_t* v) {
  *v = g_state.version;
  return 0;
}
FAKE_EXPORT int cuptiActivityRegisterCallbacks(void (*req)(uint8_t**, size_t*, size_t*),
                                               void (*comp)(void*, uint32_t, uint8_t*, size_t, size_t)) {
  if (g_state.registerResult != 0) return g_state.registerResult;
  g_state.request = req;
  g_state.complete = comp;
  return 0;
}
FAKE_EXPORT int cuptiActivityEnable(int kind) {
  if (g_state.enableResult != 0) return g_state.enableResult;
  g_state.enabledKind = kind;
  return 0;
}
FAKE_EXPORT int cuptiActivityDisable(int) {
  ++g_state.disableCalls;
  g_state.enabledKind = -1;
  return 0;
}
FAKE_EXPORT int cuptiActivityGetNumDroppedRecords(void*, uint32_t, size_t* n) {
  *n = g_state.dropped;
  g_state.dropped = 0;  // reading resets the count, as in CUPTI
  return 0;
}
FAKE_EXPORT int cuptiActivityFlushAll(uint32_t flag) {
  ++g_state.flushCalls;
  if (flag & 1u) ++g_state.forcedFlushes;
  if (__atomic_load_n(&g_state.hold, __ATOMIC_ACQUIRE) != 0) return 0;
  if (g_state.pending == 0 || !g_state.request || !g_state.complete) return 0;
  uint8_t* buf = nullptr;
  size_t size = 0, maxRecords = 0;
  g_state.request(&buf, &size, &maxRecords);
  if (!buf) return 0;  // the client declined a buffer: records are dropped
  size_t n = 0;
  for (int i = 0; i < g_state.pending && (n + 1) * sizeof(Kernel10) <= size; ++i, ++n) {
    Kernel10 k;
    std::memset(&k, 0, sizeof k);
    const auto& r = g_state.records[i];
    k.kind = r.kind;
    k.start = r.start;
    k.end = r.end;
    k.deviceId = r.device;
    k.streamId = r.stream;
    k.correlationId = r.correlation;
    k.name = r.name;
    std::memcpy(buf + n * sizeof k, &k, sizeof k);
  }
  g_state.pending = 0;
  ++g_state.buffersDelivered;
  g_state.complete(nullptr, 0, buf, size, n * sizeof(Kernel10));
  return 0;
}

#ifndef FAKE_CUPTI_OMIT_STREAM_ID
namespace {
int lookupStream(const void* stream, uint32_t* id) {
  ++g_state.streamIdCalls;
  for (int i = 0; i < g_state.nStreams; ++i)
    if (g_state.streams[i].handle == stream) {
      *id = g_state.streams[i].id;
      return 0;
    }
  return 1;  // CUPTI_ERROR_INVALID_PARAMETER
}
}  // namespace
FAKE_EXPORT int cuptiGetStreamIdEx(void*, void* stream, uint8_t perThreadStream, uint32_t* id) {
  if (perThreadStream != 0) return 1;  // the collector never asks for the per-thread stream
  return lookupStream(stream, id);
}
FAKE_EXPORT int cuptiGetStreamId(void*, void* stream, uint32_t* id) { return lookupStream(stream, id); }
#endif

#ifndef FAKE_CUPTI_OMIT_NEXT_RECORD
FAKE_EXPORT int cuptiActivityGetNextRecord(uint8_t* buffer, size_t valid, uint8_t** record) {
  uint8_t* next = *record ? *record + sizeof(Kernel10) : buffer;
  if (next + sizeof(Kernel10) > buffer + valid) return 12;  // CUPTI_ERROR_MAX_LIMIT_REACHED
  *record = next;
  return 0;
}
#endif
