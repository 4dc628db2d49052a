// Where the advisor's cluster and its faults come from besides a scenario: this host's wiring map (`wirewise
// probe`) plus node and NIC figures, and an adaptation log's `link_health` events. Pure: the caller reads the
// files. docs/advise.md §7.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "sim/model/scenario.h"
#include "sim/model/truth.h"
#include "telemetry/wiring/wiring_map.h"

namespace wirewise::advise {

struct WiringCluster {
  sim::ClusterSpec cluster;
  // Node 0's NVLink bundles scaled by what the map measured against the host's best pair (empty when every GPU
  // is within 10% of the best): a recorded fault for the what-if column.
  std::vector<sim::LinkState> measured;
  std::string note;  // how the map was read ("8 x NVIDIA H100 80GB HBM3, NVLink 18 x 20.6 GB/s ...")
};
// gpusPerNode = the map's present GPUs, GPU kind from the name (H100, H200, A100; else generic), NVLink bundle the
// kind's preset (NCCL's figure; NVML's link count x speed for a generic GPU; no NVLink pair: PCIe only), nodes and
// NICs as given (nicGbps <= 0 or nicsPerNode <= 0: 50 GB/s and one NIC per GPU).
WiringCluster clusterFromWiring(const wiring::WiringMap& map, int nodes, double nicGbps, int nicsPerNode);

struct LogFaults {
  std::vector<sim::LinkState> states;  // one per distinct unhealthy state the log went through
  std::string label;                   // "mlx5_3:1 degraded (25%), gpu0:nvlink2 down"
  int linkHealthEvents = 0;
  int skippedLines = 0;
};
// Replays the log's `link_health` events (docs/telemetry.md) onto `node` of the cluster: NIC-kind links (ib, roce,
// netdev, rail) map to NIC indices in the order of their ids, nvlink and pcie links to their GPU. A link's factor
// is its capacity ratio (nominal / best nominal of its kind in the log, or a rail's rate_ratio) when below 0.99,
// else 0.5 when degraded; down is 0.01. An NVLink link is one of the bundle's links (bundle / 20.6 GB/s of them).
LogFaults faultsFromLog(std::string_view logText, const sim::ClusterSpec& cluster, int node);

}  // namespace wirewise::advise
