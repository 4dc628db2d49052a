// The simulator's "truth": how long a collective really takes for a given (algo, proto, nChannels) on the links
// as they are at that moment. Flow-level model (model.md §10), calibrated to published nccl-tests numbers (§8);
// see docs/simulator-model.md for the full description and how it differs from NCCL's own model.
//
// Shape: T = latency + T_bw + ramp(T_bw), where
//   - each channel is one flow that crosses a fixed set of links with a per-link load (bytes per channel byte):
//       ring    every local GPU's NVLink bundle (or PCIe without NVLink), and on multi-node rings the NIC
//               `c mod nicsPerNode` of every node plus the PCIe link of that NIC's rail GPU. Rail-aligned:
//               a degraded NIC slows exactly the channels that use it; fewer channels use fewer NICs.
//               load 2(n-1)/n (allreduce), (n-1)/n (allgather/reducescatter), 1 (broadcast/reduce).
//       tree    (allreduce) intra chain: load 2 on every bundle; inter edge through the same rail NIC: load 1 on
//               two nodes (I5), 2 on more (interior in one of the two trees, leaf in the other).
//       nvls    (single node) every bundle carries every head: load 1 (allreduce), (n-1)/n (AG/RS).
//       nvlstree NVLS inside the node + tree edge on the channel's rail NIC, as above.
//       pat     (one GPU per node) ring-like loads over the rail NIC.
//     plus one private link per channel for the CTA's own throughput limit (per protocol);
//   - loads are divided by the protocol's payload efficiency (LL128 120/128, Simple 1; LL 0.5 on the network and
//     0.40 on intra-node peer links, S10) and by the algorithm's efficiency; competing foreign flows are greedy and
//     share each link max-min fairly (progressive filling) with our channel flows; every channel moves the same
//     bytes, so the slowest channel sets T_bw;
//   - latency is per hop by algorithm (intra hops, network hops + net_latency_us + added latency, base cost).
// Pure and deterministic: no clock, no RNG (noise is the driver's job).
#pragma once

#include <cstddef>
#include <vector>

#include "adaptive/types.h"
#include "sim/model/nccl_model.h"
#include "sim/model/scenario.h"

namespace wirewise::sim {

// Current state of one node's links. Multipliers scale nominal capacity; flows are greedy competing flows;
// add*Us is extra latency per hop over that link.
struct NodeLinkState {
  std::vector<double> nicMult, nvlinkMult, pcieMult;  // per NIC / per GPU / per GPU
  std::vector<int> nicFlows, nvlinkFlows, pcieFlows;
  std::vector<double> nicAddUs, nvlinkAddUs, pcieAddUs;
  friend bool operator==(const NodeLinkState&, const NodeLinkState&) = default;
};

struct LinkState {
  std::vector<NodeLinkState> nodes;
  friend bool operator==(const LinkState&, const LinkState&) = default;
};

LinkState healthyLinkState(const ClusterSpec& cluster);
// Applies every fault active at `step` (active on [from_step, to_step); flap: degraded for period_steps, healthy
// for period_steps, repeating from from_step; ramp: see faultFactorAt). Faults compose: multipliers multiply,
// flows and latency add.
LinkState linkStateAt(const Scenario& scenario, int step);
bool faultActiveAt(const Fault& fault, int step);
// The capacity multiplier an active degrade, flap or ramp applies at `step`: its factor, except that a ramp falls
// linearly from 1 to factor over ramp_steps in L = levels (default min(ramp_steps, 32)) equal levels, then holds: at
// from_step + k it is at level ceil((k + 1) L / ramp_steps) (at most L): one level per step when L = ramp_steps,
// the first already at from_step, and factor reached by from_step + ramp_steps - 1.
double faultFactorAt(const Fault& fault, int step);

struct TruthQuery {
  CollType coll = CollType::AllReduce;
  size_t nBytes = 0;  // NCCL's nBytes (total buffer for allgather/reducescatter)
  DType dtype = DType::F32;
  int algo = kAlgoRing;
  int proto = kProtoSimple;
  int nChannels = 1;  // channels actually used (clamped to [1, kMaxChannels])
};

struct TruthBreakdown {
  double totalUs = -1;  // < 0: this algorithm cannot run on this communicator
  double latencyUs = 0;
  double bandwidthUs = 0;  // slowest channel's transfer time
  double rampUs = 0;       // empirical pipeline-fill term (§8 shape at mid sizes)
  int slowestChannel = -1;
  std::vector<double> channelGBps;  // each channel's progress rate (channel bytes per second, GB/s)
};

TruthBreakdown truthBreakdown(const ClusterSpec& cluster, const CommLayout& layout, const LinkState& links,
                              const TruthQuery& query);
inline double truthTimeUs(const ClusterSpec& cluster, const CommLayout& layout, const LinkState& links,
                          const TruthQuery& query) {
  return truthBreakdown(cluster, layout, links, query).totalUs;
}
// Whether the algorithm exists on this communicator at all (mirrors NCCL's support rules, not its table).
bool truthSupports(const ClusterSpec& cluster, const CommLayout& layout, CollType coll, int algo, int proto);

// nccl-tests bus bandwidth for a time (model.md §8 formulas), GB/s.
double busBwGBps(CollType coll, size_t nBytes, int nRanks, double timeUs);

}  // namespace wirewise::sim
