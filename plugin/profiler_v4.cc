// Profiler interface v4 (NCCL 2.27): mask before commName, commHash after it, and a uint8_t event type.
#include "plugin/export.h"
#include "plugin/nccl/profiler.h"
#include "runtime/profiler_core.h"

namespace {

ncclResult_t init(void** context, int* eActivationMask, const char* commName, uint64_t commHash, int nNodes,
                  int nranks, int rank, ncclDebugLogger_t logfn) {
  wirewise::ProfilerInitArgs args;
  args.abiVersion = 4;
  args.commId = commHash;
  args.activationMask = eActivationMask;
  args.commName = commName;
  args.nNodes = nNodes;
  args.nRanks = nranks;
  args.rank = rank;
  args.logger = logfn;
  return wirewise::profilerInit(args, context);
}

ncclResult_t startEvent(void* context, void** eHandle, ncclProfilerEventDescr_v4_t* d) {
  if (eHandle == nullptr) return ncclSuccess;
  *eHandle = nullptr;
  if (d == nullptr) return ncclSuccess;
  wirewise::ProfEvent ev;
  ev.type = d->type;
  ev.parent = d->parentObj;
  ev.rank = d->rank;
  if (d->type == ncclProfileColl) {
    ev.seqNumber = d->coll.seqNumber;
    ev.func = d->coll.func;
    ev.count = d->coll.count;
    ev.datatype = d->coll.datatype;
    ev.nChannels = d->coll.nChannels;
    ev.algo = d->coll.algo;
    ev.proto = d->coll.proto;
  } else if (d->type == ncclProfileKernelCh) {
    ev.channelId = d->kernelCh.channelId;
    ev.pTimer = d->kernelCh.pTimer;
  }
  *eHandle = wirewise::profilerStartEvent(context, ev);
  return ncclSuccess;
}

ncclResult_t stopEvent(void* eHandle) {
  wirewise::profilerStopEvent(eHandle);
  return ncclSuccess;
}

ncclResult_t recordEventState(void* eHandle, ncclProfilerEventState_v4_t eState,
                              ncclProfilerEventStateArgs_v4_t* eStateArgs) {
  uint64_t pTimer = (eState == ncclProfilerKernelChStop && eStateArgs != nullptr) ? eStateArgs->kernelCh.pTimer : 0;
  wirewise::profilerRecordState(eHandle, static_cast<int>(eState), pTimer);
  return ncclSuccess;
}

ncclResult_t finalize(void* context) { return wirewise::profilerFinalize(context); }

}  // namespace

extern "C" WW_EXPORT const ncclProfiler_v4_t ncclProfiler_v4 = {WW_PLUGIN_NAME, init, startEvent, stopEvent,
                                                                 recordEventState, finalize};
