// The two Prometheus outputs: the textfile (written by rename, never half a file) and the HTTP endpoint
// over a real TCP socket (200 on /metrics, 404 elsewhere, a port in use refused with a WARN), each alone and
// through the real runtime started from environment settings.
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <atomic>
#include <cstdarg>
#include <filesystem>
#include <fstream>
#include <map>
#include <mutex>
#include <sstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "common/log_events.h"
#include "runtime/log.h"
#include "runtime/metrics_http.h"
#include "runtime/metrics_textfile.h"
#include "runtime/runtime.h"
#include "tests/free_port.h"
#include "tests/telemetry/collectors/fake_sysfs.h"
#include "tests/wait_until.h"

namespace wirewise {
namespace {

using namespace std::chrono_literals;
namespace fs = std::filesystem;

// NCCL's logger stand-in: the WARNs the runtime gives, for the assertions.
std::mutex gWarnMu;
std::vector<std::string> gWarns;
void captureLog(ncclDebugLogLevel level, unsigned long, const char*, int, const char* fmt, ...) {
  if (level != NCCL_LOG_WARN) return;
  char buf[2048];
  va_list ap;
  va_start(ap, fmt);
  std::vsnprintf(buf, sizeof buf, fmt, ap);
  va_end(ap);
  std::lock_guard<std::mutex> lock(gWarnMu);
  gWarns.emplace_back(buf);
}
std::vector<std::string> takeWarns() {
  std::lock_guard<std::mutex> lock(gWarnMu);
  return std::exchange(gWarns, {});
}

std::string readFile(const std::string& path) {
  std::ifstream f(path);
  std::stringstream s;
  s << f.rdbuf();
  return s.str();
}

struct Reply {
  int status = 0;
  std::string head, body;
};

// One request over a fresh loopback connection; the server closes after its response.
Reply request(int port, const std::string& method, const std::string& target) {
  Reply r;
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  timeval tv{10, 0};
  ::setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  a.sin_port = htons(static_cast<uint16_t>(port));
  if (::connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0) {
    ::close(fd);
    return r;
  }
  const std::string req = method + " " + target + " HTTP/1.1\r\nHost: localhost\r\nContent-Length: 0\r\n\r\n";
  if (::write(fd, req.data(), req.size()) != static_cast<ssize_t>(req.size())) ADD_FAILURE() << "short write";
  std::string all;
  char buf[4096];
  for (ssize_t n; (n = ::read(fd, buf, sizeof buf)) > 0;) all.append(buf, static_cast<size_t>(n));
  ::close(fd);
  const size_t split = all.find("\r\n\r\n");
  if (split == std::string::npos || all.size() < 12) return r;
  r.status = std::stoi(all.substr(9, 3));
  r.head = all.substr(0, split);
  r.body = all.substr(split + 4);
  return r;
}

TEST(MetricsTextfile, WritesByRenameAndRewritesEveryPeriod) {
  collectors::testing::FakeSysfs tmp;  // a private temporary directory, removed afterwards
  std::atomic<int> renders{0};
  std::vector<std::string> warns;
  MetricsTextfile out([&] { return "# TYPE x gauge\nx " + std::to_string(renders.fetch_add(1)) + "\n"; },
                      [&](const std::string& w) { warns.push_back(w); }, tmp.root() + "/a/b", "node1", 42, 20ms);
  std::string problem;
  ASSERT_TRUE(out.start(&problem)) << problem;
  EXPECT_EQ(out.path(), tmp.root() + "/a/b/wirewise-node1-42.prom");
  EXPECT_EQ((fs::status(tmp.root() + "/a").permissions() & fs::perms::all), fs::perms::owner_all);
  EXPECT_EQ(readFile(out.path()), "# TYPE x gauge\nx 0\n");
  ASSERT_TRUE(waitUntil([&] { return renders.load() >= 3; }, 10s));
  out.stop();
  const int last = renders.load() - 1;
  EXPECT_EQ(readFile(out.path()), "# TYPE x gauge\nx " + std::to_string(last) + "\n");
  for (const auto& e : fs::directory_iterator(tmp.root() + "/a/b"))
    EXPECT_EQ(e.path().filename(), "wirewise-node1-42.prom") << "left behind: " << e.path();
  EXPECT_TRUE(warns.empty());
}

TEST(MetricsTextfile, ADirectoryThatCannotBeMadeIsRefused) {
  collectors::testing::FakeSysfs tmp;
  tmp.write("file", "not a directory");
  MetricsTextfile out([] { return std::string(); }, [](const std::string&) {}, tmp.root() + "/file/sub", "h", 1, 1s);
  std::string problem;
  EXPECT_FALSE(out.start(&problem));
  EXPECT_NE(problem.find(tmp.root() + "/file"), std::string::npos) << problem;
}

TEST(MetricsHttp, ServesMetricsAndNothingElse) {
  MetricsHttp http([] { return std::string("# TYPE up gauge\nup 1\n"); });
  std::string problem;
  ASSERT_TRUE(http.start(0, &problem, "127.0.0.1")) << problem;
  const int port = http.port();
  ASSERT_GT(port, 0);
  Reply ok = request(port, "GET", "/metrics");
  EXPECT_EQ(ok.status, 200) << ok.head;
  EXPECT_NE(ok.head.find("Content-Type: text/plain; version=0.0.4"), std::string::npos) << ok.head;
  EXPECT_EQ(ok.body, "# TYPE up gauge\nup 1\n");
  EXPECT_EQ(request(port, "GET", "/metrics?x=1").status, 200);
  EXPECT_EQ(request(port, "GET", "/").status, 404);
  EXPECT_EQ(request(port, "GET", "/metricsx").status, 404);
  EXPECT_EQ(request(port, "POST", "/metrics").status, 405);
  // A second listener on the same port is refused, naming the port.
  MetricsHttp second([] { return std::string(); });
  EXPECT_FALSE(second.start(static_cast<uint16_t>(port), &problem, "127.0.0.1"));
  EXPECT_NE(problem.find(std::to_string(port)), std::string::npos) << problem;
  http.stop();
  EXPECT_EQ(request(port, "GET", "/metrics").status, 0) << "nothing listens after stop()";
}

TEST(MetricsHttp, ClosesAConnectionThatSendsNothing) {
  MetricsHttp http([] { return std::string(); });
  std::string problem;
  ASSERT_TRUE(http.start(0, &problem, "127.0.0.1")) << problem;
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  timeval tv{20, 0};
  ::setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  a.sin_port = htons(http.port());
  ASSERT_EQ(::connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof a), 0);
  const auto t0 = std::chrono::steady_clock::now();
  char c;
  EXPECT_EQ(::read(fd, &c, 1), 0) << "the server must close an idle connection (EOF), not leave it open";
  EXPECT_LT(std::chrono::steady_clock::now() - t0, 15s);
  ::close(fd);
}

TEST(MetricsHttp, LocalRankOffsetsThePort) {
  std::map<std::string, std::string> env;
  const EnvSource src = [&](const char* k) -> const char* {
    auto it = env.find(k);
    return it == env.end() ? nullptr : it->second.c_str();
  };
  EXPECT_EQ(launcherLocalRank(src), std::nullopt);
  env["OMPI_COMM_WORLD_LOCAL_RANK"] = "5";
  EXPECT_EQ(launcherLocalRank(src), 5);
  env["SLURM_LOCALID"] = "2";
  EXPECT_EQ(launcherLocalRank(src), 2);
  env["LOCAL_RANK"] = "x1";
  EXPECT_EQ(launcherLocalRank(src), std::nullopt);
}

// The two settings through the table: off by default, a bad port is one problem naming it and the default
// stays (off), the directory expands like the log's path and "none" turns it off.
TEST(MetricsSettings, ReadThroughTheTable) {
  std::map<std::string, std::string> env;
  const EnvSource src = [&](const char* k) -> const char* {
    auto it = env.find(k);
    return it == env.end() ? nullptr : it->second.c_str();
  };
  std::vector<std::string> warns;
  Settings s = readSettings(src, "node1", 77, &warns);
  EXPECT_EQ(s.prometheusPort, 0);
  EXPECT_EQ(s.prometheusDir, "");
  env[settingName(&Settings::prometheusPort)] = "80";
  env[settingName(&Settings::prometheusDir)] = "/metrics/%h-%p";
  s = readSettings(src, "node1", 77, &warns);
  EXPECT_EQ(s.prometheusPort, 0);
  ASSERT_EQ(warns.size(), 1u);
  EXPECT_NE(warns[0].find("WIREWISE_PROMETHEUS_PORT=\"80\""), std::string::npos) << warns[0];
  EXPECT_NE(warns[0].find("1024 .. 65535"), std::string::npos) << warns[0];
  EXPECT_EQ(s.prometheusDir, "/metrics/node1-77");
  env[settingName(&Settings::prometheusPort)] = "9464";
  env[settingName(&Settings::prometheusDir)] = "none";
  warns.clear();
  s = readSettings(src, "node1", 77, &warns);
  EXPECT_TRUE(warns.empty());
  EXPECT_EQ(s.prometheusPort, 9464);
  EXPECT_EQ(s.prometheusDir, "");
}

// The real runtime from environment settings: both outputs on, the endpoint at base port + LOCAL_RANK.
TEST(MetricsRuntime, BothOutputsFromTheEnvironment) {
  log::setLogger(captureLog);
  collectors::testing::FakeSysfs tmp;
  const int port = freeLoopbackPort();
  ASSERT_GT(port, 1024);
  std::map<std::string, std::string> env = {{"WIREWISE_LOG", "none"},
                                            {"WIREWISE_SYNC", "off"},
                                            {"WIREWISE_COLLECT_MS", "0"},
                                            {"WIREWISE_SYSFS_ROOT", tmp.root()},
                                            {"WIREWISE_PROMETHEUS_PORT", std::to_string(port - 1)},
                                            {"LOCAL_RANK", "1"},
                                            {"WIREWISE_PROMETHEUS_DIR", tmp.root() + "/prom-%p"}};
  ASSERT_EQ(Runtime::references(), 0);
  Runtime* rt = Runtime::acquire([&](const char* k) -> const char* {
    auto it = env.find(k);
    return it == env.end() ? nullptr : it->second.c_str();
  });
  EXPECT_TRUE(takeWarns().empty());
  Reply first = request(port, "GET", "/metrics");
  EXPECT_EQ(first.status, 200);
  EXPECT_NE(first.body.find("wirewise_info{version=\"" WIREWISE_VERSION "\""), std::string::npos) << first.body;
  logev::Summary s{.comm = "0x0000000000000007", .rank = 0, .intervalMs = 100, .rows = {}, .drops = {}};
  s.rows.push_back({.coll = "allreduce", .algo = "ring", .proto = "ll", .channels = 2, .count = 9, .busBwGBs = 3.5});
  rt->event(s);
  const Reply second = request(port, "GET", "/metrics");
  EXPECT_NE(second.body.find("nccl_bus_bandwidth_gbs{comm_name=\"unknown\",comm_id=\"0x0000000000000007\""),
            std::string::npos)
      << second.body;
  Runtime::release();
  const std::string file = tmp.root() + "/prom-" + std::to_string(::getpid()) + "/wirewise-";
  bool found = false;
  for (const auto& e : fs::directory_iterator(tmp.root() + "/prom-" + std::to_string(::getpid()))) {
    ASSERT_EQ(e.path().extension(), ".prom") << e.path();
    EXPECT_NE(readFile(e.path()).find("nccl_bus_bandwidth_gbs{"), std::string::npos);
    found = true;
  }
  EXPECT_TRUE(found) << "no textfile under " << file;
  EXPECT_EQ(request(port, "GET", "/metrics").status, 0) << "the endpoint goes with the runtime";
}

TEST(MetricsRuntime, APortInUseIsOneWarnAndNoEndpoint) {
  log::setLogger(captureLog);
  takeWarns();
  MetricsHttp squatter([] { return std::string("squatter\n"); });
  std::string problem;
  ASSERT_TRUE(squatter.start(0, &problem)) << problem;
  const std::string port = std::to_string(squatter.port());
  std::map<std::string, std::string> env = {{"WIREWISE_LOG", "none"},
                                            {"WIREWISE_SYNC", "off"},
                                            {"WIREWISE_COLLECT_MS", "0"},
                                            {"WIREWISE_PROMETHEUS_PORT", port}};
  Runtime::acquire([&](const char* k) -> const char* {
    auto it = env.find(k);
    return it == env.end() ? nullptr : it->second.c_str();
  });
  const std::vector<std::string> warns = takeWarns();
  Runtime::release();
  ASSERT_EQ(warns.size(), 1u);
  EXPECT_NE(warns[0].find(port), std::string::npos) << warns[0];
  EXPECT_NE(warns[0].find("WIREWISE_PROMETHEUS_PORT"), std::string::npos) << warns[0];
  EXPECT_EQ(request(squatter.port(), "GET", "/metrics").body, "squatter\n");
}

}  // namespace
}  // namespace wirewise
