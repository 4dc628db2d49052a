// Tuner interface v4 (NCCL 2.24-2.27): as v5 but without commId, NVLink domains or constants, the context is
// init's last argument, and teardown is called destroy.
#include "plugin/export.h"
#include "plugin/shim_util.h"

namespace {

ncclResult_t init(size_t nRanks, size_t nNodes, ncclDebugLogger_t logFunction, void** context) {
  return wirewise::shim::legacyTunerInit(4, nRanks, nNodes, logFunction, context);
}

ncclResult_t destroy(void* context) { return wirewise::tunerFinalize(context); }

}  // namespace

extern "C" WW_EXPORT const ncclTuner_v4_t ncclTunerPlugin_v4 = {WW_PLUGIN_NAME, init,
                                                                wirewise::shim::costTableGetCollInfo, destroy};
