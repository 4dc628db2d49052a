// NCCL 2.28's side of the simulation: what NCCL computes once, at communicator init, from the healthy nominal
// topology (model.md §1: the table is frozen for the run). It reproduces the graph search's channel counts and
// per-channel bandwidths (§2), the bandwidth and latency model (§3, §4; constants as in NCCL v2.28.9
// tuning.cc), the enable rules (§5), the cost table handed to getCollInfo, NCCL's own min-entry choice and the
// channel count NCCL then runs it with (§6). Assumptions NCCL would read from the machine are fixed here:
// x86 Intel host (netOverhead 1 us, llMaxBw row 0), IB/Socket plugins report zero network latency, no CollNet,
// no user NCCL_ALGO/NCCL_PROTO, CUDA 12.
#pragma once

#include <cstddef>
#include <vector>

#include "adaptive/types.h"
#include "sim/model/scenario.h"

namespace wirewise::sim {

// Where one communicator's ranks live. Ranks keep the order given (NCCL's rank i = ranks[i]).
struct CommLayout {
  std::vector<int> ranks;                    // global ranks
  std::vector<int> nodes;                    // distinct nodes, ascending
  std::vector<std::vector<int>> localGpus;   // per entry of `nodes`: GPU indices on that node, ascending
  int nRanks = 0;
  int nNodes = 0;
  int maxLocalRanks = 0;
  int minLocalRanks = 0;
};
CommLayout makeCommLayout(const ClusterSpec& cluster, const std::vector<int>& ranks);

// One graph-search result (model.md §2.2): channels and per-channel GB/s.
struct GraphResult {
  int nChannels = 0;
  double bwIntra = 0;
  double bwInter = 0;
  bool nvlIntra = false;   // typeIntra == NVL (else PCI)
  bool ll128Inter = true;  // typeInter within LL128's limit (PXN on SM90+, PXB before)
};

struct NcclChoice {
  int algo = -1;
  int proto = -1;
  int nChannels = 0;
  float timeUs = -1;
};

class NcclModel {
 public:
  NcclModel(const ClusterSpec& cluster, const CommLayout& layout);

  // Fills out[algo][proto] exactly like updateCollCostTable (µs, -1 where NCCL disables or skips) and returns
  // the smallest enabled entry (-1 if none).
  float costTableUs(CollType coll, size_t nBytes, float out[kNumAlgos][kNumProtos], DType dtype = DType::F32,
                    int numPipeOps = 1) const;
  // NCCL's choice without a tuner: min entry (first in algo-major order on ties) and topoGetAlgoInfo's channels.
  NcclChoice defaultChoice(CollType coll, size_t nBytes, DType dtype = DType::F32) const;
  // topoGetAlgoInfo's channel count for a given (algo, proto) when the tuner leaves nChannels at 0.
  int defaultChannels(int algo, int proto, size_t nBytes) const;

  // Model internals, for tests and reports. Bandwidths are algorithm GB/s (0 = disabled); latencies in µs.
  double bandwidth(CollType coll, int algo, int proto) const { return bw_[idx(coll)][algo][proto]; }
  double latency(CollType coll, int algo, int proto) const { return lat_[idx(coll)][algo][proto]; }
  const GraphResult& graph(int algo) const { return graphs_[algo]; }
  int commChannels() const { return commChannels_; }  // comm->nChannels after duplication (§2.3)
  int nvlsChannels() const { return nvlsChannels_; }  // comm->nvlsChannels (0 without NVLS support)
  bool nvlsSupport() const { return nvlsSupport_; }
  const CommLayout& layout() const { return layout_; }

 private:
  static int idx(CollType c) { return static_cast<int>(c); }
  void search(const ClusterSpec& cluster);
  void tune();

  CommLayout layout_;
  int cc_ = 80;
  GraphResult graphs_[kNumAlgos];
  int commChannels_ = 1;
  int nvlsChannels_ = 0;
  bool nvlsSupport_ = false;
  bool patSupport_ = false;
  double bw_[kNumCollTypes][kNumAlgos][kNumProtos] = {};
  double lat_[kNumCollTypes][kNumAlgos][kNumProtos] = {};
  int maxThreads_[kNumAlgos][kNumProtos] = {};
};

}  // namespace wirewise::sim
