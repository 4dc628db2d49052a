// `wirewise log summarize` and `log explain` on a log made by the real writers: the adaptive policy
// (adaptive/comm_policy) deciding on a small simulated cluster through a link fault, and the per-rank
// events built from the typed structs (common/log_events.h) as the runtime fills them. A change to a
// writer's keys that the readers do not follow fails here, not in a frozen fixture.
#include <gtest/gtest.h>

#include <unistd.h>

#include <cmath>
#include <cstdio>
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include "adaptive/buckets.h"
#include "adaptive/comm_policy.h"
#include "adaptive/table_json.h"
#include "common/log_events.h"
#include "common/units.h"
#include "tests/tools/cli_runner.h"
#include "tools/log_explain.h"
#include "tools/log_summary.h"

namespace wirewise::tools {
namespace {

using nlohmann::json;

constexpr uint64_t kCommId = 0xc0ffee;
constexpr uint64_t kMiB = uint64_t{1} << 20;
constexpr uint64_t kSpacing = 64;
constexpr uint64_t kLag = 2;  // verdict k's collectives reach the policy at verdict k + 2
constexpr uint64_t kFaultAt = 70, kVerdicts = 190;
constexpr int kAR = static_cast<int>(CollType::AllReduce);
constexpr int64_t kPid = 4242;

adapt::Choice ch(int algo, int proto, int n) {
  return {static_cast<int8_t>(algo), static_cast<int8_t>(proto), static_cast<uint8_t>(n)};
}

// NCCL runs ring/LL128/16 on 1 MiB. Healthy, ring/simple/12 is best; from kFaultAt a link that ring/simple
// crosses degrades (x1.6) and tree/simple/12 is best.
double truthUs(uint64_t v, adapt::Choice c) {
  double base = 150, fault = 1.3;
  if (c.algo == kAlgoRing && c.proto == kProtoLL128) base = 125;
  if (c.algo == kAlgoRing && c.proto == kProtoSimple) base = 100, fault = 1.6;
  if (c.algo == kAlgoTree && c.proto == kProtoSimple) base = 105, fault = 1.05;
  if (c.algo == kAlgoTree && c.proto == kProtoLL128) base = 140;
  const double t = base * (1 + 0.02 * std::abs(static_cast<int>(c.nChannels) - 12));
  return v >= kFaultAt ? t * fault : t;
}

double noise(uint64_t g) {  // deterministic, within +-1%
  uint64_t x = g * 0x9e3779b97f4a7c15ULL;
  x = (x ^ (x >> 31)) * 0xbf58476d1ce4e5b9ULL;
  return (static_cast<double>((x >> 11) & 0xffff) / 65535.0 - 0.5) * 0.02;
}

adapt::Sight sightOf() {
  adapt::Sight s;
  s.coll = kAR;
  s.bucket = static_cast<uint8_t>(SizeBuckets::index(kMiB));
  s.bytes = kMiB;
  for (auto& row : s.cost)
    for (float& c : row) c = -1.0f;
  s.cost[kAlgoRing][kProtoLL128] = 100, s.cost[kAlgoRing][kProtoSimple] = 120;
  s.cost[kAlgoTree][kProtoSimple] = 150, s.cost[kAlgoTree][kProtoLL128] = 190;
  return s;
}

adapt::Choice resolve(const std::vector<TableRule>& rules, adapt::Choice nccl) {
  for (const TableRule& r : rules)
    if ((r.coll == kAny || r.coll == kAR) && kMiB >= r.minBytes && kMiB <= r.maxBytes) {
      adapt::Choice c = nccl;
      if (r.decision.algo != kAny) c.algo = r.decision.algo;
      if (r.decision.proto != kAny) c.proto = r.decision.proto;
      if (r.decision.nChannels > 0) c.nChannels = static_cast<uint8_t>(r.decision.nChannels);
      return c;
    }
  return nccl;
}

struct RealLog {
  std::string text;
  std::map<std::string, int> adaptKinds;  // as the policy emitted them
  int coordinatorTables = 0;
  std::string finalDecision;  // the policy's incumbent for 1 MiB at the end
};

RealLog makeLog() {
  RealLog out;
  std::ostringstream log;
  int64_t ms = 0;
  auto line = [&](json j) {
    char ts[40];
    std::snprintf(ts, sizeof ts, "2026-01-31T12:%02lld:%02lld.%03lldZ", static_cast<long long>(ms / 60000 % 60),
                  static_cast<long long>(ms / 1000 % 60), static_cast<long long>(ms % 1000));
    ms += 7;
    logev::stamp(j, {logev::kSchemaVersion, ts, kPid});
    log << j.dump() << "\n";
  };
  const std::string comm = hexId(kCommId);

  logev::PluginStart start;
  start.version = "test", start.host = "node0";
  start.settings = {{"WIREWISE_MODE", "apply"}, {"WIREWISE_POLICY", "adaptive"}, {"WIREWISE_CONFIG", ""}};
  line(start);
  logev::CommInit init;
  init.comm = comm, init.face = std::string(logev::faceName(logev::Face::Tuner)), init.abi = "tuner_v5";
  init.nRanks = 2, init.nNodes = 2;
  line(init);
  auto neutral = DecisionTable::neutral();
  logev::RankTable rank;
  char digest[24];
  std::snprintf(digest, sizeof digest, "%016llx", static_cast<unsigned long long>(neutral->digest()));
  rank.comm = comm, rank.seq = 0, rank.reason = neutral->reason(), rank.source = std::string(logev::kSourceBuiltin);
  rank.digest = digest, rank.ranges = logRanges(neutral->ranges());
  line(rank);

  adapt::CommPolicy policy(kCommId, 2, 2, adapt::PolicyParams{}, [&](json e) {
    const auto kind = logev::lineKindOf(e);
    if (kind == logev::EventKind::Adapt) ++out.adaptKinds[e.at("kind").get<std::string>()];
    if (kind == logev::EventKind::Table) ++out.coordinatorTables;
    line(std::move(e));
  });
  const adapt::Choice nccl = ch(kAlgoRing, kProtoLL128, 16);
  std::vector<adapt::PolicyStep> steps;
  std::vector<uint64_t> boundaries;
  uint64_t collectives = 0;
  std::vector<double> p50s;
  for (uint64_t v = 0; v < kVerdicts; ++v) {
    const uint64_t boundary = v == 0 ? 0 : boundaries.back() + steps.back().spacing;
    std::vector<adapt::MemberEvidence> ev;
    if (v >= kLag) {
      const adapt::PolicyStep& ran = steps[v - kLag];
      adapt::MemberEvidence m;
      m.memberId = 100;
      if (v == kLag) m.sights.push_back(sightOf());
      const adapt::Choice c = resolve(ran.rules, nccl);
      for (uint64_t g = boundaries[v - kLag]; g < boundaries[v - kLag] + ran.spacing; ++g) {
        const double us = truthUs(v - kLag, c) * (1 + noise(g));
        m.samples.push_back({g + 1, kMiB, static_cast<uint32_t>(std::lround(us * 1000)), static_cast<int8_t>(kAR),
                             c.algo, c.proto, c.nChannels});
        p50s.push_back(us);
        ++collectives;
      }
      ev.push_back(std::move(m));
    }
    steps.push_back(policy.decide(v, boundary, kSpacing, ev));
    boundaries.push_back(boundary);
  }
  for (const auto& b : policy.buckets())
    if (b.coll == kAR && b.bucket == SizeBuckets::index(kMiB))
      out.finalDecision = b.incumbent.keepsNccl() ? std::string(logev::kNcclDecision)
                                                  : logev::formatDecision(algoName(b.incumbent.algo),
                                                                          protoName(b.incumbent.proto),
                                                                          b.incumbent.nChannels);

  // The profiler face's summary of the run, as the runtime fills it.
  logev::Summary sum;
  sum.comm = comm, sum.rank = 0, sum.intervalMs = 10000;
  logev::SummaryRow row;
  row.coll = std::string(collName(CollType::AllReduce)), row.bucket = SizeBuckets::index(kMiB);
  row.minBytes = row.maxBytes = kMiB, row.algo = "ring", row.proto = "ll128", row.channels = 16;
  row.count = collectives, row.p50Us = p50s[p50s.size() / 2], row.p99Us = 200, row.busBwGBs = 10.5;
  sum.rows = {row};
  line(sum);
  logev::CommFinalize fin;
  fin.comm = comm, fin.face = init.face, fin.collectives = collectives, fin.applied = collectives, fin.kept = 0;
  fin.boundaries = kVerdicts;
  line(fin);
  line(logev::PluginStop{});
  out.text = log.str();
  return out;
}

LogSummary read(const std::string& text) {
  LogSummary s;
  std::istringstream in(text);
  addLog(in, &s);
  return s;
}

TEST(LogRealWriters, SummarizeReadsEveryEventThePolicyAndTheStructsWrote) {
  RealLog log = makeLog();
  ASSERT_GT(log.adaptKinds["calibrated"], 0) << log.text;
  ASSERT_GT(log.adaptKinds["alarm"], 0) << log.text;
  const LogSummary s = read(log.text);
  EXPECT_EQ(s.malformed, 0u);
  EXPECT_EQ(s.unknown, 0u);
  EXPECT_EQ(s.events, s.lines);
  ASSERT_EQ(s.processes.size(), 1u);
  EXPECT_EQ(s.processes[0].pid, kPid);
  EXPECT_EQ(s.processes[0].mode, "apply");
  EXPECT_TRUE(s.processes[0].stopped);
  ASSERT_EQ(s.comms.size(), 1u);
  const CommSummary& c = s.comms[0];
  EXPECT_EQ(c.id, hexId(kCommId));
  ASSERT_EQ(c.inits.size(), 1u);
  EXPECT_EQ(c.inits[0].rank, -1);  // the tuner face has no rank
  ASSERT_EQ(c.tables.size(), 1u);
  EXPECT_EQ(c.tables[0].source, "builtin");
  EXPECT_EQ(c.coordTables.size(), static_cast<size_t>(log.coordinatorTables));
  std::map<std::string, int> read;
  for (const AdaptEvent& a : c.adapts) {
    ++read[a.kind];
    EXPECT_EQ(a.coll, "allreduce");
    EXPECT_EQ(a.minBytes, kMiB);
    EXPECT_FALSE(a.reason.empty());
    EXPECT_TRUE(a.beforeUs && a.afterUs);
    if (a.kind == "alarm") {
      EXPECT_TRUE(a.hasDetector);
    }
  }
  EXPECT_EQ(read, log.adaptKinds);
  ASSERT_EQ(c.finalizes.size(), 1u);
  EXPECT_EQ(c.finalizes[0].face, "tuner");
  EXPECT_EQ(c.observed().size(), 1u);

  const std::string text = summaryText(s);
  EXPECT_NE(text.find("the coordinator's committed tables as they changed"), std::string::npos) << text;
  EXPECT_NE(text.find("  adapt   " + std::to_string(c.adapts.size()) + " event"), std::string::npos) << text;
  const json j = summaryJson(s);
  EXPECT_EQ(j["comms"][0]["coordinator"]["tables"], log.coordinatorTables);
  EXPECT_EQ(j["comms"][0]["coordinator"]["adapt_events"], c.adapts.size());
}

TEST(LogRealWriters, ExplainTellsThePolicysLastDecisionWithItsEvidence) {
  const RealLog log = makeLog();
  ASSERT_FALSE(log.finalDecision.empty());
  ASSERT_NE(log.finalDecision, "nccl") << "the fault should have moved 1 MiB off NCCL's choice";
  ExplainFilter f;
  f.bytes = kMiB;
  const std::vector<Explanation> e = explainLog(read(log.text), f);
  ASSERT_EQ(e.size(), 1u);
  const Explanation& x = e[0];
  EXPECT_EQ(x.comm, hexId(kCommId));
  EXPECT_EQ(x.coll, "allreduce");
  EXPECT_LE(x.minBytes, kMiB);
  EXPECT_GE(x.maxBytes, kMiB);
  EXPECT_EQ(x.decision, log.finalDecision) << x.text;
  EXPECT_EQ(x.nccl, "ring/ll128/16") << x.text;  // the policy's from_nccl, as measured
  EXPECT_FALSE(x.kind.empty());
  EXPECT_TRUE(x.sinceIndex.has_value());
  EXPECT_FALSE(x.verdicts.empty());
  const auto d = logev::parseDecision(x.decision);
  ASSERT_TRUE(d);
  EXPECT_NE(x.text.find(d->algo + "/" + d->proto), std::string::npos) << x.text;
  EXPECT_NE(x.text.find("instead of NCCL's ring/ll128/16"), std::string::npos) << x.text;
}

TEST(LogRealWriters, TheBinaryReadsTheLogToo) {
  const RealLog log = makeLog();
  char path[] = "/tmp/ww_real_log_XXXXXX";
  const int fd = mkstemp(path);
  ASSERT_GE(fd, 0);
  close(fd);
  {
    std::ofstream f(path);
    f << log.text;
  }
  const auto sum = testing::runCli(std::string("log summarize --json ") + path);
  EXPECT_EQ(sum.status, 0) << sum.err;
  EXPECT_EQ(sum.err, "");
  const json j = json::parse(sum.out, nullptr, false);
  ASSERT_TRUE(j.is_object()) << sum.out;
  EXPECT_EQ(j["malformed"], 0);
  EXPECT_EQ(j["unknown"], 0);
  const auto ex = testing::runCli(std::string("log explain --bytes 1MiB ") + path);
  EXPECT_EQ(ex.status, 0) << ex.err;
  EXPECT_NE(ex.out.find("communicator " + hexId(kCommId) + " runs allreduce"), std::string::npos) << ex.out;
  unlink(path);
}

}  // namespace
}  // namespace wirewise::tools
