// Profiler interface v5 (NCCL 2.28.3+, tried first): convert NCCL's descriptor and call the core.
#include "plugin/export.h"
#include "plugin/nccl/profiler.h"
#include "runtime/profiler_core.h"

namespace {

ncclResult_t init(void** context, uint64_t commId, int* eActivationMask, const char* commName, int nNodes,
                  int nranks, int rank, ncclDebugLogger_t logfn) {
  wirewise::ProfilerInitArgs args;
  args.abiVersion = 5;
  args.commId = commId;
  args.activationMask = eActivationMask;
  args.commName = commName;
  args.nNodes = nNodes;
  args.nRanks = nranks;
  args.rank = rank;
  args.logger = logfn;
  return wirewise::profilerInit(args, context);
}

ncclResult_t startEvent(void* context, void** eHandle, ncclProfilerEventDescr_v5_t* d) {
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
  return ncclSuccess;  // NCCL ignores these return values; success regardless
}

ncclResult_t stopEvent(void* eHandle) {
  wirewise::profilerStopEvent(eHandle);
  return ncclSuccess;
}

ncclResult_t recordEventState(void* eHandle, ncclProfilerEventState_v5_t eState,
                              ncclProfilerEventStateArgs_v5_t* eStateArgs) {
  // eStateArgs may be null (GroupApi states); only KernelChStop carries a value we use.
  uint64_t pTimer = (eState == ncclProfilerKernelChStop && eStateArgs != nullptr) ? eStateArgs->kernelCh.pTimer : 0;
  wirewise::profilerRecordState(eHandle, static_cast<int>(eState), pTimer);
  return ncclSuccess;
}

ncclResult_t finalize(void* context) { return wirewise::profilerFinalize(context); }

}  // namespace

extern "C" WW_EXPORT const ncclProfiler_v5_t ncclProfiler_v5 = {WW_PLUGIN_NAME, init, startEvent, stopEvent,
                                                                 recordEventState, finalize};
