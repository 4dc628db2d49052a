// A recording fake profiler plugin. FAKE_PROFILER_V5/V4 export working ncclProfiler_vN tables; FAKE_PROFILER_V3
// exports only a symbol named ncclProfiler_v3 (its contents are never used by the harness).
#include <cstring>

#include "common/nccl/profiler.h"
#include "tests/sim/loader/fakes/fake_record.h"

#define FAKE_EXPORT __attribute__((visibility("default")))

namespace {

FakeProfilerRecord rec;
int contextToken;
int eventToken;

[[maybe_unused]] ncclResult_t recordInit(int version, void** ctx, uint64_t commId, int* mask, const char* commName,
                                         int nNodes, int nRanks, int rank, ncclDebugLogger_t log) {
  ++rec.initCalls;
  rec.lastEntryVersion = version;
  rec.ctxArg = ctx;
  rec.commId = commId;
  rec.mask = mask;
  rec.commName = commName;
  rec.nNodes = nNodes;
  rec.nRanks = nRanks;
  rec.rank = rank;
  rec.logFn = reinterpret_cast<const void*>(log);
  if (rec.initResult != ncclSuccess) return rec.initResult;  // leaves *ctx untouched (NULL), as advised
  *mask = rec.maskToSet;
  *ctx = &contextToken;
  rec.ctxGiven = *ctx;
  return ncclSuccess;
}

[[maybe_unused]] void recordStart(int version, void* ctx, void** handle) {
  ++rec.startCalls;
  rec.lastEntryVersion = version;
  rec.startCtx = ctx;
  *handle = &eventToken;
  rec.handleGiven = *handle;
}

[[maybe_unused]] ncclResult_t recordStop(void* handle) {
  ++rec.stopCalls;
  rec.stopHandle = handle;
  return ncclSuccess;
}

[[maybe_unused]] ncclResult_t recordState(void* handle, ncclProfilerEventState_t state,
                                          ncclProfilerEventStateArgs_v5_t* args) {
  ++rec.stateCalls;
  rec.stateHandle = handle;
  rec.lastState = state;
  if (args != nullptr) std::memcpy(&rec.lastArgs, args, sizeof(rec.lastArgs));
  return ncclSuccess;
}

[[maybe_unused]] ncclResult_t recordFinalize(void* ctx) {
  ++rec.finalizeCalls;
  rec.finalizeCtx = ctx;
  return ncclSuccess;
}

}  // namespace

extern "C" FAKE_EXPORT FakeProfilerRecord* fakeProfilerRecord() { return &rec; }

#ifdef FAKE_PROFILER_V5
extern "C" {
FAKE_EXPORT ncclProfiler_v5_t ncclProfiler_v5 = {
    "fake-prof-v5",
    [](void** ctx, uint64_t commId, int* mask, const char* commName, int nNodes, int nRanks, int rank,
       ncclDebugLogger_t log) { return recordInit(5, ctx, commId, mask, commName, nNodes, nRanks, rank, log); },
    [](void* ctx, void** handle, ncclProfilerEventDescr_v5_t* d) {
      std::memcpy(&rec.lastV5, d, sizeof(*d));
      recordStart(5, ctx, handle);
      return ncclSuccess;
    },
    recordStop, recordState, recordFinalize};
}
#endif

#ifdef FAKE_PROFILER_V4
extern "C" {
FAKE_EXPORT ncclProfiler_v4_t ncclProfiler_v4 = {
    "fake-prof-v4",
    [](void** ctx, int* mask, const char* commName, uint64_t commHash, int nNodes, int nRanks, int rank,
       ncclDebugLogger_t log) { return recordInit(4, ctx, commHash, mask, commName, nNodes, nRanks, rank, log); },
    [](void* ctx, void** handle, ncclProfilerEventDescr_v4_t* d) {
      std::memcpy(&rec.lastV4, d, sizeof(*d));
      recordStart(4, ctx, handle);
      return ncclSuccess;
    },
    recordStop, recordState, recordFinalize};
}
#endif

#ifdef FAKE_PROFILER_V3
extern "C" {
FAKE_EXPORT char ncclProfiler_v3[16] = "fake-prof-v3";
}
#endif
