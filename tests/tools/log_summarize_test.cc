// `wirewise log summarize` on fixture logs, through the built binary and through the library.
#include <gtest/gtest.h>

#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <nlohmann/json.hpp>

#include "common/units.h"
#include "tests/tools/cli_runner.h"
#include "tools/cli_util.h"
#include "tools/log_summary.h"

namespace wirewise::tools {
namespace {

using testing::runCli;
const std::string kData = WW_TOOLS_DATA;

TEST(LogSummarizeCli, TextShowsInitsTablesObservedDropsAndFinalize) {
  auto r = runCli("log summarize " + kData + "/two_comms.jsonl");
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_EQ(r.err, "");
  const std::string& o = r.out;
  EXPECT_NE(o.find("14 lines: 14 events, 0 malformed"), std::string::npos) << o;
  EXPECT_NE(o.find("communicator 0x00000000000000aa"), std::string::npos) << o;
  EXPECT_NE(o.find("process 4242 on node01: wirewise 0.1.0, mode apply, config /etc/wirewise/table.json, stopped, "
                   "17 log lines dropped"),
            std::string::npos)
      << o;
  EXPECT_NE(o.find("seq 0: init (/etc/wirewise/table.json), digest 0123456789abcdef, 2 ranges"), std::string::npos)
      << o;
  EXPECT_NE(o.find("tuner face, tuner_v5, 16 ranks, 2 nodes"), std::string::npos) << o;
  EXPECT_NE(o.find("profiler face, profiler_v5, 16 ranks, 2 nodes, rank 3"), std::string::npos) << o;
  EXPECT_NE(o.find("allreduce 0 B-64 KiB tree/ll ch=keep"), std::string::npos) << o;
  EXPECT_NE(o.find("allreduce 65537 B-max ring/simple ch=16"), std::string::npos) << o;
  EXPECT_NE(o.find("seq 5000: adaptive (coordinator)"), std::string::npos) << o;
  EXPECT_NE(o.find("broadcast 4 MiB-max any/any ch=4"), std::string::npos) << o;
  // 100 calls at p50 20 us and 300 at 40 us: count-weighted 35.0; p99 is the max, 90.0; busbw (600+900)/400.
  EXPECT_NE(o.find("64 KiB-87.89 KiB"), std::string::npos) << o;
  EXPECT_NE(o.find("ring/ll128 ch=16"), std::string::npos) << o;
  EXPECT_NE(o.find("400       35.0       90.0        3.75"), std::string::npos) << o;
  EXPECT_NE(o.find("drops   6 (pool 2, ring 1, incomplete 0, orphan 3)"), std::string::npos) << o;
  EXPECT_NE(o.find("12345 collectives, 12000 applied, 345 kept"), std::string::npos) << o;
  EXPECT_NE(o.find("profiler rank 3, pid 4242: 407 collectives, 407 samples"), std::string::npos) << o;
  EXPECT_NE(o.find("communicator 0x00000000000000bb"), std::string::npos) << o;
  EXPECT_NE(o.find("10 collectives, 0 applied, 0 kept"), std::string::npos) << o;
}

// A process's rotated log (WIREWISE_LOG_MAX_MB): h-7.2.jsonl, h-7.1.jsonl, then h-7.jsonl, oldest first. A
// glob lists them h-7.1, h-7.2, h-7; the tool reads them in the order their first lines were written, so the
// summary is the one of the unrotated log.
TEST(LogSummarizeCli, RotatedFilesAreReadOldestFirstWhateverTheOrderGiven) {
  std::ifstream in(kData + "/two_comms.jsonl");
  std::vector<std::string> lines;
  for (std::string l; std::getline(in, l);) lines.push_back(l);
  ASSERT_EQ(lines.size(), 14u);
  const std::string dir = ::testing::TempDir() + "ww_rotated_" + std::to_string(::getpid());
  std::filesystem::create_directories(dir);
  const std::string parts[] = {dir + "/h-7.2.jsonl", dir + "/h-7.1.jsonl", dir + "/h-7.jsonl"};
  const size_t cuts[] = {0, 3, 9, 14};  // the second table of comm 0xaa (line 8) and its summaries apart
  for (int k = 0; k < 3; ++k) {
    std::ofstream out(parts[k]);
    for (size_t i = cuts[k]; i < cuts[k + 1]; ++i) out << lines[i] << "\n";
  }
  const std::string globOrder = parts[1] + " " + parts[0] + " " + parts[2];
  auto whole = runCli("log summarize --json " + kData + "/two_comms.jsonl");
  auto rotated = runCli("log summarize --json " + globOrder);
  ASSERT_EQ(rotated.status, 0) << rotated.err;
  EXPECT_EQ(nlohmann::json::parse(rotated.out), nlohmann::json::parse(whole.out));
  // The negative control: read in the order given, the same parts summarize differently.
  LogSummary given;
  for (int k : {1, 0, 2}) {
    std::ifstream part(parts[k]);
    addLog(part, &given);
  }
  EXPECT_NE(summaryJson(given), nlohmann::json::parse(whole.out));
  std::filesystem::remove_all(dir);
}

TEST(LogSummarizeCli, JsonCarriesTheSameNumbers) {
  auto r = runCli("log summarize --json " + kData + "/two_comms.jsonl");
  ASSERT_EQ(r.status, 0) << r.err;
  auto j = nlohmann::json::parse(r.out);
  ASSERT_EQ(j["comms"].size(), 2u);
  const auto& aa = j["comms"][0];
  EXPECT_EQ(aa["comm"], "0x00000000000000aa");
  EXPECT_EQ(aa["summaries"], 2);
  ASSERT_EQ(aa["tables"].size(), 2u);
  EXPECT_EQ(aa["tables"][1]["seq"], 5000);
  ASSERT_EQ(aa["observed"].size(), 2u);
  const auto& ar = aa["observed"][0];  // allreduce sorts first
  EXPECT_EQ(ar["coll"], "allreduce");
  EXPECT_EQ(ar["count"], 400);
  EXPECT_EQ(ar["min_bytes"], 65536);
  EXPECT_EQ(ar["max_bytes"], 90000);
  EXPECT_DOUBLE_EQ(ar["p50_us"].get<double>(), 35.0);
  EXPECT_DOUBLE_EQ(ar["p99_max_us"].get<double>(), 90.0);
  EXPECT_DOUBLE_EQ(ar["busbw_gbs"].get<double>(), 3.75);
  EXPECT_EQ(aa["observed"][1]["coll"], "allgather");
  EXPECT_EQ(aa["drops"]["orphan"], 3);
  EXPECT_EQ(j["processes"][0]["host"], "node01");
  EXPECT_EQ(j["processes"][0]["stopped"], true);
  EXPECT_EQ(j["processes"][0]["mode"], "apply");
  EXPECT_EQ(j["processes"][0]["config"], "/etc/wirewise/table.json");
  EXPECT_EQ(j["processes"][0]["log_dropped"], 17);
}

TEST(LogSummarizeCli, MalformedLinesAreCountedAndSkipped) {
  auto r = runCli("log summarize --json " + kData + "/malformed.jsonl");
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_NE(r.err.find("skipped 3 malformed line(s) (line 3, 5, 6)"), std::string::npos) << r.err;
  auto j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j["malformed"], 3);
  EXPECT_EQ(j["unknown"], 1);
  EXPECT_EQ(j["events"], 3);
  ASSERT_EQ(j["comms"].size(), 1u);
  // The profiler init with "nranks":"four" left no trace.
  EXPECT_EQ(j["comms"][0]["inits"].size(), 1u);
  EXPECT_EQ(j["comms"][0]["finalize"][0]["collectives"], 99);
}

TEST(LogSummarizeCli, MissingFileFailsWithAMessage) {
  auto r = runCli("log summarize " + kData + "/does-not-exist.jsonl");
  EXPECT_NE(r.status, 0);
  EXPECT_NE(r.err.find("does-not-exist.jsonl"), std::string::npos) << r.err;
}

TEST(LogSummary, SeveralFilesMergeByCommunicator) {
  LogSummary s;
  for (int i = 0; i < 2; ++i) {
    std::ifstream in(kData + "/two_comms.jsonl");
    addLog(in, &s);
  }
  ASSERT_EQ(s.comms.size(), 2u);
  auto rows = s.comms[0].observed();
  ASSERT_FALSE(rows.empty());
  EXPECT_EQ(rows[0].count, 800u);
  EXPECT_DOUBLE_EQ(rows[0].p50Us(), 35.0);
  EXPECT_EQ(s.comms[0].drops.total(), 12u);
}

TEST(LogSummarizeCli, TelemetryEventsAreKnownNotUnknown) {
  const std::string path = ::testing::TempDir() + "/ww_known_events.jsonl";
  {
    std::ofstream f(path);
    for (const char* ev : {"link_health", "net_paths", "collectors", "control", "control_start", "verdict",
                           "not_an_event_yet"})
      f << R"({"v":1,"pid":7,"event":")" << ev << "\"}\n";
  }
  auto r = runCli("log summarize --json " + path);
  ASSERT_EQ(r.status, 0) << r.err;
  auto j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j["events"], 6);
  EXPECT_EQ(j["unknown"], 1);  // only the made-up one
}

