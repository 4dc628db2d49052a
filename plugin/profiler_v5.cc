// Profiler interface v5 (NCCL 2.28.3+, tried first): convert NCCL's descriptor and call the core.
#include "plugin/export.h"
#include "plugin/shim_util.h"

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

ncclResult_t startEvent(void* context, void** eHandle, ncclProfilerEventDescr_v5_t* eDescr) {
  return wirewise::shim::startEvent(context, eHandle, eDescr);
}

ncclResult_t finalize(void* context) { return wirewise::profilerFinalize(context); }

}  // namespace

extern "C" WW_EXPORT const ncclProfiler_v5_t ncclProfiler_v5 = {
    WW_PLUGIN_NAME, init, startEvent, wirewise::shim::stopEvent, wirewise::shim::recordEventState, finalize};
