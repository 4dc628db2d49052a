// The exploration accounting and the log reader, on hand-written adaptation logs.
#include <cctype>
#include <cstdio>
#include <sstream>

#include <gtest/gtest.h>

#include "common/units.h"
#include "sim/driver/driver.h"
#include "sim/driver/exploration.h"

namespace wirewise::sim {
namespace {

constexpr uint64_t kMiB = 1024 * 1024;

// A coordinator table event for [boundary, next) probing allreduce 24..28 MiB (and what else is given).
std::string probeTable(uint64_t comm, uint64_t boundary, const std::string& next,
                       const std::string& extraProbe = "") {
  return R"({"v":1,"pid":7,"event":"table","source":"coordinator","comm":")" + hexId(comm) +
         R"(","index":3,"boundary":)" + std::to_string(boundary) + R"(,"next":)" + next +
         R"(,"probe":true,"probes":[{"coll":"allreduce","min_bytes":25165824,"max_bytes":29360127,"algo":"tree",)"
         R"("proto":"simple","channels":8})" +
         extraProbe + R"(],"reason":"probe","digest":"0","ranges":[]})";
}

TEST(Exploration, CountsCollectivesInsideAProbeWindowAndRange) {
  const uint64_t world = commIdFor("world", 0), tp = commIdFor("tp", 0);
  const std::vector<std::string> log = {probeTable(world, 64, "72")};
  const uint64_t in = 26 * kMiB;
  const std::vector<CollRecord> colls = {
      {world, 63, CollType::AllReduce, in, 1.0},          // before the boundary
      {world, 64, CollType::AllReduce, in, 10.0},         // first probed collective
      {world, 71, CollType::AllReduce, in, 100.0},        // last one before next
      {world, 72, CollType::AllReduce, in, 1000.0},       // next: not probed
      {world, 65, CollType::AllGather, in, 2.0},          // other collective
      {world, 66, CollType::AllReduce, 28 * kMiB, 4.0},   // size outside the range
      {world, 67, CollType::AllReduce, 29360127, 20.0},   // max_bytes is inclusive
      {world, 68, CollType::AllReduce, 25165824, 40.0},   // min_bytes too
      {tp, 64, CollType::AllReduce, in, 3.0},             // other communicator
  };
  const Exploration e = explorationFromLines(log, colls);
  EXPECT_DOUBLE_EQ(e.us, 10.0 + 100.0 + 20.0 + 40.0);
  EXPECT_EQ(e.collectives, 4u);
}

TEST(Exploration, OpenEndedWindowAndSeveralRanges) {
  const uint64_t world = commIdFor("world", 0);
  const std::string gather = R"(,{"coll":"allgather","min_bytes":0,"max_bytes":18446744073709551615,"algo":"ring",)"
                             R"("proto":"ll","channels":0})";
  const std::vector<std::string> log = {probeTable(world, 100, "null", gather)};
  const std::vector<CollRecord> colls = {
      {world, 99, CollType::AllGather, 4096, 1.0},
      {world, 100, CollType::AllGather, 4096, 2.0},
      {world, 100000, CollType::AllGather, 1ull << 40, 4.0},
      {world, 100001, CollType::AllReduce, 26 * kMiB, 8.0},
      {world, 100002, CollType::ReduceScatter, 26 * kMiB, 16.0},
  };
  const Exploration e = explorationFromLines(log, colls);
  EXPECT_DOUBLE_EQ(e.us, 2.0 + 4.0 + 8.0);
  EXPECT_EQ(e.collectives, 3u);
}

TEST(Exploration, EachCollectiveCountsOnceAndOnlyProbeVerdictsCount) {
  const uint64_t world = commIdFor("world", 0);
  std::string upper = probeTable(world, 8, "16");
  for (size_t p = upper.find("0x"); p < upper.size() && upper[p] != '"'; ++p)
    upper[p] = static_cast<char>(std::toupper(static_cast<unsigned char>(upper[p])));
  const std::vector<std::string> log = {
      probeTable(world, 8, "16"),
      probeTable(world, 8, "16"),  // the same verdict twice (e.g. written again): no double count
      upper,                       // and once more with the id in upper case
      // Tables without probes, and a per-rank table: not exploration.
      R"({"pid":7,"event":"table","source":"coordinator","comm":")" + hexId(world) +
          R"(","index":4,"boundary":16,"next":24,"probe":false,"ranges":[{"coll":"allreduce","min_bytes":0,)"
          R"("max_bytes":18446744073709551615,"algo":"ring","proto":"simple","channels":4}]})",
      R"({"pid":7,"event":"table","source":"coordinator","comm":")" + hexId(world) +
          R"(","index":5,"boundary":24,"next":32,"probe":true,"probes":[],"ranges":[]})",
      R"({"pid":7,"event":"table","source":"builtin","comm":")" + hexId(world) +
          R"(","seq":0,"probes":[{"coll":"allreduce","min_bytes":0,"max_bytes":100000000}],"ranges":[]})",
  };
  std::vector<CollRecord> colls;
  for (uint64_t s = 0; s < 40; ++s) colls.push_back({world, s, CollType::AllReduce, 26 * kMiB, 1.0});
  const Exploration e = explorationFromLines(log, colls);
  EXPECT_EQ(e.collectives, 8u);
  EXPECT_DOUBLE_EQ(e.us, 8.0);
}

