// Tuner interface v6 (NCCL 2.30 and 2.31, tried first there): v5 plus getChunkSize, answered from the agreed table.
#include "plugin/export.h"
#include "plugin/shim_util.h"

namespace {

ncclResult_t init(void** context, uint64_t commId, size_t nRanks, size_t nNodes, ncclDebugLogger_t logFunction,
                  ncclNvlDomainInfo_v6_t* nvlDomainInfo, ncclTunerConstants_v6_t* /*constants: NCCL's own stand*/) {
  return wirewise::shim::nvlDomainTunerInit(6, context, commId, nRanks, nNodes, logFunction, nvlDomainInfo);
}

ncclResult_t finalize(void* context) { return wirewise::tunerFinalize(context); }

}  // namespace

extern "C" WW_EXPORT const ncclTuner_v6_t ncclTunerPlugin_v6 = {
    WW_PLUGIN_NAME, init, wirewise::shim::costTableGetCollInfo, finalize, wirewise::shim::getChunkSize};
