// Profiler interface v4 (NCCL 2.27): mask before commName, commHash after it, and a uint8_t event type.
#include "plugin/export.h"
#include "plugin/shim_util.h"

namespace {

ncclResult_t init(void** context, int* eActivationMask, const char* commName, uint64_t commHash, int nNodes,
                  int nranks, int rank, ncclDebugLogger_t logfn) {
  return wirewise::shim::profilerInitShim(4, context, commHash, eActivationMask, commName, nNodes, nranks, rank, logfn);
}

ncclResult_t startEvent(void* context, void** eHandle, ncclProfilerEventDescr_v4_t* eDescr) {
  return wirewise::shim::startEvent(context, eHandle, eDescr);
}

ncclResult_t finalize(void* context) { return wirewise::profilerFinalize(context); }

}  // namespace

// v4's state and state-argument types are v5's (same values, same union).
extern "C" WW_EXPORT const ncclProfiler_v4_t ncclProfiler_v4 = {
    WW_PLUGIN_NAME, init, startEvent, wirewise::shim::stopEvent, wirewise::shim::recordEventState, finalize};
