// Profiler interface v6 (NCCL 2.29 to 2.32, tried first there): v5 plus copy-engine collectives, which are
// counted (their events bracket the host-side launch, not the copies, so they give no time to sample).
#include "plugin/export.h"
#include "plugin/shim_util.h"

namespace {

ncclResult_t init(void** context, uint64_t commId, int* eActivationMask, const char* commName, int nNodes,
                  int nranks, int rank, ncclDebugLogger_t logfn) {
  return wirewise::shim::profilerInitShim(6, context, commId, eActivationMask, commName, nNodes, nranks, rank, logfn);
}

ncclResult_t startEvent(void* context, void** eHandle, ncclProfilerEventDescr_v6_t* eDescr) {
  return wirewise::shim::startEvent(context, eHandle, eDescr);
}

ncclResult_t finalize(void* context) { return wirewise::profilerFinalize(context); }

}  // namespace

// v6's state arguments are v5's; its states add 25..30 (copy-engine), which the core ignores.
extern "C" WW_EXPORT const ncclProfiler_v6_t ncclProfiler_v6 = {
    WW_PLUGIN_NAME, init, startEvent, wirewise::shim::stopEvent, wirewise::shim::recordEventState, finalize};
