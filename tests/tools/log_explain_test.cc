// `wirewise log explain` on fixture logs: the paragraphs' fields and words, filters, partial logs; through
// the library and through the built binary.
#include <gtest/gtest.h>

#include <unistd.h>

#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "common/units.h"
#include "tests/tools/cli_runner.h"
#include "tools/log_explain.h"
#include "tools/log_summary.h"

namespace wirewise::tools {
namespace {

using testing::runCli;
using testing::slurp;
const std::string kData = WW_TOOLS_DATA;
const std::string kLog = kData + "/coordinator.jsonl";
const std::string kAb = "0x00000000000000ab";
constexpr uint64_t kKiB = 1024, kMiB = 1024 * 1024;

LogSummary readText(const std::string& text) {
  LogSummary s;
  std::istringstream in(text);
  addLog(in, &s);
  return s;
}

std::vector<Explanation> explainAll(const std::string& text, const ExplainFilter& f = {}) {
  return explainLog(readText(text), f);
}

const Explanation& containing(const std::vector<Explanation>& e, const std::string& comm, const std::string& coll,
                              uint64_t bytes) {
  for (const auto& x : e)
    if (x.comm == comm && x.coll == coll && x.minBytes <= bytes && bytes <= x.maxBytes) return x;
  ADD_FAILURE() << "no paragraph for " << comm << " " << coll << " " << bytes;
  return e.front();
}

bool has(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

// The fixture's first `lines` lines, then the first `partial` bytes of the next one (no newline).
std::string cutLog(int lines, size_t partial) {
  std::istringstream in(slurp(kLog));
  std::string out, line;
  for (int i = 0; i < lines && std::getline(in, line); ++i) out += line + "\n";
  if (std::getline(in, line)) out += line.substr(0, partial);
  return out;
}

TEST(LogExplain, EveryStretchOfTheFinalTableGetsOneParagraph) {
  auto e = explainAll(slurp(kLog));
  std::vector<std::pair<uint64_t, std::string>> allreduce;
  for (const auto& x : e)
    if (x.comm == kAb && x.coll == "allreduce") allreduce.push_back({x.minBytes, x.decision});
  // The probe of 8-10 MiB in the last verdict is not a range of its own: 1-16 MiB stays one committed range.
  EXPECT_EQ(allreduce, (std::vector<std::pair<uint64_t, std::string>>{{0, "nccl"},
                                                                      {512 * kKiB, "ring/ll128/0"},
                                                                      {1 * kMiB, "ring/simple/16"},
                                                                      {16 * kMiB, "ring/simple/11"},
                                                                      {24 * kMiB, "tree/simple/11"},
                                                                      {28 * kMiB, "ring/simple/11"},
                                                                      {32 * kMiB, "ring/simple/16"}}));
  for (const auto& x : e) EXPECT_FALSE(x.text.empty());
}

TEST(LogExplain, ACommitAfterAnAlarmTellsItsEvidence) {
  auto e = explainAll(slurp(kLog));
  const Explanation& x = containing(e, kAb, "allreduce", 25 * kMiB);
  EXPECT_EQ(x.minBytes, 24 * kMiB);
  EXPECT_EQ(x.maxBytes, 28 * kMiB - 1);
  EXPECT_EQ(x.decision, "tree/simple/11");
  EXPECT_EQ(x.nccl, "nvls_tree/simple/16");
  EXPECT_EQ(x.sinceIndex, 23u);
  EXPECT_EQ(x.sinceBoundary, 7360u);
  EXPECT_EQ(x.kind, "commit");
  EXPECT_EQ(x.verdicts, (std::vector<uint64_t>{20, 23}));
  EXPECT_TRUE(x.links.empty());
  const std::string& t = x.text;
  EXPECT_TRUE(has(t,
                  "Since collective 7360 (verdict 23), communicator 0x00000000000000ab runs allreduce from 24 MiB "
                  "to 28 MiB with tree/simple on 11 channels instead of NCCL's nvls_tree/simple/16."))
      << t;
  // 412.3 / 346.7 from the alarm: 19% slower.
  EXPECT_TRUE(has(t, "The detector saw it 19% slower (CUSUM 0.31 over threshold 0.12)")) << t;
  EXPECT_TRUE(has(t,
                  "probing measured tree/simple/11 at 345 µs (141 GB/s bus bandwidth) against 412 µs (118 GB/s) "
                  "with ring/simple/11 before"))
      << t;
  EXPECT_TRUE(has(t, "the runner-up was tree/simple/8 at 351 µs")) << t;
  EXPECT_TRUE(has(t, "Implicated links: none identified.")) << t;
}

// The policy's latency-or-bandwidth reading ("cause") joins the detector's clause, so that the paragraph
// says what kind of change it was; a log without it reads as before (the test above).
TEST(LogExplain, TheCauseTheAlarmInferredIsTold) {
  std::istringstream in(slurp(kLog));
  std::string text, line;
  int tagged = 0;
  while (std::getline(in, line)) {
    nlohmann::json j = nlohmann::json::parse(line, nullptr, false);
    if (j.is_object() && j.value("kind", "") == "commit" && j.value("index", 0) == 23) {
      j["cause"] = {{"kind", "latency"}, {"text", "allreduce slowed by +37 µs at every size: a latency rise"}};
      line = j.dump();
      ++tagged;
    }
    text += line + "\n";
  }
  ASSERT_EQ(tagged, 1);
  const Explanation& x = containing(explainAll(text), kAb, "allreduce", 25 * kMiB);
  EXPECT_TRUE(has(x.text, "The detector saw it 19% slower (CUSUM 0.31 over threshold 0.12): allreduce slowed by "
                          "+37 µs at every size: a latency rise"))
      << x.text;
}

TEST(LogExplain, RangesWithoutEventsSaySo) {
  auto e = explainAll(slurp(kLog));
  const Explanation& own = containing(e, kAb, "allreduce", 100);
  EXPECT_EQ(own.decision, "nccl");
  EXPECT_EQ(own.maxBytes, 512 * kKiB - 1);
  EXPECT_FALSE(own.sinceIndex.has_value());
  EXPECT_EQ(own.kind, "");
  EXPECT_TRUE(has(own.text, "runs allreduce from 0 B to 512 KiB with NCCL's own choice; wirewise has not changed it."))
      << own.text;
  EXPECT_FALSE(has(own.text, "Implicated links")) << own.text;

  // A committed range no event covers came with a table; it has been as it is since verdict 12, not 5.
  const Explanation& table = containing(e, kAb, "allreduce", 30 * kMiB);
  EXPECT_EQ(table.sinceIndex, 12u);
  EXPECT_TRUE(has(table.text, "No adapt event covers it: it came with the coordinator's table at verdict 12"))
      << table.text;
  const Explanation& big = containing(e, kAb, "allreduce", 64 * kMiB);
  EXPECT_EQ(big.sinceIndex, 5u);
  EXPECT_TRUE(has(big.text, "from 32 MiB up with ring/simple on 16 channels")) << big.text;
}

TEST(LogExplain, ARevertAChannelCommitAndAnUnfinishedEpisode) {
  auto e = explainAll(slurp(kLog));
  const Explanation& rev = containing(e, kAb, "allgather", 5 * kMiB);
  EXPECT_EQ(rev.decision, "nccl");
  EXPECT_EQ(rev.kind, "revert");
  EXPECT_EQ(rev.sinceIndex, 30u);
  EXPECT_EQ(rev.minBytes, 4 * kMiB);
  EXPECT_EQ(rev.maxBytes, 8 * kMiB - 1);
  EXPECT_TRUE(has(rev.text,
                  "Since collective 9600 (verdict 30), communicator 0x00000000000000ab runs allgather from "
                  "4 MiB to 8 MiB with NCCL's own choice (ring/simple/16) again (ring/simple on 8 channels "
                  "before)."))
      << rev.text;
  EXPECT_TRUE(has(rev.text, "The detector saw it 13% slower (CUSUM 0.25 over threshold 0.12)")) << rev.text;
  EXPECT_TRUE(has(rev.text, "handed the choice back to NCCL")) << rev.text;

  const Explanation& ch = containing(e, kAb, "allreduce", 17 * kMiB);
  EXPECT_EQ(ch.decision, "ring/simple/11");
  EXPECT_EQ(ch.links, (std::vector<std::string>{"node02:mlx5_1"}));
  EXPECT_TRUE(has(ch.text, "The detector saw it 10% slower")) << ch.text;
  EXPECT_TRUE(has(ch.text, "against 330 µs (102 GB/s) with ring/simple/16 before")) << ch.text;
  EXPECT_TRUE(has(ch.text, "No adapt event covers 20-24 MiB.")) << ch.text;
  EXPECT_TRUE(has(ch.text, "Implicated links: node02:mlx5_1.")) << ch.text;

  const Explanation& busy = containing(e, kAb, "allreduce", 9 * kMiB);
  EXPECT_EQ(busy.decision, "ring/simple/16");
  EXPECT_EQ(busy.kind, "");
  EXPECT_EQ(busy.verdicts, (std::vector<uint64_t>{31}));
  EXPECT_TRUE(has(busy.text,
                  "At collective 9920 (verdict 31) the detector saw it 15% slower (CUSUM 0.18 over threshold "
                  "0.12); probing was still under way when the log ends."))
      << busy.text;
}

TEST(LogExplain, ARecoverThenAHoldAndACalibrationThatKeptNccl) {
  auto e = explainLog(readText(slurp(kData + "/hold_recover.jsonl")), {});
  const std::string c7 = "0x0000000000000007";
  const Explanation& rec = containing(e, c7, "allreduce", 1 * kMiB);
  EXPECT_EQ(rec.decision, "ring/simple/8");
  EXPECT_EQ(rec.kind, "recover");
  EXPECT_EQ(rec.sinceIndex, 12u);
  EXPECT_EQ(rec.verdicts, (std::vector<uint64_t>{10, 12, 15, 17}));
  EXPECT_TRUE(has(rec.text,
                  "Since collective 1200 (verdict 12), communicator 0x0000000000000007 runs allreduce from "
                  "1 MiB to 2 MiB with ring/simple on 8 channels instead of NCCL's ring/ll128/16."))
      << rec.text;
  // 80 / 110: 27% faster.
  EXPECT_TRUE(has(rec.text,
                  "The detector saw it 27% faster (CUSUM 0.4 over threshold 0.12); the link looks healed: "
                  "probing measured the former choice ring/simple/8 at 85 µs against 110 µs with "
                  "tree/simple/8 before"))
      << rec.text;
  EXPECT_TRUE(has(rec.text,
                  "At collective 1700 (verdict 17) the detector saw it 12% slower (CUSUM 0.2 over threshold "
                  "0.12) again and re-probing found nothing clearly better, so it was kept."))
      << rec.text;

  const Explanation& kept = containing(e, c7, "allreduce", 2 * kMiB);
  EXPECT_EQ(kept.decision, "nccl");
  EXPECT_EQ(kept.kind, "calibrated");
  EXPECT_EQ(kept.maxBytes, 2 * kMiB + kMiB / 2 - 1);
  EXPECT_FALSE(kept.sinceIndex.has_value());
  EXPECT_TRUE(has(kept.text,
                  "from 2 MiB to 2.50 MiB with NCCL's own choice (ring/simple/16); wirewise has not "
                  "changed it. Calibration measured 2 candidates: NCCL's own choice (ring/simple/16) was "
                  "best at 150 µs."))
      << kept.text;
}

TEST(LogExplain, FiltersPickOneRange) {
  const std::string log = slurp(kLog);
  ExplainFilter f;
  uint64_t id = 0;
  ASSERT_TRUE(parseCommId("0xAB", &id));
  f.comm = id;
  f.coll = "allreduce";
  f.bytes = 24 * kMiB - 1;
  auto e = explainAll(log, f);
  ASSERT_EQ(e.size(), 1u);
  EXPECT_EQ(e[0].minBytes, 16 * kMiB);
  EXPECT_EQ(e[0].decision, "ring/simple/11");

  // Without a collective, --bytes picks one range per collective.
  f.coll.clear();
  e = explainAll(log, f);
  ASSERT_EQ(e.size(), 2u);
  EXPECT_EQ(e[1].coll, "allgather");
  EXPECT_EQ(e[1].minBytes, 8 * kMiB);

  // A communicator without a coordinator: its per-rank table stands in.
  f = {};
  ASSERT_TRUE(parseCommId("cd", &id));
  f.comm = id;
  e = explainAll(log, f);
  ASSERT_EQ(e.size(), 2u);
  EXPECT_EQ(e[0].decision, "tree/ll/0");
  EXPECT_EQ(e[0].sinceBoundary, 0u);
  EXPECT_FALSE(e[0].sinceIndex.has_value());
  EXPECT_TRUE(has(e[0].text,
                  "Since collective 0, communicator 0x00000000000000cd runs allreduce from 0 B to 64 KiB "
                  "with tree/ll on NCCL's channel count"))
      << e[0].text;
  EXPECT_TRUE(has(e[0].text, "the table from /etc/ww.json")) << e[0].text;
  EXPECT_TRUE(has(e[1].text, "wirewise has not changed it")) << e[1].text;

  // A collective nothing mentions is NCCL's everywhere.
  f.coll = "broadcast";
  e = explainAll(log, f);
  ASSERT_EQ(e.size(), 1u);
  EXPECT_EQ(e[0].maxBytes, UINT64_MAX);
  EXPECT_TRUE(has(e[0].text, "runs broadcast from 0 B up with NCCL's own choice; wirewise has not changed it."));
}

TEST(LogExplain, ALogCutShortMidTableExplainsWhatItHas) {
  // Line 17 is the committed table of verdict 23; the commit event before it made it into the log.
  const std::string text = cutLog(16, 150);
  LogSummary s = readText(text);
  EXPECT_EQ(s.cutLines, (std::vector<uint64_t>{17}));
  EXPECT_EQ(s.malformed, 1u);
  ExplainFilter f;
  f.coll = "allreduce";
  f.bytes = 25 * kMiB;
  auto e = explainLog(s, f);
  ASSERT_EQ(e.size(), 1u);  // 0xcd comes later in the log: cut away
  const Explanation& x = e[0];
  EXPECT_EQ(x.minBytes, 16 * kMiB);
  EXPECT_EQ(x.maxBytes, 32 * kMiB - 1);
  EXPECT_EQ(x.decision, "ring/simple/11");
  EXPECT_EQ(x.sinceIndex, 12u);
  // Two buckets have events: each speaks for itself.
  EXPECT_TRUE(has(x.text, "For 16-20 MiB (verdict 12), the detector saw it 10% slower")) << x.text;
  EXPECT_TRUE(has(x.text, "For 24-28 MiB (verdict 23), the detector saw it 19% slower")) << x.text;
  EXPECT_TRUE(has(x.text, "The table in force does not run tree/simple/11")) << x.text;
  EXPECT_TRUE(has(x.text, "No adapt event covers 20-24 MiB, 28-32 MiB.")) << x.text;
  // NCCL's choice was measured for 24-28 MiB only.
  EXPECT_TRUE(has(x.text, "instead of NCCL's own choice (nvls_tree/simple/16 where measured)")) << x.text;
}

TEST(LogExplain, OddInputNeitherCrashesNorInventsRanges) {
  // Empty; only an init. Then odd_events.jsonl: adapt events and no usable table (the only one is a probe
  // table without its probes), a link that is an object, a wrong type, a kind this reader does not know.
  EXPECT_TRUE(explainAll("").empty());
  auto e = explainAll(R"({"event":"comm_init","comm":"0x05","face":"tuner"})"
                      "\n");
  ASSERT_EQ(e.size(), 1u);
  EXPECT_TRUE(has(e[0].text, "NCCL's own choices stand everywhere")) << e[0].text;

  LogSummary s = readText(slurp(kData + "/odd_events.jsonl"));
  EXPECT_EQ(s.malformed, 1u);  // "before_us":"slow"
  EXPECT_TRUE(s.cutLines.empty());
  e = explainLog(s, {});
  ASSERT_EQ(e.size(), 3u);  // reduce: below 1 KiB, the bucket, above it
  const Explanation& b = e[1];
  EXPECT_EQ(b.minBytes, 1024u);
  EXPECT_EQ(b.decision, "nccl");
  EXPECT_EQ(b.links, (std::vector<std::string>{R"({"host":"n1","port":1})"}));
  EXPECT_TRUE(has(b.text, "At collective 70 (verdict 7) a \"someday\" event said: a kind from a later version."))
      << b.text;
}

TEST(LogExplain, EveryCutPointReadsWithoutThrowing) {
  // A log read while it is written can end anywhere. Every cut: at most one cut-short line, and from the
  // first communicator on, something to say.
  const std::string full = slurp(kLog);
  const size_t firstComm = full.find('\n', full.find("comm_init")) + 1;
  for (size_t n = 0; n <= full.size(); n += 11) {
    LogSummary s;
    std::vector<Explanation> e;
    ASSERT_NO_THROW({
      s = readText(full.substr(0, n));
      e = explainLog(s, {});
      (void)summaryText(s);
      (void)summaryJson(s).dump();
    }) << "cut at "
       << n;
    EXPECT_LE(s.cutLines.size(), 1u) << "cut at " << n;
    if (n >= firstComm) {
      EXPECT_FALSE(e.empty()) << "cut at " << n;
    }
  }
}

TEST(LogExplain, ParsesSizesAndIds) {
  uint64_t v = 0;
  EXPECT_TRUE(parseBytes("25165824", &v));
  EXPECT_EQ(v, 25165824u);
  EXPECT_TRUE(parseBytes("24MiB", &v));
  EXPECT_EQ(v, 24 * kMiB);
  EXPECT_TRUE(parseBytes(" 24 mib ", &v));
  EXPECT_EQ(v, 24 * kMiB);
  EXPECT_TRUE(parseBytes("64K", &v));
  EXPECT_EQ(v, 64 * kKiB);
  EXPECT_TRUE(parseBytes("1.5 KiB", &v));
  EXPECT_EQ(v, 1536u);
  EXPECT_TRUE(parseBytes("18446744073709551615", &v));
  EXPECT_EQ(v, UINT64_MAX);
  EXPECT_FALSE(parseBytes("", &v));
  EXPECT_FALSE(parseBytes("MiB", &v));
  EXPECT_FALSE(parseBytes("12 parsecs", &v));
  EXPECT_FALSE(parseBytes("1.2.3", &v));
  EXPECT_FALSE(parseBytes("99999999999999999999", &v));
  EXPECT_FALSE(parseBytes("16777216 TiB", &v));
  EXPECT_TRUE(parseCommId("0x00000000000000ab", &v));
  EXPECT_EQ(v, 0xabu);
  EXPECT_TRUE(parseCommId("AB", &v));
  EXPECT_EQ(v, 0xabu);
  EXPECT_FALSE(parseCommId("0x", &v));
  EXPECT_FALSE(parseCommId("0xg1", &v));
  EXPECT_FALSE(parseCommId("0x00000000000000abc", &v));
}

TEST(LogExplainCli, OneRangeInPlainEnglish) {
  auto r = runCli("log explain " + kLog + " --comm 0x00000000000000ab --coll allreduce --bytes 24MiB");
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_EQ(r.err, "");
  EXPECT_EQ(r.out.find('\n'), r.out.size() - 1) << r.out;  // one paragraph, one line
  EXPECT_TRUE(has(r.out,
                  "Since collective 7360 (verdict 23), communicator 0x00000000000000ab runs allreduce from "
                  "24 MiB to 28 MiB with tree/simple on 11 channels instead of NCCL's nvls_tree/simple/16."))
      << r.out;
  EXPECT_TRUE(has(r.out, "(CUSUM 0.31 over threshold 0.12)")) << r.out;
}

TEST(LogExplainCli, JsonCarriesTheFields) {
  auto r = runCli("log explain --json " + kLog + " --coll allgather");
  ASSERT_EQ(r.status, 0) << r.err;
  auto j = nlohmann::json::parse(r.out);
  ASSERT_EQ(j.size(), 4u);  // 0xab: 0-4, 4-8, 8 MiB up; 0xcd: all of it
  EXPECT_EQ(j[1]["comm"], kAb);
  EXPECT_EQ(j[1]["min_bytes"], 4 * kMiB);
  EXPECT_EQ(j[1]["decision"], "nccl");
  EXPECT_EQ(j[1]["kind"], "revert");
  EXPECT_EQ(j[1]["since_index"], 30);
  EXPECT_EQ(j[1]["since_boundary"], 9600);
  EXPECT_EQ(j[1]["nccl"], "ring/simple/16");
  EXPECT_EQ(j[1]["verdicts"], nlohmann::json({28, 30}));
  EXPECT_TRUE(has(j[1]["text"].get<std::string>(), "handed the choice back to NCCL"));
  EXPECT_EQ(j[0]["since_index"], nullptr);
}

TEST(LogExplainCli, ACutShortLastLineIsSkippedWithANote) {
  char path[] = "/tmp/ww_explain_cut_XXXXXX";
  int fd = mkstemp(path);
  ASSERT_GE(fd, 0);
  close(fd);
  {
    std::ofstream out(path);
    out << cutLog(16, 150);
  }
  auto r = runCli(std::string("log explain ") + path + " --coll allreduce --bytes 25165824");
  auto s = runCli(std::string("log summarize ") + path);
  unlink(path);
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_TRUE(has(r.err, "the last line (line 17) is cut short, skipped")) << r.err;
  EXPECT_FALSE(has(r.err, "malformed")) << r.err;
  EXPECT_TRUE(has(r.out, "runs allreduce from 16 MiB to 32 MiB with ring/simple on 11 channels")) << r.out;
  ASSERT_EQ(s.status, 0) << s.err;
  EXPECT_TRUE(has(s.err, "the last line (line 17) is cut short")) << s.err;
  EXPECT_TRUE(has(s.out, "17 lines: 16 events, 1 malformed")) << s.out;
}

TEST(LogExplainCli, BadArgumentsFailWithAReason) {
  auto r = runCli("log explain " + kLog + " --comm 0xff");
  EXPECT_EQ(r.status, 1);
  EXPECT_TRUE(has(r.err, "no communicator 0xff in the log (it has: 0x00000000000000ab, 0x00000000000000cd)")) << r.err;
  r = runCli("log explain " + kLog + " --coll alltoall");
  EXPECT_EQ(r.status, 1);
  EXPECT_TRUE(has(r.err, "--coll alltoall")) << r.err;
  r = runCli("log explain " + kLog + " --bytes '12 parsecs'");
  EXPECT_EQ(r.status, 1);
  EXPECT_TRUE(has(r.err, "--bytes 12 parsecs")) << r.err;
  r = runCli("log explain " + kLog + " --comm zz");
  EXPECT_EQ(r.status, 1);
  EXPECT_TRUE(has(r.err, "--comm zz")) << r.err;
}

}  // namespace
}  // namespace wirewise::tools
