// Tuner interface v3 (NCCL 2.22-2.23): as v4 without regBuff.
#include "plugin/export.h"
#include "plugin/nccl/tuner.h"
#include "runtime/tuner_core.h"

namespace {

ncclResult_t init(size_t nRanks, size_t nNodes, ncclDebugLogger_t logFunction, void** context) {
  wirewise::TunerInitArgs args;
  args.abiVersion = 3;
  args.nRanks = nRanks;
  args.nNodes = nNodes;
  args.logger = logFunction;
  return wirewise::tunerInit(args, context);
}

ncclResult_t getCollInfo(void* context, ncclFunc_t collType, size_t nBytes, int numPipeOps, float** collCostTable,
                         int numAlgo, int numProto, int* nChannels) {
  wirewise::CostTableView table(reinterpret_cast<float*>(collCostTable), numAlgo, numProto);
  return wirewise::tunerGetCollInfo(context, {static_cast<int>(collType), nBytes, numPipeOps, 0, true}, table,
                                    nChannels);
}

ncclResult_t destroy(void* context) { return wirewise::tunerFinalize(context); }

}  // namespace

extern "C" WW_EXPORT const ncclTuner_v3_t ncclTunerPlugin_v3 = {WW_PLUGIN_NAME, init, getCollInfo, destroy};
