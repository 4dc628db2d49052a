// The cluster sources besides a scenario: a wiring map plus node and NIC figures, and an adaptation log's
// link_health events.
#include <gtest/gtest.h>

#include <fstream>
#include <sstream>
#include <string>

#include "advise/cluster_source.h"
#include "telemetry/wiring/wiring_json.h"

namespace wirewise::advise {
namespace {

std::string slurp(const std::string& path) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

sim::ClusterSpec twoByEight() {
  sim::ClusterSpec c;
  c.gpu = sim::GpuKind::H100Sxm;
  c.nodes = 2;
  c.gpusPerNode = 8;
  c.nvlinkGbps = 370.8;
  c.nicsPerNode = 8;
  return c;
}

TEST(WiringSource, DegradedH100MapBecomesOneNodeWithItsSlowPairs) {
  wiring::WiringMap map;
  std::string error;
  ASSERT_TRUE(wiring::readMapFile(std::string(WW_WIRING_DATA) + "/h100x4_degraded.json", &map, &error)) << error;
  const WiringCluster w = clusterFromWiring(map, 2, 25, 0);
  EXPECT_EQ(w.cluster.gpu, sim::GpuKind::H100Sxm);
  EXPECT_EQ(w.cluster.gpusPerNode, 4);  // the fifth GPU is listed but not present
  EXPECT_EQ(w.cluster.nodes, 2);
  EXPECT_EQ(w.cluster.nicsPerNode, 4);
  EXPECT_DOUBLE_EQ(w.cluster.nicGbps, 25);
  EXPECT_DOUBLE_EQ(w.cluster.nvlinkGbps, 370.8);
  ASSERT_EQ(w.measured.size(), 1u);
  const sim::NodeLinkState& n = w.measured[0].nodes[0];
  EXPECT_LT(n.nvlinkMult[1], 0.1);  // pair 1-3 measured 20 GB/s against ~389
  EXPECT_LT(n.nvlinkMult[3], 0.1);
  EXPECT_NEAR(n.nvlinkMult[0], 180.1 / 388.9, 0.01);            // pair 0-2 at 180
  EXPECT_DOUBLE_EQ(w.measured[0].nodes[1].nvlinkMult[0], 1.0);  // only the probed node
}

TEST(WiringSource, PcieMapHasNoNvlink) {
  wiring::WiringMap map;
  std::string error;
  ASSERT_TRUE(wiring::readMapFile(std::string(WW_WIRING_DATA) + "/pcie_a100x4_trained_down.json", &map, &error))
      << error;
  const WiringCluster w = clusterFromWiring(map, 1, 0, 0);
  EXPECT_DOUBLE_EQ(w.cluster.nvlinkGbps, 0);
  EXPECT_FALSE(w.cluster.nvls);
  EXPECT_TRUE(w.measured.empty());
}

TEST(LogSource, LinkHealthEventsBecomeLinkStates) {
  const LogFaults f = faultsFromLog(slurp(std::string(WW_ADVISE_DATA) + "/link_health.jsonl"), twoByEight(), 1);
  EXPECT_EQ(f.linkHealthEvents, 3);
  EXPECT_EQ(f.skippedLines, 1);
  ASSERT_EQ(f.states.size(), 2u);                           // the NIC degrade, then the NIC degrade + the NVLink down
  EXPECT_DOUBLE_EQ(f.states[0].nodes[1].nicMult[3], 0.25);  // 12.5 of the best 50 GB/s; mlx5_3 is the 4th id
  EXPECT_DOUBLE_EQ(f.states[0].nodes[0].nicMult[3], 1.0);
  EXPECT_DOUBLE_EQ(f.states[1].nodes[1].nicMult[3], 0.25);
  EXPECT_NEAR(f.states[1].nodes[1].nvlinkMult[1], (17 + 0.01) / 18, 1e-9);  // one of the 18 links down
  EXPECT_NE(f.label.find("mlx5_3:1 degraded (25%)"), std::string::npos);
  EXPECT_NE(f.label.find("gpu1:nvlink0 down"), std::string::npos);
}

TEST(LogSource, HealthyOrEmptyLogsRecordNothing) {
  EXPECT_TRUE(faultsFromLog("", twoByEight(), 0).states.empty());
  const std::string healthy =
      R"({"event":"link_health","links":[{"kind":"ib","id":"mlx5_0:1","state":"up","nominal_gbps":50}]})";
  const LogFaults f = faultsFromLog(healthy, twoByEight(), 0);
  EXPECT_EQ(f.linkHealthEvents, 1);
  EXPECT_TRUE(f.states.empty());
}

}  // namespace
}  // namespace wirewise::advise
