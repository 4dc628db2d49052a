// `log summarize`'s estimate of the time saved against NCCL's own choices, from log lines as the writers
// build them (common/log_events.h).
#include "tools/log_savings.h"

#include <gtest/gtest.h>

#include <optional>
#include <sstream>
#include <string>
#include <vector>

#include "common/log_events.h"

namespace wirewise::tools {
namespace {

constexpr const char* kComm = "0x00000000000000aa";

logev::SummaryRow row(const char* algo, const char* proto, uint64_t count, double p50, uint64_t minBytes = 65536) {
  logev::SummaryRow r;
  r.coll = "allreduce", r.algo = algo, r.proto = proto, r.channels = 16;
  r.bucket = 16, r.minBytes = minBytes, r.maxBytes = minBytes + 1000, r.count = count, r.p50Us = p50;
  return r;
}

std::string line(const nlohmann::json& j, int pid, int second) {
  nlohmann::json x = j;
  x["v"] = 1, x["pid"] = pid, x["ts"] = "2026-01-01T00:00:0" + std::to_string(second) + ".000Z";
  return x.dump() + "\n";
}

struct Interval {
  int second;
  std::vector<logev::SummaryRow> rows;
};

// Each its own verdict index: the reader keeps one event per (index, kind, range).
logev::Adapt change(const char* kind, const char* from, const char* to, std::optional<double> before,
                    std::optional<double> after) {
  static uint64_t index = 0;
  logev::Adapt a;
  a.index = ++index;
  a.comm = kComm, a.kind = kind, a.coll = "allreduce", a.minBytes = 32769, a.maxBytes = 1 << 20;
  a.from = from, a.to = to, a.fromNccl = "ring/ll/16", a.beforeUs = before, a.afterUs = after;
  return a;
}

// Two ranks (one process each) reporting the same intervals; the adapt events at their seconds.
LogSummary logOf(const std::vector<Interval>& intervals, const std::vector<std::pair<int, logev::Adapt>>& adapts = {}) {
  std::string text;
  for (int rank = 0; rank < 2; ++rank) {
    logev::CommInit init;
    init.comm = kComm, init.face = "profiler", init.abi = "profiler_v5", init.nRanks = 2, init.nNodes = 1;
    init.rank = rank;
    text += line(init, 100 + rank, 0);
    for (const Interval& i : intervals) {
      logev::Summary s;
      s.comm = kComm, s.rank = rank, s.intervalMs = 1000, s.rows = i.rows;
      text += line(s, 100 + rank, i.second);
    }
  }
  for (const auto& [second, a] : adapts) text += line(a, 100, second);
  LogSummary s;
  std::istringstream in(text);
  addLog(in, &s);
  return s;
}

TEST(LogSavings, CommittedCallsCountTheMeasuredGainAndProbesTheirDifferenceToTheIncumbent) {
  // Second 1: NCCL's ring/ll, 100 calls at 50 us, and a probe of tree/ll, 5 at 40 us (+50 us).
  // Second 2 (commit at 1.5 s, measured 50 -> 40 us): tree/ll 400 at 40 us (+4000 us) and a probe of
  // ring/simple, 10 at 80 us, against NCCL's 40 + 10 = 50 us (-300 us). Both ranks alike: 3750 us per rank.
  const auto s = logOf({{1, {row("ring", "ll", 100, 50), row("tree", "ll", 5, 40)}},
                        {2, {row("tree", "ll", 400, 40), row("ring", "simple", 10, 80)}}},
                       {{1, change("commit", "ring/ll/16", "tree/ll/16", 50, 40)}});
  ASSERT_EQ(s.comms.size(), 1u);
  const SavingsEstimate e = estimateSavings(s.comms[0]);
  EXPECT_EQ(e.ranks, 2);
  EXPECT_EQ(e.bucketsEstimated, 1u);
  EXPECT_EQ(e.bucketsUnknown, 0u);
  EXPECT_NEAR(e.savedUs, 3750, 1e-6);
  EXPECT_NEAR(e.runUs, 100 * 50 + 5 * 40 + 400 * 40 + 10 * 80, 1e-6);
  const std::string t = savingsText(e);
  EXPECT_NE(t.find("saved 3.8 ms per rank"), std::string::npos) << t;
  // NCCL's choices would have taken 22 ms + 3.75 ms = 25.75 ms: 3.75 / 25.75 = 14.6%.
  EXPECT_NE(t.find("(15% of the 25.8 ms NCCL's choices would have taken in the 1 size buckets"), std::string::npos)
      << t;
}

// The case that a comparison with NCCL's choice as first measured gets wrong: a link degrades after the
// commit and every choice gets slower. The policy's own before/after, measured together, still say what
// the commit gains.
TEST(LogSavings, ALaterSlowdownOfEveryChoiceIsNotReadAsACost) {
  const auto s = logOf({{1, {row("ring", "ll", 100, 50)}}, {3, {row("tree", "ll", 100, 90)}}},
                       {{2, change("commit", "ring/ll/16", "tree/ll/16", 120, 90)}});
  EXPECT_NEAR(estimateSavings(s.comms[0]).savedUs, 100 * 30, 1e-6);
}

TEST(LogSavings, ChainedCommitsAddAndARevertToNcclEndsTheGain) {
  const auto s = logOf({{2, {row("tree", "ll", 10, 40)}},
                        {4, {row("tree", "simple", 10, 30)}},
                        {6, {row("ring", "ll", 10, 50)}}},
                       {{1, change("commit", "ring/ll/16", "tree/ll/16", 50, 40)},
                        {3, change("commit", "tree/ll/16", "tree/simple/16", 40, 30)},
                        {5, change("revert", "tree/simple/16", "nccl", 30, 50)}});
  // 10 x 10 + 10 x 20 + 0.
  EXPECT_NEAR(estimateSavings(s.comms[0]).savedUs, 300, 1e-6);
}

TEST(LogSavings, ASlowerCommitIsACost) {
  const auto s = logOf({{2, {row("tree", "ll", 100, 60)}}}, {{1, change("commit", "ring/ll/16", "tree/ll/16", 50, 60)}});
  const SavingsEstimate e = estimateSavings(s.comms[0]);
  EXPECT_NEAR(e.savedUs, -1000, 1e-6);
  EXPECT_NE(savingsText(e).find("cost 1.0 ms per rank"), std::string::npos) << savingsText(e);
}

TEST(LogSavings, AChangeWithoutMeasurementsIsUnknownNotGuessed) {
  const auto s = logOf({{2, {row("tree", "ll", 100, 40)}}},
                       {{1, change("commit", "ring/ll/16", "tree/ll/16", std::nullopt, 40)}});
  const SavingsEstimate e = estimateSavings(s.comms[0]);
  EXPECT_EQ(e.bucketsEstimated, 0u);
  EXPECT_EQ(e.bucketsUnknown, 1u);
  EXPECT_NE(savingsText(e).find("not estimated (1 size buckets"), std::string::npos) << savingsText(e);
}

TEST(LogSavings, NcclsChoiceAloneSavedNothingAndSaysNothing) {
  const auto s = logOf({{1, {row("ring", "ll", 100, 50)}}, {2, {row("ring", "ll", 100, 55)}}});
  const SavingsEstimate e = estimateSavings(s.comms[0]);
  EXPECT_EQ(e.bucketsEstimated + e.bucketsUnknown, 0u);
  EXPECT_EQ(savingsText(e), "");
}

TEST(LogSavings, AnAdaptEventOfAnotherRangeDoesNotApply) {
  // The bucket's smallest message (4 MiB) lies outside the event's range [32769, 1 MiB].
  const auto s = logOf({{2, {row("tree", "ll", 100, 40, 4 << 20)}}},
                       {{1, change("commit", "ring/ll/16", "tree/ll/16", 50, 40)}});
  EXPECT_EQ(estimateSavings(s.comms[0]).bucketsEstimated, 0u);
}

}  // namespace
}  // namespace wirewise::tools
