// `wirewise report`: what the log reader gathers for the page (bandwidth over time, link tracks, waits,
// control warnings), the page itself (its parts present, log text escaped, nothing that loads), and the CLI.
// tests/tools/report_browser.sh opens a page in headless Chromium.
#include <gtest/gtest.h>
#include <unistd.h>

#include <fstream>
#include <sstream>
#include <string>

#include "common/text.h"
#include "tests/tools/cli_runner.h"
#include "tools/log_report.h"
#include "tools/log_summary.h"

namespace wirewise::tools {
namespace {

using testing::runCli;
using testing::slurp;
const std::string kData = WW_TOOLS_DATA;

// What the coordinator fixture lacks: a named communicator (with markup in its name), measurements at two
// seconds, a link that degrades and recovers, delivered verdicts, a control-plane warning, and waits.
constexpr const char* kExtra = R"(
{"event":"comm_init","comm":"0x00000000000000ab","face":"profiler","abi":"profiler_v5","nranks":16,"nnodes":2,"rank":0,"comm_name":"<script>alert(1)</script> & 'dp'","pid":100,"ts":"2026-02-01T09:00:02.000Z","v":1}
{"event":"summary","comm":"0x00000000000000ab","rank":0,"interval_ms":1000,"rows":[{"coll":"allreduce","algo":"ring","proto":"simple","channels":16,"bucket":57,"min_bytes":16777216,"max_bytes":16777216,"count":100,"p50_us":300,"p99_us":320,"busbw_gbs":100.0}],"drops":{"pool":0,"ring":0,"incomplete":0,"orphan":0},"pid":100,"ts":"2026-02-01T09:00:05.400Z","v":1}
{"event":"summary","comm":"0x00000000000000ab","rank":1,"interval_ms":1000,"rows":[{"coll":"allreduce","algo":"ring","proto":"simple","channels":16,"bucket":57,"min_bytes":16777216,"max_bytes":16777216,"count":300,"p50_us":300,"p99_us":320,"busbw_gbs":80.0}],"drops":{"pool":0,"ring":0,"incomplete":0,"orphan":0},"pid":101,"ts":"2026-02-01T09:00:05.900Z","v":1}
{"event":"summary","comm":"0x00000000000000ab","rank":0,"interval_ms":1000,"rows":[{"coll":"allreduce","algo":"ring","proto":"simple","channels":11,"bucket":57,"min_bytes":16777216,"max_bytes":16777216,"count":50,"p50_us":305,"p99_us":320,"busbw_gbs":110.0}],"drops":{"pool":0,"ring":0,"incomplete":0,"orphan":0},"pid":100,"ts":"2026-02-01T09:00:09.100Z","v":1}
{"event":"link_health","time_ns":1,"passes":1,"links":[{"kind":"ib","id":"mlx5_1:1","state":"up","present":true,"up":true,"nominal_gbps":50.0,"errors_per_s":0.0,"last_change_ns":0,"counter_anomalies":0}],"sources":[],"pid":100,"ts":"2026-02-01T09:00:04.000Z","v":1}
{"event":"link_health","time_ns":2,"passes":2,"links":[{"kind":"ib","id":"mlx5_1:1","state":"up","present":true,"up":true,"nominal_gbps":50.0,"errors_per_s":0.0,"last_change_ns":0,"counter_anomalies":0}],"sources":[],"pid":100,"ts":"2026-02-01T09:00:05.000Z","v":1}
{"event":"link_health","time_ns":3,"passes":3,"links":[{"kind":"ib","id":"mlx5_1:1","state":"degraded","present":true,"up":true,"nominal_gbps":12.5,"errors_per_s":0.0,"last_change_ns":0,"counter_anomalies":0}],"sources":[],"pid":100,"ts":"2026-02-01T09:00:07.000Z","v":1}
{"event":"link_health","time_ns":4,"passes":4,"links":[{"kind":"ib","id":"mlx5_1:1","state":"up","present":true,"up":true,"nominal_gbps":50.0,"errors_per_s":0.0,"last_change_ns":0,"counter_anomalies":0}],"sources":[],"pid":100,"ts":"2026-02-01T09:00:12.000Z","v":1}
{"event":"verdict","comm":"0x00000000000000ab","index":12,"boundary":3840,"next":4160,"observe_only":false,"reason":"adaptive","digest":"00","pid":100,"ts":"2026-02-01T09:00:09.000Z","v":1}
{"event":"verdict","comm":"0x00000000000000ab","index":13,"boundary":4160,"next":null,"observe_only":false,"reason":"adaptive","digest":"00","pid":101,"ts":"2026-02-01T09:00:10.000Z","v":1}
{"event":"control","level":"warn","message":"coordinator 10.0.0.1:29400 <unreachable>: retrying","pid":101,"ts":"2026-02-01T09:00:03.000Z","v":1}
{"event":"control","level":"info","message":"joined","pid":101,"ts":"2026-02-01T09:00:03.500Z","v":1}
{"event":"comm_finalize","comm":"0x00000000000000ab","face":"tuner","collectives":10300,"applied":8000,"kept":0,"waited_us":1500,"pid":101,"ts":"2026-02-01T09:00:25.000Z","v":1}
)";

LogSummary fixtureSummary() {
  LogSummary s;
  std::ifstream coord(kData + "/coordinator.jsonl");
  addLog(coord, &s);
  std::istringstream extra(kExtra);
  addLog(extra, &s);
  return s;
}

size_t count(const std::string& text, const std::string& what) {
  size_t n = 0;
  for (size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + what.size())) ++n;
  return n;
}

