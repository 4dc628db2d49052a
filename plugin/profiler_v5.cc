// Profiler interface v5 (NCCL 2.28.3+, tried first): convert NCCL's descriptor and call the core.
#include "plugin/export.h"
#include "plugin/shim_util.h"

namespace {

ncclResult_t init(void** context, uint64_t commId, int* eActivationMask, const char* commName, int nNodes,
                  int nranks, int rank, ncclDebugLogger_t logfn) {
  return wirewise::shim::profilerInitShim(5, context, commId, eActivationMask, commName, nNodes, nranks, rank, logfn);
}

ncclResult_t startEvent(void* context, void** eHandle, ncclProfilerEventDescr_v5_t* eDescr) {
  return wirewise::shim::startEvent(context, eHandle, eDescr);
}

ncclResult_t finalize(void* context) { return wirewise::profilerFinalize(context); }

}  // namespace

extern "C" WW_EXPORT const ncclProfiler_v5_t ncclProfiler_v5 = {
    WW_PLUGIN_NAME, init, startEvent, wirewise::shim::stopEvent, wirewise::shim::recordEventState, finalize};
