#include "tools/demo_costs.h"

#include <cmath>

namespace wirewise::tools {
namespace {

// Per-step latency (µs) and per-rank bandwidth (GB/s = 1e3 bytes/µs) per protocol: LL is quick to start
// and slow to stream, Simple the reverse. Values are round numbers, not measurements.
constexpr double kHopUs[NCCL_NUM_PROTOCOLS] = {0.6, 1.0, 2.0};
constexpr double kNetHopUs = 3.0;
constexpr double kBwGBs[NCCL_NUM_PROTOCOLS] = {8.0, 30.0, 45.0};
constexpr double kNetBwGBs = 24.0;
constexpr double kTreeBwShare = 0.7;

double busFactor(int coll, int n) {
  if (n <= 1) return 1.0;
  if (coll == ncclFuncAllReduce) return 2.0 * (n - 1) / n;
  if (coll == ncclFuncAllGather || coll == ncclFuncReduceScatter) return static_cast<double>(n - 1) / n;
  return 1.0;
}

}  // namespace

const char* illustrativeTableNote() {
  return "ILLUSTRATIVE cost table (latency + bytes/bandwidth per algo/proto, not NCCL's model): NVLS, CollNet "
         "and PAT are -1; tree only for allreduce; allreduce tree/ll128 and allgather ring/ll disabled (-1)";
}

void illustrativeCostTable(int coll, uint64_t nBytes, int nRanks, int nNodes, DemoTable t) {
  for (int a = 0; a < NCCL_NUM_ALGORITHMS; ++a)
    for (int p = 0; p < NCCL_NUM_PROTOCOLS; ++p) t[a][p] = static_cast<float>(NCCL_ALGO_PROTO_IGNORE);
  const int n = nRanks < 1 ? 1 : nRanks;
  const bool multiNode = nNodes > 1;
  const double bytes = static_cast<double>(nBytes) * busFactor(coll, n);
  const double ringSteps = coll == ncclFuncAllReduce ? 2.0 * (n - 1) : (n - 1 > 0 ? n - 1 : 1);
  const double treeSteps = 2.0 * std::ceil(std::log2(n > 1 ? n : 2));
  for (int p = 0; p < NCCL_NUM_PROTOCOLS; ++p) {
    const double bw = multiNode ? std::fmin(kBwGBs[p], kNetBwGBs * kBwGBs[p] / kBwGBs[NCCL_PROTO_SIMPLE]) : kBwGBs[p];
    const double net = multiNode ? kNetHopUs * nNodes : 0.0;
    t[NCCL_ALGO_RING][p] = static_cast<float>(ringSteps * kHopUs[p] + net + bytes / (bw * 1e3));
    if (coll == ncclFuncAllReduce) {
      const double treeNet = multiNode ? 2.0 * kNetHopUs * std::ceil(std::log2(nNodes)) : 0.0;
      t[NCCL_ALGO_TREE][p] =
          static_cast<float>(treeSteps * kHopUs[p] + treeNet + bytes / (bw * kTreeBwShare * 1e3));
    }
  }
  if (coll == ncclFuncAllReduce) t[NCCL_ALGO_TREE][NCCL_PROTO_LL128] = static_cast<float>(NCCL_ALGO_PROTO_IGNORE);
  if (coll == ncclFuncAllGather) t[NCCL_ALGO_RING][NCCL_PROTO_LL] = static_cast<float>(NCCL_ALGO_PROTO_IGNORE);
}

}  // namespace wirewise::tools