TEST(LogReport, TimestampsReadAsUnixMillisecondsAndNothingElseDoes) {
  EXPECT_EQ(tsMillis("2026-01-31T12:34:56.789Z"), 1769862896789);
  EXPECT_EQ(tsMillis("2024-02-29T00:00:00.000Z"), 1709164800000);  // a leap day
  EXPECT_EQ(tsMillis("1969-12-31T23:59:59.000Z"), -1000);
  EXPECT_FALSE(tsMillis(""));
  EXPECT_FALSE(tsMillis("2026-01-31 12:34:56.789Z"));
  EXPECT_FALSE(tsMillis("2026-01-31T12:34:56.789"));   // no zone: not the log's format
  EXPECT_FALSE(tsMillis("2026-01-31T12:34:56.789Zx"));
  EXPECT_FALSE(tsMillis("2026-13-31T12:34:56.789Z"));
  EXPECT_FALSE(tsMillis("2026-01-31T24:00:00.000Z"));
}

TEST(LogReport, TheReaderKeepsBandwidthPerSecondLinkChangesVerdictsWaitsAndWarnings) {
  const LogSummary s = fixtureSummary();
  ASSERT_EQ(s.comms.size(), 2u);  // the fixture's second communicator has no measurements
  const CommSummary& c = s.comms[0];
  ASSERT_EQ(c.id, "0x00000000000000ab");
  // Channels 16 and 11 of one bucket are one series; ranks 0 and 1 in the same second add, by count.
  ASSERT_EQ(c.bandwidth.size(), 1u);
  const BandwidthSeries& b = c.bandwidth.begin()->second;
  EXPECT_EQ(b.count, 450u);
  ASSERT_EQ(b.bySecond.size(), 2u);
  EXPECT_DOUBLE_EQ(b.bySecond.begin()->second.busBwGBs(), (100.0 * 100 + 80.0 * 300) / 400);
  EXPECT_DOUBLE_EQ(b.bySecond.rbegin()->second.busBwGBs(), 110.0);
  EXPECT_EQ(b.bySecond.rbegin()->first - b.bySecond.begin()->first, 4);
  // up, up, degraded, up: three entries (changes only), and the last time it was seen.
  ASSERT_EQ(s.links.size(), 1u);
  const LogLinkTrack& t = s.links.begin()->second;
  ASSERT_EQ(t.states.size(), 3u);
  EXPECT_EQ(t.states[1].second, "degraded");
  EXPECT_EQ(t.states[2].first - t.states[1].first, 5000);
  EXPECT_EQ(t.lastSeenMs, t.states[2].first);
  EXPECT_EQ(c.verdictsReceived, 2u);
  uint64_t waited = 0;
  for (const LogFinalize& f : c.finalizes) waited += f.waitedUs;
  EXPECT_EQ(waited, 1500u);
  EXPECT_EQ(s.controlWarningCount, 1u);  // the info line is not a warning
  ASSERT_EQ(s.controlWarnings.size(), 1u);
  EXPECT_EQ(s.controlWarnings[0].pid, 101);
}

