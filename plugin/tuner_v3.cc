// Tuner interface v3 (NCCL 2.22-2.23): as v4 without regBuff.
#include "plugin/export.h"
#include "plugin/shim_util.h"

namespace {

ncclResult_t init(size_t nRanks, size_t nNodes, ncclDebugLogger_t logFunction, void** context) {
  return wirewise::shim::legacyTunerInit(3, nRanks, nNodes, logFunction, context);
}

ncclResult_t getCollInfo(void* context, ncclFunc_t collType, size_t nBytes, int numPipeOps, float** collCostTable,
                         int numAlgo, int numProto, int* nChannels) {
  return wirewise::shim::costTableGetCollInfo(context, collType, nBytes, numPipeOps, collCostTable, numAlgo, numProto,
                                              /*regBuff=*/0, nChannels);
}

ncclResult_t destroy(void* context) { return wirewise::tunerFinalize(context); }

}  // namespace

extern "C" WW_EXPORT const ncclTuner_v3_t ncclTunerPlugin_v3 = {WW_PLUGIN_NAME, init, getCollInfo, destroy};
