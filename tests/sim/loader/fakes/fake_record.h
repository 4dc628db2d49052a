// What the fake tuner/profiler plugins record, shared by the fakes and the tests. Each fake library has its own
// copy (RTLD_LOCAL); tests reach it through dlsym(handle, "fakeTunerRecord" / "fakeProfilerRecord").
#pragma once

#include <cstddef>
#include <cstdint>

#include "common/nccl/common.h"
#include "common/nccl/profiler.h"

struct FakeTunerRecord {
  // Script, set by the test.
  ncclResult_t initResult = ncclSuccess;
  ncclResult_t collResult = ncclSuccess;
  int writeAlgo = -1;  // v3-v5: table[writeAlgo][writeProto] = writeValue when writeAlgo >= 0
  int writeProto = -1;
  float writeValue = 0;
  int replyChannels = 0;  // stored into *nChannels
  int replyAlgo = -1;     // v2 answer
  int replyProto = -1;
  size_t replyChunk = 0;  // v6/v7: stored into *chunkSize when non-zero
  ncclResult_t chunkResult = ncclSuccess;
  double v7WriteLlMaxBw00 = 0;  // v7: written into constants->llMaxBws[0][0] when non-zero

  // Observations.
  int initCalls = 0, collCalls = 0, finalizeCalls = 0, chunkCalls = 0;
  size_t chunkOnEntry = 0, chunkBytes = 0;
  int chunkColl = -1, chunkAlgo = -1, chunkProto = -1, chunkChannels = -1;
  double v7LlMaxBw31 = 0, v7LlMaxBw41 = 0;  // v7: what init saw in the fourth and fifth rows
  int lastEntryVersion = 0;  // the version whose entry point ran last
  uint64_t commId = 0;
  size_t nRanks = 0, nNodes = 0;
  const void* logFn = nullptr;
  const void* nvl = nullptr;
  const void* constants = nullptr;
  void* ctxGiven = nullptr;  // what init stored into *context
  void* collCtx = nullptr;
  int coll = -1;
  size_t nBytes = 0;
  int numPipeOps = -1, numAlgo = -1, numProto = -1;
  int regBuff = -1;  // stays -1 for v2/v3, which have no regBuff
  int nChannelsOnEntry = -1;
  int collNetSupport = -1, nvlsSupport = -1;  // v2 only
  const void* tableArg = nullptr;
  float tableSeen[21] = {};  // read flat: ((float*)table)[a*3+p]
  void* finalizeCtx = nullptr;
};

struct FakeProfilerRecord {
  ncclResult_t initResult = ncclSuccess;
  int maskToSet = 0;  // init stores it through eActivationMask

  int initCalls = 0, startCalls = 0, stopCalls = 0, stateCalls = 0, finalizeCalls = 0;
  int lastEntryVersion = 0;
  void** ctxArg = nullptr;
  uint64_t commId = 0;
  int* mask = nullptr;
  const char* commName = nullptr;
  int nNodes = -1, nRanks = -1, rank = -1;
  const void* logFn = nullptr;
  void* ctxGiven = nullptr;
  void* startCtx = nullptr;
  ncclProfilerEventDescr_v5_t lastV5{};  // raw descriptor as received by a v5 plugin
  ncclProfilerEventDescr_v4_t lastV4{};  // ... by a v4 plugin
  void* handleGiven = nullptr;           // what startEvent stored into *eHandle
  void* stopHandle = nullptr;
  void* stateHandle = nullptr;
  int lastState = -1;
  ncclProfilerEventStateArgs_v5_t lastArgs{};
  void* finalizeCtx = nullptr;
};

extern "C" {
FakeTunerRecord* fakeTunerRecord();
FakeProfilerRecord* fakeProfilerRecord();
}