TEST(Exploration, RecordsNeedNotBeInSeqOrder) {
  const uint64_t a = commIdFor("tp", 0), b = commIdFor("tp", 1);
  const std::vector<std::string> log = {probeTable(a, 10, "12"), probeTable(b, 0, "1")};
  const uint64_t in = 26 * kMiB;
  const std::vector<CollRecord> colls = {{a, 11, CollType::AllReduce, in, 1.0}, {b, 0, CollType::AllReduce, in, 2.0},
                                         {a, 10, CollType::AllReduce, in, 4.0}, {a, 12, CollType::AllReduce, in, 8.0},
                                         {b, 1, CollType::AllReduce, in, 16.0}};
  EXPECT_DOUBLE_EQ(explorationFromLines(log, colls).us, 7.0);
}

TEST(PluginLogReader, SettingsAdaptCountsDropsAndWriters) {
  const uint64_t world = commIdFor("world", 0);
  std::stringstream in;
  in << R"({"v":1,"pid":7,"event":"plugin_start",)"
     << R"("settings":{"WIREWISE_SYNC":"deterministic","WIREWISE_POLICY":"static"}})"
     << "\n"
     << R"({"pid":7,"event":"adapt","comm":")" << hexId(world) << R"(","index":3,"kind":"calibrated"})" << "\n"
     << R"({"pid":7,"event":"adapt","comm":")" << hexId(world) << R"(","index":9,"kind":"alarm","reason":"x"})" << "\n"
     << R"({"pid":7, "event": "adapt", "comm":")" << hexId(world) << R"(", "index":12, "kind":"commit"})" << "\n"
     << R"({"pid":8,"event":"adapt","comm":")" << hexId(world) << R"(","index":13,"kind":"revert"})" << "\n"
     << R"({"pid":8,"event":"plugin_start","settings":{"WIREWISE_SYNC":"off","WIREWISE_POLICY":"x"}})" << "\n"
     << R"({"pid":7,"event":"log_dropped","count":5})" << "\n"
     << R"x({"pid":7,"event":"verdict","reason":"adaptive: 1 probe(s)","comm":"0x1"})x" << "\n"
     << R"({"pid":7,"event":"adapt","comm":)" << "\n";  // truncated line
  const PluginLog log = readPluginLog(in, 7);
  ASSERT_TRUE(log.sync && log.policy);
  EXPECT_EQ(*log.sync, "deterministic");
  EXPECT_EQ(*log.policy, "static");
  ASSERT_EQ(log.adapts.size(), 3u);
  EXPECT_EQ(log.adapts[0].comm, world);
  EXPECT_EQ(log.adapts[0].index, 3);
  EXPECT_EQ(log.adapts[2].kind, "commit");
  EXPECT_EQ(log.linesDropped, 5u);
  EXPECT_EQ(log.badLines, 1u);
  const auto counts = adaptCounts(log);
  for (const char* k : {"calibrated", "alarm", "commit", "recover", "revert", "hold"})
    EXPECT_EQ(counts.count(k), 1u) << k;
  EXPECT_EQ(counts.at("calibrated"), 1u);
  EXPECT_EQ(counts.at("alarm"), 1u);
  EXPECT_EQ(counts.at("commit"), 1u);
  EXPECT_EQ(counts.at("revert"), 0u);  // pid 8's
  in.clear();
  in.seekg(0);
  EXPECT_EQ(readPluginLog(in, 0).adapts.size(), 4u);
}

TEST(Report, ExplorationShareAndFields) {
  SimResult r;
  r.modes[3].commTimeUs = 2000;
  r.explorationUs = 30;
  r.explorationCollectives = 3;
  r.explorationRankShare = 0.0125;
  r.adaptations = {{"commit", 2}, {"alarm", 1}};
  EXPECT_DOUBLE_EQ(explorationShare(r), 0.0125);
  const auto j = reportJson(r);
  EXPECT_DOUBLE_EQ(j["exploration_time_us"].get<double>(), 30.0);
  EXPECT_DOUBLE_EQ(j["exploration_share"].get<double>(), 0.0125);
  EXPECT_DOUBLE_EQ(j["exploration_over_comm_time"].get<double>(), 0.015);
  EXPECT_EQ(j["adaptations"]["commit"], 2);
  EXPECT_NE(reportTable(r).find("exploration: 1.25%"), std::string::npos) << reportTable(r);
  r.modes[3].commTimeUs = 0;
  EXPECT_EQ(reportJson(r)["exploration_over_comm_time"].get<double>(), 0.0);
}

// Two per-node instances probe at once, each on its own ranks: each rank spent a quarter of its collective
// time exploring, not half (the summed spans against one clock would say half).
TEST(Exploration, ShareIsPerRankSoConcurrentInstancesDoNotAddUp) {
  const std::vector<std::vector<int>> slotRanks = {{0, 1}, {2, 3}, {0, 1, 2, 3}};
  std::vector<CollRecord> colls;
  auto add = [&](int slot, double us) {
    CollRecord c;
    c.slot = slot;
    c.us = us;
    colls.push_back(c);
  };
  add(0, 10), add(0, 10), add(1, 10), add(1, 10), add(2, 20);
  const std::vector<char> explored = {1, 0, 1, 0, 0};
  EXPECT_DOUBLE_EQ(rankExplorationShare(colls, explored, slotRanks, 4), 10.0 / 40.0);
  // Only node 1's instance probes: its ranks' share is the worst, node 0's is 0.
  EXPECT_DOUBLE_EQ(rankExplorationShare(colls, {0, 0, 1, 1, 0}, slotRanks, 4), 20.0 / 40.0);
  // The world instance's probe is every rank's.
  EXPECT_DOUBLE_EQ(rankExplorationShare(colls, {0, 0, 0, 0, 1}, slotRanks, 4), 20.0 / 40.0);
  EXPECT_EQ(rankExplorationShare({}, {}, slotRanks, 4), 0.0);
}

}  // namespace
}  // namespace wirewise::sim
