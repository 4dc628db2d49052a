// Tuner interface v7 (NCCL 2.32, tried first there): v6's members; only the constants NCCL passes grow a row.
#include "plugin/export.h"
#include "plugin/shim_util.h"

namespace {

ncclResult_t init(void** context, uint64_t commId, size_t nRanks, size_t nNodes, ncclDebugLogger_t logFunction,
                  ncclNvlDomainInfo_v7_t* nvlDomainInfo, ncclTunerConstants_v7_t* /*constants: NCCL's own stand*/) {
  return wirewise::shim::nvlDomainTunerInit(7, context, commId, nRanks, nNodes, logFunction, nvlDomainInfo);
}

ncclResult_t finalize(void* context) { return wirewise::tunerFinalize(context); }

}  // namespace

extern "C" WW_EXPORT const ncclTuner_v7_t ncclTunerPlugin_v7 = {
    WW_PLUGIN_NAME, init, wirewise::shim::costTableGetCollInfo, finalize, wirewise::shim::getChunkSize};
