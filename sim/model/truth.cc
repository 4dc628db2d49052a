// Support rules and nccl-tests bus bandwidth; the time model itself is in truth_time.cc.
#include "sim/model/truth.h"

namespace wirewise::sim {

bool truthSupports(const ClusterSpec& c, const CommLayout& l, CollType coll, int algo, int proto) {
  if (l.nRanks <= 1) return algo == kAlgoRing && proto == kProtoSimple;
  const bool ar = coll == CollType::AllReduce;
  const bool agrs = coll == CollType::AllGather || coll == CollType::ReduceScatter;
  const bool nvls = c.nvls && c.nvlinkGbps > 0 && c.computeCapability >= 90 && l.minLocalRanks >= 2;
  switch (algo) {
    case kAlgoRing: return proto >= 0 && proto < kNumProtos;
    case kAlgoTree: return ar && proto >= 0 && proto < kNumProtos;
    case kAlgoNvls: return (ar || agrs) && proto == kProtoSimple && nvls && l.nNodes == 1;
    case kAlgoNvlsTree: return ar && proto == kProtoSimple && nvls && l.nNodes > 1;
    case kAlgoPat: return agrs && proto == kProtoSimple && l.nNodes > 1 && l.nNodes == l.nRanks;
    default: return false;  // CollNet: the simulated fabrics have no in-network reduction
  }
}

double busBwGBps(CollType coll, size_t nBytes, int nRanks, double timeUs) {
  if (timeUs <= 0 || nRanks <= 0) return 0;
  double algBw = static_cast<double>(nBytes) / (timeUs * 1e3);
  double n = nRanks;
  switch (coll) {
    case CollType::AllReduce: return algBw * 2 * (n - 1) / n;
    case CollType::AllGather:
    case CollType::ReduceScatter: return algBw * (n - 1) / n;
    case CollType::Broadcast:
    case CollType::Reduce: break;
  }
  return algBw;
}

}  // namespace wirewise::sim
