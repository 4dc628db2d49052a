// Tuner interface v5 (NCCL 2.28, tried first there): convert NCCL's arguments and call the core.
#include "plugin/export.h"
#include "plugin/shim_util.h"

namespace {

ncclResult_t init(void** context, uint64_t commId, size_t nRanks, size_t nNodes, ncclDebugLogger_t logFunction,
                  ncclNvlDomainInfo_v5_t* nvlDomainInfo, ncclTunerConstants_v5_t* /*constants: NCCL's own stand*/) {
  return wirewise::shim::nvlDomainTunerInit(5, context, commId, nRanks, nNodes, logFunction, nvlDomainInfo);
}

ncclResult_t finalize(void* context) { return wirewise::tunerFinalize(context); }

}  // namespace

extern "C" WW_EXPORT const ncclTuner_v5_t ncclTunerPlugin_v5 = {WW_PLUGIN_NAME, init,
                                                                wirewise::shim::costTableGetCollInfo, finalize};
