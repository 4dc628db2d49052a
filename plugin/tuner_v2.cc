// Tuner interface v2 (NCCL 2.21): no cost table. The plugin names one (algorithm, protocol) and NCCL's
// adapter zeroes that cell if it is enabled. We rebuild the only facts v2 gives us (CollNet and NVLS
// support) as a table of equal, enabled costs, let the core decide on it, and read the answer back.
#include "plugin/export.h"
#include "plugin/shim_util.h"

namespace {

ncclResult_t init(size_t nRanks, size_t nNodes, ncclDebugLogger_t logFunction, void** context) {
  return wirewise::shim::legacyTunerInit(2, nRanks, nNodes, logFunction, context);
}

ncclResult_t getCollInfo(void* context, ncclFunc_t collType, size_t nBytes, int collNetSupport, int nvlsSupport,
                         int /*numPipeOps*/, int* algorithm, int* protocol, int* nChannels) {
  float cells[NCCL_NUM_ALGORITHMS][NCCL_NUM_PROTOCOLS];
  for (int a = 0; a < NCCL_NUM_ALGORITHMS; ++a) {
    bool collNet = a == NCCL_ALGO_COLLNET_DIRECT || a == NCCL_ALGO_COLLNET_CHAIN;
    bool nvls = a == NCCL_ALGO_NVLS || a == NCCL_ALGO_NVLS_TREE;
    bool enabled = !(collNet && !collNetSupport) && !(nvls && !nvlsSupport);
    for (int p = 0; p < NCCL_NUM_PROTOCOLS; ++p) cells[a][p] = enabled ? 1.0f : -1.0f;
  }
  wirewise::CostTableView table(&cells[0][0], NCCL_NUM_ALGORITHMS, NCCL_NUM_PROTOCOLS);
  wirewise::tunerGetCollInfo(context, {static_cast<int>(collType), false, nBytes}, table, nChannels);
  for (int a = 0; a < NCCL_NUM_ALGORITHMS; ++a) {
    for (int p = 0; p < NCCL_NUM_PROTOCOLS; ++p) {
      if (cells[a][p] == 0.0f && algorithm != nullptr && protocol != nullptr) {
        *algorithm = a;
        *protocol = p;
        return ncclSuccess;
      }
    }
  }
  return ncclSuccess;  // no opinion: NCCL's adapter leaves its table alone
}

ncclResult_t destroy(void* context) { return wirewise::tunerFinalize(context); }

}  // namespace

extern "C" WW_EXPORT const ncclTuner_v2_t ncclTunerPlugin_v2 = {WW_PLUGIN_NAME, init, getCollInfo, destroy};
