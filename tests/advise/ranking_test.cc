// Rankings on clusters where the answer is known, the what-if faults, and the report's shape.
#include <gtest/gtest.h>

#include <string>

#include "advise/advise.h"
#include "advise/report.h"

namespace wirewise::advise {
namespace {

sim::ClusterSpec hopper(int nodes, double nicGbps) {
  sim::ClusterSpec c;
  c.gpu = sim::GpuKind::H100Sxm;
  const sim::GpuPreset p = sim::gpuPreset(c.gpu);
  c.nodes = nodes;
  c.gpusPerNode = 8;
  c.nvlinkGbps = p.nvlinkGbps;
  c.nvls = p.nvls;
  c.pcieGbps = p.pcieGbps;
  c.computeCapability = p.computeCapability;
  c.nicsPerNode = 8;
  c.nicGbps = nicGbps;
  return c;
}

const StrategyResult* find(const AdviseResult& r, StrategyKind k, int tp) {
  for (const StrategyResult& s : r.ranked) {
    if (s.strategy.kind == k && s.strategy.tp == tp) return &s;
  }
  return nullptr;
}

// Fast NVLink, slow network: HSDP moves its parameter traffic onto NVLink and sends only 1/8 of the gradients
// across nodes, so it beats FULL_SHARD, which gathers every parameter twice over the network.
TEST(Ranking, HsdpBeatsFullShardOnFastNvlinkAndSlowNetwork) {
  AdviseOptions o;
  o.model = *modelPreset("llama-7b");
  o.training.globalBatch = 64;
  o.tpDegrees = {1};
  o.strategies = {StrategyKind::FsdpFull, StrategyKind::Hsdp};
  const AdviseResult r = advise(hopper(4, 3.125), {}, "", o);  // 8 x 25 GbE-class NICs per node
  const StrategyResult* hsdp = find(r, StrategyKind::Hsdp, 1);
  const StrategyResult* full = find(r, StrategyKind::FsdpFull, 1);
  ASSERT_TRUE(hsdp && full);
  EXPECT_TRUE(hsdp->fits);
  EXPECT_TRUE(full->fits);
  EXPECT_LT(hsdp->nccl.stepUs, 0.8 * full->nccl.stepUs);
  EXPECT_LT(hsdp->nccl.exposedUs, full->nccl.exposedUs);
  EXPECT_EQ(r.ranked.front().strategy.kind, StrategyKind::Hsdp);
  EXPECT_EQ(r.ranked.front().strategy.shardGroup, 8);  // one node: the fast domain
}

// The same model on a fast network with NVLink: sharding over everything costs little more than HSDP.
TEST(Ranking, FullShardIsCloseOnAFastNetwork) {
  AdviseOptions o;
  o.model = *modelPreset("llama-7b");
  o.training.globalBatch = 64;
  o.tpDegrees = {1};
  o.strategies = {StrategyKind::FsdpFull, StrategyKind::Hsdp};
  const AdviseResult r = advise(hopper(2, 50), {}, "", o);
  const StrategyResult* hsdp = find(r, StrategyKind::Hsdp, 1);
  const StrategyResult* full = find(r, StrategyKind::FsdpFull, 1);
  ASSERT_TRUE(hsdp && full);
  EXPECT_LT(full->nccl.stepUs, 1.3 * hsdp->nccl.stepUs);
}

// A memory-bound model: llama-13b needs 16 x 13B = 208 GB of model states under DDP; an 80 GB GPU cannot hold it,
// and the advisor ranks every strategy that fits above it.
TEST(Ranking, DdpDoesNotFitAMemoryBoundModel) {
  AdviseOptions o;
  o.model = *modelPreset("llama-13b");
  o.training.globalBatch = 64;
  const AdviseResult r = advise(hopper(1, 50), {}, "", o);
  const StrategyResult* ddp = find(r, StrategyKind::Ddp, 1);
  ASSERT_TRUE(ddp);
  EXPECT_FALSE(ddp->fits);
  EXPECT_GT(ddp->memory.total(), 200);
  EXPECT_NEAR(ddp->memory.params + ddp->memory.grads + ddp->memory.optimizer, 16 * paramCount(o.model) / 1e9, 1e-6);
  ASSERT_GE(r.recommended, 0);
  const StrategyResult& best = r.ranked[static_cast<size_t>(r.recommended)];
  EXPECT_TRUE(best.fits);
  EXPECT_FALSE(best.strategy.kind == StrategyKind::Ddp && best.strategy.tp == 1);
  bool seenUnfit = false;
  for (const StrategyResult& s : r.ranked) {
    if (!s.fits) seenUnfit = true;
    EXPECT_FALSE(seenUnfit && s.fits) << "a fitting strategy ranked below one that does not fit";
  }
  const StrategyResult* full = find(r, StrategyKind::FsdpFull, 1);
  ASSERT_TRUE(full);
  EXPECT_TRUE(full->fits);
}

TEST(Ranking, NoStrategyFitsMeansNoRecommendation) {
  AdviseOptions o;
  o.model = *modelPreset("llama-70b");
  o.strategies = {StrategyKind::Ddp};
  o.tpDegrees = {1};
  const AdviseResult r = advise(hopper(1, 50), {}, "", o);
  EXPECT_EQ(r.recommended, -1);
  EXPECT_NE(formatTable(r).find("none fits"), std::string::npos);
}

TEST(WhatIf, FaultsCostTimeAndWirewiseNeverLoses) {
  AdviseOptions o;
  o.model = *modelPreset("gpt-1.3b");
  o.training.globalBatch = 16;
  o.tpDegrees = {1};
  const sim::ClusterSpec c = hopper(2, 50);
  sim::LinkState recorded = sim::healthyLinkState(c);
  recorded.nodes[1].nicMult[3] = 0.1;
  const AdviseResult r = advise(c, {recorded}, "NIC 3 of node 1 at 10%", o);
  ASSERT_EQ(r.ranked.size(), 7u);
  for (const StrategyResult& s : r.ranked) {
    ASSERT_EQ(s.whatIf.size(), 3u);
    EXPECT_EQ(s.whatIf[0].name, "nic_25");
    EXPECT_EQ(s.whatIf[1].name, "nvlink_50");
    EXPECT_EQ(s.whatIf[2].name, "recorded");
    for (const WhatIf& w : s.whatIf) {
      EXPECT_GE(w.ncclMs, s.nccl.stepUs / 1e3 - 1e-9) << strategyName(s.strategy.kind) << " " << w.name;
      EXPECT_LE(w.wirewiseMs, w.ncclMs + 1e-9);
    }
    EXPECT_LE(s.wirewise.stepUs, s.nccl.stepUs + 1e-6);
    EXPECT_GT(s.whatIf[2].ncclMs, s.nccl.stepUs / 1e3) << strategyName(s.strategy.kind);
  }
}

TEST(WhatIf, SingleNodeHasNoNicFault) {
  const auto faults = plausibleFaults(hopper(1, 50));
  ASSERT_EQ(faults.size(), 1u);
  EXPECT_EQ(faults[0].name, "nvlink_50");
}

TEST(WhatIf, ScenarioScheduleBecomesLinkStates) {
  std::string error;
  const auto sc = sim::loadScenarioFile(std::string(WW_SCENARIO_DIR) + "/2x8-h100-nic-degrade.json", &error);
  ASSERT_TRUE(sc) << error;
  const auto states = scheduledLinkStates(*sc);
  ASSERT_EQ(states.size(), 3u);  // the NIC degrade, the contention, the latency rise
  EXPECT_DOUBLE_EQ(states[0].nodes[1].nicMult[3], 0.25);
}

TEST(Report, JsonHasEveryStrategyField) {
  AdviseOptions o;
  o.model = *modelPreset("gpt-1.3b");
  const AdviseResult r = advise(hopper(2, 50), {}, "", o);
  const nlohmann::json j = toJson(r);
  // 7 strategies x tp 1, 2, 4, 8, less HSDP at tp 8: one node's shard group would be a single GPU.
  ASSERT_EQ(j["strategies"].size(), 7u * 4u - 1u);
  for (const auto& s : j["strategies"]) {
    for (const char* key : {"name", "tp", "step_time_ms", "exposed_comm_ms", "memory_gb", "fits", "what_if"}) {
      EXPECT_TRUE(s.contains(key)) << key;
    }
    for (const char* key : {"params", "grads", "optimizer", "activations", "total"}) {
      EXPECT_TRUE(s["memory_gb"].contains(key)) << key;
    }
  }
  const std::string svg = chartSvg(r);
  EXPECT_EQ(svg.rfind("<svg", 0), 0u);
  EXPECT_NE(svg.find("</svg>"), std::string::npos);
  EXPECT_NE(formatTable(r).find("recommended:"), std::string::npos);
}

}  // namespace
}  // namespace wirewise::advise
