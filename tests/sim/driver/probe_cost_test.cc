// Pricing probes against their incumbents (sim/driver/probe_cost.h), on hand-written collective records.
#include <vector>

#include <gtest/gtest.h>

#include "sim/driver/driver.h"
#include "sim/driver/probe_cost.h"

namespace wirewise::sim {
namespace {

constexpr uint64_t kWorld = 0xa, kTp0 = 0xb, kTp1 = 0xc;
constexpr uint64_t kBig = 32u << 20, kSmall = 4096;

// In these tests a choice's noise-free true time is its own number (µs), under every link state.
ProbeCostModel model(int nRanks, std::vector<std::vector<int>> slotRanks, std::vector<uint32_t> defaults) {
  ProbeCostModel m;
  m.nRanks = nRanks;
  m.slotRanks = std::move(slotRanks);
  m.defaultChoice = std::move(defaults);
  m.trueUs = [](const CollRecord&, uint32_t choice) { return static_cast<double>(choice); };
  return m;
}

CollRecord rec(uint64_t comm, CollType coll, uint64_t bytes, int step, int slot, uint32_t choice, double mult = 1.0,
               int lateMember = -1, double lateUs = 0) {
  CollRecord c;
  c.comm = comm;
  c.coll = coll;
  c.bytes = bytes;
  c.step = step;
  c.slot = slot;
  c.choice = choice;
  c.noise = NoiseDraw{mult, lateMember, lateUs};
  c.us = static_cast<double>(choice) * mult;
  return c;
}

TEST(ProbeCost, TheIncumbentIsTheLastPlainChoiceOfTheSameCollectiveElseNcclsDefault) {
  // Slot 0: world allreduce 32 MiB (NCCL's default 50); slot 1: world allreduce 4 KiB (default 7).
  const ProbeCostModel m = model(2, {{0, 1}, {0, 1}}, {50, 7});
  const std::vector<CollRecord> colls = {
      rec(kWorld, CollType::AllReduce, kBig, 0, 0, 120, 1.1),   // probe before any plain one: vs default 50
      rec(kWorld, CollType::AllReduce, kBig, 0, 0, 40),         // plain: the incumbent is now 40
      rec(kWorld, CollType::AllReduce, kSmall, 0, 1, 9),        // plain, another size: no effect on 32 MiB
      rec(kWorld, CollType::AllReduce, kBig, 1, 0, 60, 0.9),    // probe: vs 40, whatever the noise
      rec(kWorld, CollType::AllReduce, kBig, 1, 0, 30, 1.2),    // probe: still vs 40, not vs the probe before
      rec(kWorld, CollType::AllReduce, kBig, 2, 0, 30),         // plain (the probe committed): incumbent 30
      rec(kWorld, CollType::AllReduce, kBig, 2, 0, 45),         // probe: vs 30
      rec(kWorld, CollType::AllReduce, kSmall, 2, 1, 9, 1.3),   // probe choosing its incumbent: ratio 1
  };
  const std::vector<char> explored = {1, 0, 0, 1, 1, 0, 1, 1};
  const ProbeCost pc = probeCostOf(colls, explored, m);
  EXPECT_EQ(pc.collectives, 5u);
  // Ratios: 120/50 = 2.4, 60/40 = 1.5, 30/40 = 0.75, 45/30 = 1.5, 1.0.
  EXPECT_DOUBLE_EQ(pc.ratioMax, 2.4);
  EXPECT_DOUBLE_EQ(pc.ratioP99, 2.4);  // nearest rank of 5 values: the 5th
  EXPECT_EQ(pc.steps, 3u);
}

TEST(ProbeCost, StepInflationReplaysTheStepWithTheProbesAtTheirIncumbents) {
  const ProbeCostModel m = model(2, {{0, 1}, {0, 1}}, {10, 10});
  const std::vector<CollRecord> colls = {
      // Step 0: no probe (not counted, however slow).
      rec(kWorld, CollType::AllReduce, kBig, 0, 0, 100),
      // Step 1: 20 (plain) + a probe 60 vs incumbent 20 + 5 plain of another size: 85 vs 45.
      rec(kWorld, CollType::AllReduce, kBig, 1, 0, 20),
      rec(kWorld, CollType::AllReduce, kBig, 1, 0, 60),
      rec(kWorld, CollType::AllReduce, kSmall, 1, 1, 5),
      // Step 2: a faster probe (15 vs 20) and rank 1 late by 100 µs at the first collective: 100 + 15 + 20
      // against 100 + 20 + 20.
      rec(kWorld, CollType::AllReduce, kBig, 2, 0, 15, 1.0, 1, 100.0),
      rec(kWorld, CollType::AllReduce, kBig, 2, 0, 20),
  };
  const std::vector<char> explored = {0, 0, 1, 0, 1, 0};
  const ProbeCost pc = probeCostOf(colls, explored, m);
  EXPECT_EQ(pc.collectives, 2u);
  EXPECT_EQ(pc.steps, 2u);
  EXPECT_DOUBLE_EQ(pc.stepInflationMax, 85.0 / 45.0);
  EXPECT_DOUBLE_EQ(pc.stepInflationP99, 85.0 / 45.0);
  EXPECT_DOUBLE_EQ(pc.ratioMax, 3.0);
}

TEST(ProbeCost, ConcurrentInstancesOverlapAndTheStepWaitsForTheSlowest) {
  // Two per-node instances on disjoint ranks, then a world collective over all four.
  const ProbeCostModel m = model(4, {{0, 1}, {2, 3}, {0, 1, 2, 3}}, {10, 10, 10});
  const std::vector<CollRecord> colls = {
      rec(kTp0, CollType::AllGather, kBig, 0, 0, 30),  // probe, incumbent 10 (NCCL's)
      rec(kTp1, CollType::AllGather, kBig, 0, 1, 25),  // plain, concurrent with it
      rec(kWorld, CollType::AllReduce, kBig, 0, 2, 10),
  };
  const ProbeCost pc = probeCostOf(colls, {1, 0, 0}, m);
  // As run: max(30, 25) + 10 = 40. Without the probe: max(10, 25) + 10 = 35. (Charging the excess of 20 µs
  // would have said 40/20.)
  EXPECT_DOUBLE_EQ(pc.stepInflationMax, 40.0 / 35.0);
  EXPECT_DOUBLE_EQ(pc.ratioMax, 3.0);
}

TEST(ProbeCost, NothingExploredGivesNothingAndTheReportSaysNull) {
  const ProbeCostModel m = model(2, {{0, 1}}, {10});
  const std::vector<CollRecord> colls = {rec(kWorld, CollType::AllReduce, kBig, 0, 0, 100)};
  const ProbeCost pc = probeCostOf(colls, {0}, m);
  EXPECT_EQ(pc.collectives, 0u);
  EXPECT_EQ(pc.steps, 0u);
  SimResult r;
  r.probeCost = pc;
  const auto j = reportJson(r)["probe_cost"];
  EXPECT_EQ(j["collectives"], 0);
  EXPECT_EQ(j["steps"], 0);
  for (const char* k : {"ratio_p99", "ratio_max", "step_inflation_p99", "step_inflation_max"})
    EXPECT_TRUE(j[k].is_null()) << k;
  EXPECT_THROW(probeCostOf(colls, {}, m), std::logic_error);
}

TEST(ProbeCost, ReportFieldsAndTable) {
  SimResult r;
  r.probeCost = ProbeCost{12, 3, 1.25, 1.5, 1.01, 1.02};
  const auto j = reportJson(r)["probe_cost"];
  EXPECT_EQ(j["collectives"], 12);
  EXPECT_EQ(j["steps"], 3);
  EXPECT_DOUBLE_EQ(j["ratio_p99"].get<double>(), 1.25);
  EXPECT_DOUBLE_EQ(j["ratio_max"].get<double>(), 1.5);
  EXPECT_DOUBLE_EQ(j["step_inflation_p99"].get<double>(), 1.01);
  EXPECT_DOUBLE_EQ(j["step_inflation_max"].get<double>(), 1.02);
  EXPECT_NE(reportTable(r).find("step inflation p99 1.010 max 1.020"), std::string::npos) << reportTable(r);
}

TEST(ProbeCost, NearestRankPercentile) {
  std::vector<double> v;
  for (int i = 100; i >= 1; --i) v.push_back(i);
  EXPECT_DOUBLE_EQ(nearestRank(v, 0.99), 99.0);
  EXPECT_DOUBLE_EQ(nearestRank(v, 1.0), 100.0);
  std::vector<double> ten = {5, 1, 9, 3, 7, 2, 8, 4, 6, 10};
  EXPECT_DOUBLE_EQ(nearestRank(ten, 0.99), 10.0);
  EXPECT_DOUBLE_EQ(nearestRank(ten, 0.5), 5.0);
  std::vector<double> none;
  EXPECT_DOUBLE_EQ(nearestRank(none, 0.99), 0.0);
}

}  // namespace
}  // namespace wirewise::sim