// Wall-clock times in `log summarize`: the log's span, and when each committed table was logged.
TEST(LogReport, SummarizeShowsWallClockTimes) {
  LogSummary s;
  std::ifstream coord(kData + "/coordinator.jsonl");
  addLog(coord, &s);
  const std::string text = summaryText(s);
  EXPECT_NE(text.find("wall clock 2026-02-01T09:00:01.000Z to 2026-02-01T09:00:26.000Z (25.0 s)\n"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("verdict index 12, collective 3840: adaptive, digest 00000000000d160c, logged 2026-02-01T09:00:"),
            std::string::npos)
      << text;
}

TEST(LogReport, ThePageHasEveryPartAndEscapesWhatTheLogSays) {
  const std::string html = reportHtml(fixtureSummary(), ReportOptions{{"a.jsonl", "b<c>.jsonl"}});
  EXPECT_EQ(html.rfind("<!DOCTYPE html>", 0), 0u);
  EXPECT_NE(html.find("name=\"viewport\""), std::string::npos);
  EXPECT_NE(html.find("id=\"comm-0x00000000000000ab\""), std::string::npos);
  EXPECT_NE(html.find("href=\"#comm-0x00000000000000ab\""), std::string::npos);
  // The tables in force, with the fixture's probe verdicts, its alarm, commits and the commit made while
  // node02:mlx5_1 was unhealthy (a fault).
  EXPECT_EQ(count(html, "<svg class=\"timeline\""), 2u);  // one per communicator with tables
  EXPECT_GT(count(html, "<rect class=\"range\""), 3u);
  EXPECT_GE(count(html, "<rect class=\"probe\""), 1u);
  EXPECT_GE(count(html, "<path class=\"alarm\""), 1u);
  EXPECT_GE(count(html, "<circle class=\"commit\""), 1u);
  EXPECT_GE(count(html, "<circle class=\"fault\""), 1u);
  EXPECT_NE(html.find("ring/simple/11 measured 8% faster than ring/simple/16 after the change"), std::string::npos);
  EXPECT_NE(html.find("Unhealthy links: node02:mlx5_1."), std::string::npos);
  // One series of bandwidth over time, two points.
  EXPECT_EQ(count(html, "<svg class=\"bandwidth\""), 1u);
  EXPECT_EQ(count(html, "<polyline class=\"series\""), 1u);
  EXPECT_NE(html.find("allreduce 16 MiB (450 collectives)"), std::string::npos) << html.substr(0, 200);
  // Link health: the degraded stretch is drawn, between two up stretches.
  EXPECT_EQ(count(html, "<svg class=\"links\""), 1u);
  EXPECT_EQ(count(html, "<rect class=\"state degraded\""), 1u);
  EXPECT_EQ(count(html, "<rect class=\"state up\""), 2u);
  // The control plane: waits, delivered verdicts and the warning.
  EXPECT_NE(html.find("Verdicts that changed the table, logged over all processes: <b>2</b>"), std::string::npos);
  EXPECT_NE(html.find("<b>1.5 ms</b> over 2 tuner(s)"), std::string::npos);
  EXPECT_NE(html.find("coordinator 10.0.0.1:29400 &lt;unreachable&gt;: retrying"), std::string::npos);
  // Log text is data: the communicator's name and the file names arrive escaped, and nothing loads.
  EXPECT_NE(html.find("&lt;script&gt;alert(1)&lt;/script&gt; &amp; &#39;dp&#39;"), std::string::npos);
  EXPECT_NE(html.find("b&lt;c&gt;.jsonl"), std::string::npos);
  EXPECT_EQ(html.find("<script"), std::string::npos);
  for (const char* loads : {"http://", "https://", "src=", "<link", "@import", "<iframe"})
    EXPECT_EQ(html.find(loads), std::string::npos) << loads;
}

// Hours of summaries: each series is merged into at most 480 points, weighted by count, so that a page
// stays small; the merged values stay within what was measured.
TEST(LogReport, ALongRunIsDrawnWithBoundedPoints) {
  LogSummary s;
  CommSummary& c = s.comms.emplace_back();
  c.id = "0x1";
  BandwidthSeries& b = c.bandwidth[{0, 40}];
  b.coll = "allreduce", b.bucket = 40, b.minBytes = b.maxBytes = 1 << 20;
  for (int64_t sec = 0; sec < 36000; sec += 10) {
    const double gbs = sec < 18000 ? 100 : 50;
    b.bySecond[1'800'000'000 + sec] = BandwidthPoint{gbs * 10, 10};
    b.count += 10;
  }
  const std::string html = reportHtml(s, ReportOptions{{"long.jsonl"}});
  const size_t points = count(html, "<circle cx=");
  EXPECT_GT(points, 300u);
  EXPECT_LE(points, 480u);
  EXPECT_NE(html.find("<title>allreduce 1 MiB: 100 GB/s at +0 s (80 collectives)</title>"), std::string::npos);
  EXPECT_NE(html.find(": 50 GB/s at +"), std::string::npos);
}

TEST(LogReport, AnEmptyLogStillMakesAPageThatSaysSo) {
  const std::string html = reportHtml(LogSummary{}, ReportOptions{{"empty.jsonl"}});
  EXPECT_NE(html.find("No communicator appears in this log."), std::string::npos);
  EXPECT_NE(html.find("No link collector reported"), std::string::npos);
  EXPECT_NE(html.find("</html>"), std::string::npos);
}

TEST(LogReport, HtmlEscapeLeavesNoMarkup) {
  EXPECT_EQ(markupEscape("a<b>&\"c'"), "a&lt;b&gt;&amp;&quot;c&#39;");
  EXPECT_EQ(markupEscape("µs ok"), "µs ok");
}

TEST(LogReportCli, WritesThePageAndFailsClearlyWhenItCannot) {
  const std::string dir = ::testing::TempDir() + "/ww_report_" + std::to_string(::getpid());
  ASSERT_EQ(std::system(("mkdir -p '" + dir + "'").c_str()), 0);
  const std::string log = dir + "/extra.jsonl", out = dir + "/report.html";
  std::ofstream(log) << kExtra;
  auto r = runCli("report " + kData + "/coordinator.jsonl " + log + " -o " + out);
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_NE(r.out.find("wrote " + out + " (2 communicator(s), "), std::string::npos) << r.out;
  const std::string html = slurp(out);
  EXPECT_NE(html.find("<svg class=\"timeline\""), std::string::npos);
  EXPECT_NE(html.find("</html>"), std::string::npos);
  EXPECT_FALSE(std::ifstream(out + ".tmp").good());  // renamed into place, no leftover

  auto bad = runCli("report " + log + " -o " + dir + "/no/such/dir/report.html");
  EXPECT_EQ(bad.status, 1);
  EXPECT_NE(bad.err.find("wirewise report: cannot write"), std::string::npos) << bad.err;
  auto missing = runCli("report " + dir + "/absent.jsonl");
  EXPECT_NE(missing.status, 0);
  std::system(("rm -rf '" + dir + "'").c_str());
}

}  // namespace
}  // namespace wirewise::tools
