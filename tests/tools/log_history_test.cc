// The coordinator's side of `wirewise log summarize`: committed tables as they changed, crossover moves,
// channel changes, exploration and adapt counts; through the library and through the built binary.
#include <gtest/gtest.h>

#include <algorithm>
#include <fstream>
#include <nlohmann/json.hpp>

#include "tests/tools/cli_runner.h"
#include "tools/log_history.h"
#include "tools/log_summary.h"

namespace wirewise::tools {
namespace {

using testing::runCli;
const std::string kData = WW_TOOLS_DATA;
const std::string kLog = kData + "/coordinator.jsonl";
constexpr uint64_t kKiB = 1024, kMiB = 1024 * 1024;

LogSummary read(const std::string& path, int times = 1) {
  LogSummary s;
  for (int i = 0; i < times; ++i) {
    std::ifstream in(path);
    addLog(in, &s);
  }
  return s;
}

const CommSummary& comm(const LogSummary& s, const std::string& id) {
  for (const auto& c : s.comms)
    if (c.id == id) return c;
  ADD_FAILURE() << "no comm " << id;
  return s.comms.front();
}

const TableChange& at(const std::vector<TableChange>& h, uint64_t index) {
  for (const auto& t : h)
    if (t.table.index == index) return t;
  ADD_FAILURE() << "no committed change at index " << index;
  return h.front();
}

const Crossover* find(const std::vector<Crossover>& xs, const std::string& coll, const std::string& below,
                      const std::string& above) {
  for (const auto& x : xs)
    if (x.coll == coll && x.below == below && x.above == above) return &x;
  return nullptr;
}

TEST(LogHistory, CommittedTablesChangeOnlyAtCommitsNotAtProbes) {
  LogSummary s = read(kLog);
  ASSERT_EQ(s.malformed, 0u);
  const CommSummary& c = comm(s, "0x00000000000000ab");
  EXPECT_EQ(c.coordTables.size(), 10u);
  // Coordinator tables are not mixed into the per-rank table list.
  ASSERT_EQ(c.tables.size(), 1u);
  EXPECT_EQ(c.tables[0].reason, "init");
  auto h = committedHistory(c);
  std::vector<uint64_t> indices;
  for (const auto& t : h) indices.push_back(t.table.index);
  EXPECT_EQ(indices, (std::vector<uint64_t>{5, 12, 23, 30}));
  // The last table in the log probes 8-10 MiB with tree/simple/16; its committed view keeps ring/simple/16.
  auto all = committedTables(c);
  ASSERT_EQ(all.back().index, 31u);
  EXPECT_TRUE(all.back().probe);
  auto pieces = cover(all.back().ranges, "allreduce", 8 * kMiB, 10 * kMiB - 1);
  ASSERT_EQ(pieces.size(), 1u);
  EXPECT_EQ(decisionKey(pieces[0]), "ring/simple/16");
}

TEST(LogHistory, CrossoversMoveAndChannelsChangeBetweenCommittedTables) {
  LogSummary s = read(kLog);
  auto h = committedHistory(comm(s, "0x00000000000000ab"));
  ASSERT_EQ(h.size(), 4u);

  const TableChange& first = at(h, 5);
  EXPECT_EQ(first.colls, (std::vector<std::string>{"allreduce"}));
  const Crossover* x = find(first.crossovers, "allreduce", "ring/ll128", "ring/simple");
  ASSERT_NE(x, nullptr);
  EXPECT_EQ(x->change, Crossover::Change::Appeared);
  EXPECT_EQ(x->newAt, 4 * kMiB);
  EXPECT_TRUE(first.channels.empty());

  const TableChange& t12 = at(h, 12);
  EXPECT_EQ(t12.colls, (std::vector<std::string>{"allreduce", "allgather"}));
  x = find(t12.crossovers, "allreduce", "ring/ll128", "ring/simple");
  ASSERT_NE(x, nullptr);
  EXPECT_EQ(x->change, Crossover::Change::Moved);
  EXPECT_EQ(x->oldAt, 4 * kMiB);
  EXPECT_EQ(x->newAt, 1 * kMiB);
  EXPECT_EQ(crossoverText(*x, t12.table),
            "allreduce: ring/ll128 -> ring/simple crossover moved from 4 MiB to 1 MiB (index 12, collective 3840)");
  x = find(t12.crossovers, "allreduce", "nccl", "ring/ll128");
  ASSERT_NE(x, nullptr);
  EXPECT_EQ(x->change, Crossover::Change::Moved);
  EXPECT_EQ(x->oldAt, 1 * kMiB);
  EXPECT_EQ(x->newAt, 512 * kKiB);
  x = find(t12.crossovers, "allgather", "ring/simple", "nccl");
  ASSERT_NE(x, nullptr);
  EXPECT_EQ(x->change, Crossover::Change::Appeared);
  EXPECT_EQ(x->newAt, 8 * kMiB);
  // 16-32 MiB stayed ring/simple: a channel change, not a crossover.
  ASSERT_EQ(t12.channels.size(), 1u);
  EXPECT_EQ(t12.channels[0].coll, "allreduce");
  EXPECT_EQ(t12.channels[0].from, 16);
  EXPECT_EQ(t12.channels[0].to, 11);
  EXPECT_EQ(t12.channels[0].minBytes, 16 * kMiB);
  EXPECT_EQ(t12.channels[0].maxBytes, 32 * kMiB - 1);
  EXPECT_EQ(channelText(t12.channels[0]), "channels 16 -> 11 on allreduce 16-32 MiB");
  EXPECT_EQ(t12.crossovers.size(), 4u);

  const TableChange& t23 = at(h, 23);
  ASSERT_EQ(t23.crossovers.size(), 2u);
  EXPECT_EQ(t23.crossovers[0].below, "ring/simple");
  EXPECT_EQ(t23.crossovers[0].above, "tree/simple");
  EXPECT_EQ(t23.crossovers[0].newAt, 24 * kMiB);
  EXPECT_EQ(t23.crossovers[1].below, "tree/simple");
  EXPECT_EQ(t23.crossovers[1].newAt, 28 * kMiB);
  EXPECT_TRUE(t23.channels.empty());

  const TableChange& t30 = at(h, 30);
  EXPECT_EQ(t30.colls, (std::vector<std::string>{"allgather"}));
  ASSERT_EQ(t30.crossovers.size(), 2u);
  EXPECT_EQ(t30.crossovers[0].change, Crossover::Change::Gone);
  EXPECT_EQ(t30.crossovers[0].oldAt, 4 * kMiB);
  EXPECT_EQ(crossoverText(t30.crossovers[1], t30.table),
            "allgather: ring/simple -> nccl crossover at 8 MiB went away (index 30, collective 9600)");
}

TEST(LogHistory, ExplorationAndAdaptCounts) {
  LogSummary s = read(kLog);
  const CommSummary& c = comm(s, "0x00000000000000ab");
  Exploration e = explorationOf(c);
  EXPECT_EQ(e.verdicts, 6u);
  EXPECT_EQ(e.probes, 6u);
  EXPECT_EQ(e.firstIndex, 3u);
  EXPECT_EQ(e.lastIndex, 31u);
  ASSERT_EQ(e.ranges.size(), 2u);
  EXPECT_EQ(e.ranges[0].minBytes, 8 * kMiB);
  EXPECT_EQ(e.ranges[0].count, 1u);
  EXPECT_EQ(e.ranges[1].minBytes, 24 * kMiB);
  EXPECT_EQ(e.ranges[1].count, 5u);
  EXPECT_EQ(e.ranges[1].decisions, (std::vector<std::string>{"ring/simple/16", "tree/simple/16", "tree/simple/11",
                                                             "tree/simple/8", "nvls_tree/simple/16"}));
  auto n = adaptCounts(c);
  EXPECT_EQ(n, (std::vector<std::pair<std::string, uint64_t>>{
                   {"calibrated", 2}, {"alarm", 4}, {"commit", 2}, {"revert", 1}}));
}

TEST(LogHistory, TheSameLogTwiceAddsNothing) {
  LogSummary once = read(kLog), twice = read(kLog, 2);
  const CommSummary &a = comm(once, "0x00000000000000ab"), &b = comm(twice, "0x00000000000000ab");
  EXPECT_EQ(b.adapts.size(), a.adapts.size());
  EXPECT_EQ(b.coordTables.size(), a.coordTables.size());
  EXPECT_EQ(committedHistory(b).size(), committedHistory(a).size());
}

TEST(LogHistory, ACommitInAProbeVerdictCountsAtThatVerdict) {
  // Verdict 2 commits 1-2 MiB to 16 channels while it probes 4-5 MiB: the commit shows at index 2, the probe
  // nowhere. A probe table that does not list its probes cannot be undone and is skipped.
  LogSummary s = read(kData + "/probe_verdict_commit.jsonl");
  ASSERT_EQ(s.malformed, 0u);
  const CommSummary& c = s.comms.at(0);
  EXPECT_FALSE(c.coordTables.at(3).next.has_value());
  auto h = committedHistory(c);
  ASSERT_EQ(h.size(), 2u);
  EXPECT_EQ(h[1].table.index, 2u);
  ASSERT_EQ(h[1].table.ranges.size(), 1u);
  EXPECT_EQ(decisionKey(h[1].table.ranges[0]), "ring/simple/16");
  EXPECT_TRUE(h[1].crossovers.empty());
  ASSERT_EQ(h[1].channels.size(), 1u);
  EXPECT_EQ(channelText(h[1].channels[0]), "channels 8 -> 16 on allreduce 1-2 MiB");
  EXPECT_EQ(committedTables(c).size(), 2u);
}

TEST(LogHistory, CrossoversPairEdgesInSizeOrder) {
  auto r = [](uint64_t lo, uint64_t hi, const char* algo, int64_t ch) {
    return LogRange{"allreduce", algo, "simple", lo, hi, ch};
  };
  // A tree island inside ring grows on both sides; a channel change on ring alone is no crossover.
  std::vector<LogRange> before = {r(0, 24 * kMiB - 1, "ring", 16), r(24 * kMiB, 28 * kMiB - 1, "tree", 8),
                                  r(28 * kMiB, UINT64_MAX, "ring", 16)};
  std::vector<LogRange> after = {r(0, 20 * kMiB - 1, "ring", 12), r(20 * kMiB, 32 * kMiB - 1, "tree", 8),
                                 r(32 * kMiB, UINT64_MAX, "ring", 16)};
  auto x = crossovers(before, after);
  ASSERT_EQ(x.size(), 2u);
  EXPECT_EQ(x[0].below, "ring/simple");
  EXPECT_EQ(x[0].oldAt, 24 * kMiB);
  EXPECT_EQ(x[0].newAt, 20 * kMiB);
  EXPECT_EQ(x[1].below, "tree/simple");
  EXPECT_EQ(x[1].oldAt, 28 * kMiB);
  EXPECT_EQ(x[1].newAt, 32 * kMiB);
  auto ch = channelChanges(before, after);
  ASSERT_EQ(ch.size(), 1u);
  EXPECT_EQ(ch[0].minBytes, 0u);
  EXPECT_EQ(ch[0].maxBytes, 20 * kMiB - 1);
  EXPECT_EQ(channelText(ch[0]), "channels 16 -> 12 on allreduce 0 B-20 MiB");
  EXPECT_TRUE(crossovers(after, after).empty());
}

TEST(LogHistory, CoverFillsGapsWithNcclsChoice) {
  std::vector<LogRange> t = {{"allreduce", "ring", "ll128", 1024, 2047, 0}, {"allgather", "ring", "ll", 0, 99, 0}};
  auto c = cover(t, "allreduce", 0, UINT64_MAX);
  ASSERT_EQ(c.size(), 3u);
  EXPECT_EQ(decisionKey(c[0]), "nccl");
  EXPECT_EQ(c[0].maxBytes, 1023u);
  EXPECT_EQ(decisionKey(c[1]), "ring/ll128/0");
  EXPECT_EQ(c[2].minBytes, 2048u);
  EXPECT_EQ(c[2].maxBytes, UINT64_MAX);
  EXPECT_EQ(sizeSpan(16 * kMiB, 32 * kMiB - 1), "16-32 MiB");
  EXPECT_EQ(sizeSpan(0, 64 * kKiB - 1), "0 B-64 KiB");
  EXPECT_EQ(sizeSpan(4 * kMiB, UINT64_MAX), "4 MiB and up");
  EXPECT_EQ(crossoverLabel({"allreduce", "any", "any", 0, 1, 4}), "nccl");
}

TEST(LogSummarizeCoordinatorCli, TextShowsCommittedChangesExplorationAndAdaptKinds) {
  auto r = runCli("log summarize " + kLog);
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_EQ(r.err, "");
  const std::string& o = r.out;
  EXPECT_NE(o.find("26 lines: 26 events, 0 malformed, 0 of unknown type"), std::string::npos) << o;
  EXPECT_NE(o.find("verdict index 12, collective 3840: adaptive"), std::string::npos) << o;
  EXPECT_NE(o.find("allreduce: ring/ll128 -> ring/simple crossover moved from 4 MiB to 1 MiB (index 12, collective "
                   "3840)"),
            std::string::npos)
      << o;
  EXPECT_NE(o.find("channels 16 -> 11 on allreduce 16-32 MiB"), std::string::npos) << o;
  EXPECT_NE(o.find("allreduce      24-28 MiB            tree/simple ch=11"), std::string::npos) << o;
  EXPECT_NE(o.find("allgather      NCCL's own choice at every size"), std::string::npos) << o;
  EXPECT_NE(o.find("explore 6 probe verdicts (index 3 to 31), 6 probes"), std::string::npos) << o;
  EXPECT_NE(o.find("adapt   9 events: 2 calibrated, 4 alarm, 2 commit, 1 revert"), std::string::npos) << o;
  // Probe verdicts are not committed tables.
  EXPECT_EQ(o.find("verdict index 20"), std::string::npos) << o;
  EXPECT_EQ(o.find("verdict index 31"), std::string::npos) << o;
  // The other communicator has no coordinator: no coordinator lines.
  EXPECT_EQ(o.substr(o.find("communicator 0x00000000000000cd")).find("explore"), std::string::npos) << o;
}

TEST(LogSummarizeCoordinatorCli, JsonCarriesTheSameData) {
  auto r = runCli("log summarize --json " + kLog);
  ASSERT_EQ(r.status, 0) << r.err;
  auto j = nlohmann::json::parse(r.out);
  const auto& co = j["comms"][0]["coordinator"];
  EXPECT_EQ(co["tables"], 10);
  ASSERT_EQ(co["committed"].size(), 4u);
  const auto& t12 = co["committed"][1];
  EXPECT_EQ(t12["index"], 12);
  EXPECT_EQ(t12["boundary"], 3840);
  EXPECT_EQ(t12["next"], 4160);
  EXPECT_EQ(t12["changed_colls"], nlohmann::json({"allreduce", "allgather"}));
  bool moved = false;
  for (const auto& x : t12["crossovers"])
    if (x["below"] == "ring/ll128" && x["above"] == "ring/simple") {
      moved = true;
      EXPECT_EQ(x["change"], "moved");
      EXPECT_EQ(x["old_bytes"], 4194304);
      EXPECT_EQ(x["new_bytes"], 1048576);
    }
  EXPECT_TRUE(moved);
  ASSERT_EQ(t12["channel_changes"].size(), 1u);
  EXPECT_EQ(t12["channel_changes"][0]["from"], 16);
  EXPECT_EQ(t12["channel_changes"][0]["to"], 11);
  EXPECT_EQ(t12["channel_changes"][0]["min_bytes"], 16777216);
  const auto& texts = t12["changes"];
  EXPECT_NE(std::find(texts.begin(), texts.end(), "channels 16 -> 11 on allreduce 16-32 MiB"), texts.end());
  EXPECT_EQ(co["committed"][3]["crossovers"][0]["new_bytes"], nullptr);
  EXPECT_EQ(co["probe_verdicts"], 6);
  EXPECT_EQ(co["probes"], 6);
  EXPECT_EQ(co["first_probe_index"], 3);
  EXPECT_EQ(co["probed"][1]["count"], 5);
  EXPECT_EQ(co["adapt_events"], 9);
  EXPECT_EQ(co["adapt"]["alarm"], 4);
  EXPECT_EQ(co["adapt"]["revert"], 1);
  EXPECT_EQ(j["comms"][1]["coordinator"]["committed"].size(), 0u);
  EXPECT_EQ(j["comms"][1]["coordinator"]["first_probe_index"], nullptr);
}

}  // namespace
}  // namespace wirewise::tools
