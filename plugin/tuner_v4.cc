// Tuner interface v4 (NCCL 2.24-2.27): as v5 but without commId, NVLink domains or constants, the context is
// init's last argument, and teardown is called destroy.
#include "plugin/export.h"
#include "plugin/nccl/tuner.h"
#include "runtime/tuner_core.h"

namespace {

ncclResult_t init(size_t nRanks, size_t nNodes, ncclDebugLogger_t logFunction, void** context) {
  wirewise::TunerInitArgs args;
  args.abiVersion = 4;
  args.nRanks = nRanks;
  args.nNodes = nNodes;
  args.logger = logFunction;
  return wirewise::tunerInit(args, context);
}

ncclResult_t getCollInfo(void* context, ncclFunc_t collType, size_t nBytes, int numPipeOps, float** collCostTable,
                         int numAlgo, int numProto, int regBuff, int* nChannels) {
  wirewise::CostTableView table(reinterpret_cast<float*>(collCostTable), numAlgo, numProto);
  return wirewise::tunerGetCollInfo(context, {static_cast<int>(collType), nBytes, numPipeOps, regBuff, true}, table,
                                    nChannels);
}

ncclResult_t destroy(void* context) { return wirewise::tunerFinalize(context); }

}  // namespace

extern "C" WW_EXPORT const ncclTuner_v4_t ncclTunerPlugin_v4 = {WW_PLUGIN_NAME, init, getCollInfo, destroy};
