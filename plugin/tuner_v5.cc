// Tuner interface v5 (NCCL 2.28.3+, tried first): convert NCCL's arguments and call the core.
#include "plugin/export.h"
#include "plugin/shim_util.h"

namespace {

ncclResult_t init(void** context, uint64_t commId, size_t nRanks, size_t nNodes, ncclDebugLogger_t logFunction,
                  ncclNvlDomainInfo_v5_t* nvlDomainInfo, ncclTunerConstants_v5_t* /*constants: NCCL's own stand*/) {
  wirewise::TunerInitArgs args;
  args.abiVersion = 5;
  args.hasCommId = true;
  args.commId = commId;
  args.nRanks = nRanks;
  args.nNodes = nNodes;
  args.logger = logFunction;
  if (nvlDomainInfo != nullptr) {
    args.nNvlDomains = nvlDomainInfo->nNvlDomains;
    args.minRanksPerNvlDomain = nvlDomainInfo->minRanksPerNvlDomain;
    args.maxRanksPerNvlDomain = nvlDomainInfo->maxRanksPerNvlDomain;
  }
  return wirewise::tunerInit(args, context);
}

ncclResult_t finalize(void* context) { return wirewise::tunerFinalize(context); }

}  // namespace

extern "C" WW_EXPORT const ncclTuner_v5_t ncclTunerPlugin_v5 = {WW_PLUGIN_NAME, init,
                                                                wirewise::shim::costTableGetCollInfo, finalize};
