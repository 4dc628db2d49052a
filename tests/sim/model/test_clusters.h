// Cluster fixtures shared by the model tests: the presets as a scenario would build them.
#pragma once

#include <vector>

#include "sim/model/nccl_model.h"
#include "sim/model/scenario.h"

namespace wirewise::sim::testing {

inline ClusterSpec cluster(GpuKind g, int nodes, int gpusPerNode, int nics = 8, double nicGbps = 50) {
  GpuPreset p = gpuPreset(g);
  ClusterSpec c;
  c.gpu = g;
  c.nodes = nodes;
  c.gpusPerNode = gpusPerNode;
  c.nvlinkGbps = p.nvlinkGbps;
  c.nvls = p.nvls;
  c.pcieGbps = p.pcieGbps;
  c.computeCapability = p.computeCapability;
  c.nicsPerNode = nics;
  c.nicGbps = nicGbps;
  return c;
}

inline CommLayout world(const ClusterSpec& c) {
  std::vector<int> r;
  for (int i = 0; i < c.nRanks(); ++i) r.push_back(i);
  return makeCommLayout(c, r);
}

}  // namespace wirewise::sim::testing