// 32 ranks, a process each, on two hosts: what every rank wrote alike reads as one line with its count and its
// ranks; the one process whose table differs keeps its own line, and the difference is named.
TEST(LogSummarize, LinesEqualAcrossRanksFoldAndADifferenceStandsOut) {
  std::ostringstream log;
  const std::string comm = R"("comm":"0x00000000000000cc")";
  for (int r = 0; r < 32; ++r) {
    const int pid = 1000 + r;
    const std::string who = R"({"v":1,"pid":)" + std::to_string(pid) + ",";
    const std::string host = r < 16 ? "node01" : "node02";
    log << who << R"("event":"plugin_start","version":"0.1.0","host":")" << host
        << R"(","settings":{"WIREWISE_MODE":"apply"}})" << "\n";
    log << who << R"("event":"comm_init",)" << comm << R"(,"face":"tuner","abi":"tuner_v5","nranks":32,"nnodes":2})"
        << "\n";
    log << who << R"("event":"comm_init",)" << comm
        << R"(,"face":"profiler","abi":"profiler_v5","nranks":32,"nnodes":2,"comm_name":"dp","rank":)" << r << "}\n";
    const char* algo = r == 7 ? "tree" : "ring";  // rank 7 read another table
    log << who << R"("event":"table",)" << comm
        << R"(,"seq":0,"reason":"init","source":"builtin","digest":"d","ranges":[{"coll":"allreduce","min_bytes":0,)"
        << R"("max_bytes":65536,"algo":")" << algo << R"(","proto":"ll","channels":0}]})" << "\n";
    log << who << R"("event":"comm_finalize",)" << comm
        << R"(,"face":"profiler","rank":)" << r << R"(,"collectives":500,"samples":500})" << "\n";
    log << who << R"("event":"plugin_stop"})" << "\n";
  }
  LogSummary s;
  std::istringstream in(log.str());
  addLog(in, &s);
  const std::string o = summaryText(s);
  const auto count = [&o](const std::string& what) {
    size_t n = 0;
    for (size_t at = o.find(what); at != std::string::npos; at = o.find(what, at + 1)) ++n;
    return n;
  };
  EXPECT_EQ(count("init    profiler face"), 1u) << o;
  EXPECT_NE(o.find("init    profiler face, profiler_v5, 32 ranks, 2 nodes, name 'dp' \u00d7 32 ranks 0-31\n"),
            std::string::npos)
      << o;
  EXPECT_NE(o.find("init    tuner face, tuner_v5, 32 ranks, 2 nodes \u00d7 32 pids 1000-1031\n"), std::string::npos)
      << o;
  EXPECT_NE(o.find("process on node01: wirewise 0.1.0, mode apply, config (none), stopped, 0 log lines dropped "
                   "\u00d7 16 pids 1000-1015\n"),
            std::string::npos)
      << o;
  EXPECT_NE(o.find("\u00d7 16 pids 1016-1031\n"), std::string::npos) << o;
  EXPECT_NE(o.find("\u00d7 31 pids 1000-1006, 1008-1031\n            allreduce 0 B-64 KiB ring/ll ch=keep\n"),
            std::string::npos)
      << o;
  EXPECT_NE(o.find("table   seq 0: init (builtin), digest d, 1 ranges, pid 1007\n            allreduce 0 B-64 KiB tree/ll"),
            std::string::npos)
      << o;  // the odd one out, as its own line
  EXPECT_NE(o.find("differs seq 0: 2 different tables across processes"), std::string::npos) << o;
  EXPECT_NE(o.find("final   profiler: 500 collectives, 500 samples \u00d7 32 ranks 0-31\n"), std::string::npos) << o;
  EXPECT_EQ(count("\n"), 14u) << o;  // instead of 32 lines for each of them
}

TEST(CliUtil, BytesAndDecisions) {
  EXPECT_EQ(bytesText(0), "0 B");
  EXPECT_EQ(bytesText(1023), "1023 B");
  EXPECT_EQ(bytesText(65536), "64 KiB");
  EXPECT_EQ(bytesText(65537), "65537 B");
  EXPECT_EQ(bytesText(90000), "87.89 KiB");
  EXPECT_EQ(bytesText(3u << 19), "1.50 MiB");
  EXPECT_EQ(bytesText(uint64_t{1} << 30), "1 GiB");
  EXPECT_EQ(bytesText(UINT64_MAX), "max");
  EXPECT_EQ(decisionText("tree", "ll", 0), "tree/ll ch=keep");
}

}  // namespace
}  // namespace wirewise::tools
