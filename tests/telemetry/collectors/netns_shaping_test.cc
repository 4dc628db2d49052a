// The netdev and TCP_INFO collectors against real kernel counters: two network namespaces joined by a
// veth pair, a bounded TCP transfer between them, `tc tbf` shaping on the sender's veth changed from
// 200 to 50 Mbit/s mid-test. The collectors (production code, sysfs root = a sysfs mounted inside the
// sender's namespace) must follow the shaped rate within 10% in each phase, and always match the bytes
// the qdisc itself reports sending. If the machine is too loaded to drive the link at the shaped rate
// (the qdisc's own count says so), the run is repeated once, then skipped with that reason. Needs root,
// `ip` and `tc`; skips with the reason otherwise. Namespaces are deleted even when the test fails.
#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include "telemetry/collectors/collector_set.h"
#include "tests/wait_until.h"

namespace wirewise::collectors {
namespace {

using namespace std::chrono_literals;

constexpr double kRatesMbit[2] = {200, 50};
constexpr auto kPhase = 5000ms;
// TCP ramp-up and estimator convergence before a phase is judged: after the 4:1 step the smoothed
// estimate (tau 0.5 s) is within 3*e^-5 = 2% of the new rate after 2.5 s.
constexpr auto kSettle = 2500ms;
constexpr auto kPeriod = 250ms;
constexpr int kPort = 47001;  // + attempt
constexpr int kAttempts = 2;  // x 14 s at most: the test stays under 30 s
// Two streams: TCP small queues let one socket keep only ~1 ms of data in the qdisc, so on a loaded
// 2-core machine a single stream's softirq hiccups leave the shaped link idle; two keep it busy.
constexpr int kStreams = 2;

struct PhaseResult {
  // The netdev collector's smoothed tx estimate over the settled part of the phase, and at its end.
  double meanBps = 0, minBps = 0, maxBps = 0, endBps = 0, tcpDeliveryBps = 0;
  int samples = 0;
  // Ground truth over the same window: bytes the tbf qdisc itself sent (`tc -s qdisc`), per second.
  double truthBps = 0;
};
struct LabResult {
  int ok = 0;
  char error[256] = {};
  PhaseResult phase[2];
};

int sh(const std::string& cmd) { return std::system((cmd + " >/dev/null 2>&1").c_str()); }

bool joinNetns(const std::string& ns) {
  int fd = ::open(("/var/run/netns/" + ns).c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return false;
  bool ok = ::setns(fd, CLONE_NEWNET) == 0;
  ::close(fd);
  return ok;
}

// "Sent <n> bytes" of the root qdisc of `dev`, in the caller's network namespace; 0 if unreadable.
uint64_t qdiscSentBytes(const std::string& dev) {
  FILE* f = ::popen(("tc -s qdisc show dev " + dev + " 2>/dev/null").c_str(), "r");
  if (!f) return 0;
  char line[512];
  uint64_t sent = 0;
  while (std::fgets(line, sizeof line, f)) {
    if (const char* p = std::strstr(line, "Sent "); p && sent == 0) sent = std::strtoull(p + 5, nullptr, 10);
  }
  ::pclose(f);
  return sent;
}

double median(std::vector<double> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

// Runs in a forked child (single-threaded at fork): enters namespace A, mounts a private sysfs that
// shows A's devices, starts a receiver thread in B and a sender in A, and samples the collectors.
LabResult runLab(const std::string& nsA, const std::string& nsB, const std::string& ifA, const std::string& sysDir,
                 int port) {
  LabResult r;
  auto fail = [&r](const std::string& why) {
    std::snprintf(r.error, sizeof r.error, "%s (errno %d: %s)", why.c_str(), errno, std::strerror(errno));
    return r;
  };
  // The shaped link must really run at the shaped rate: on a busy machine (CI, other builds) a nice-0
  // sender leaves the qdisc empty. Lowest real-time priority for the lab's threads (they block in
  // send/read/sleep; tc/popen children run normal), else the highest nice weight; harmless if refused.
  sched_param rt{};
  rt.sched_priority = 1;
  if (::sched_setscheduler(0, SCHED_FIFO | SCHED_RESET_ON_FORK, &rt) != 0) (void)::setpriority(PRIO_PROCESS, 0, -20);
  if (!joinNetns(nsA)) return fail("setns " + nsA);
  if (::unshare(CLONE_NEWNS) != 0) return fail("unshare(CLONE_NEWNS)");
  if (::mount(nullptr, "/", nullptr, MS_REC | MS_PRIVATE, nullptr) != 0) return fail("make / private");
  if (::mount("sysfs", sysDir.c_str(), "sysfs", 0, nullptr) != 0) return fail("mount sysfs");

  std::atomic<int> listening{0};
  std::thread receiver([&] {
    if (!joinNetns(nsB)) {
      listening = -1;
      return;
    }
    int ls = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    int one = 1;
    ::setsockopt(ls, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_port = htons(static_cast<uint16_t>(port));
    ::inet_pton(AF_INET, "10.213.77.2", &a.sin_addr);
    if (::bind(ls, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0 || ::listen(ls, kStreams) != 0) {
      listening = -1;
      ::close(ls);
      return;
    }
    listening = 1;
    // One reader per connection, so a slow reader never throttles the other stream.
    std::vector<std::thread> readers;
    for (int i = 0; i < kStreams; ++i) {
      int c = ::accept(ls, nullptr, nullptr);
      if (c < 0) break;
      readers.emplace_back([c] {
        std::vector<char> buf(1 << 16);
        while (::read(c, buf.data(), buf.size()) > 0) {
        }
        ::close(c);
      });
    }
    for (auto& t : readers) t.join();
    ::close(ls);
  });
  if (!waitUntil([&] { return listening != 0; }, 30s)) {
    receiver.detach();  // stuck in setup: this child process reports and exits, the thread goes with it
    return fail("receiver setup in " + nsB + " did not finish within 30 s");
  }
  if (listening < 0) {
    receiver.join();
    return fail("receiver setup in " + nsB);
  }

  sockaddr_in to{};
  to.sin_family = AF_INET;
  to.sin_port = htons(static_cast<uint16_t>(port));
  ::inet_pton(AF_INET, "10.213.77.2", &to.sin_addr);
  std::vector<int> socks;
  for (int i = 0; i < kStreams; ++i) {
    int s = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (::connect(s, reinterpret_cast<sockaddr*>(&to), sizeof to) != 0) {
      ::close(s);
      for (int o : socks) ::shutdown(o, SHUT_RDWR);
      receiver.join();
      return fail("connect");
    }
    socks.push_back(s);
  }
  std::atomic<bool> stop{false};
  std::vector<std::thread> senders;
  for (int s : socks) {
    senders.emplace_back([&stop, s] {
      std::vector<char> buf(1 << 16, 'w');
      while (!stop.load()) {
        if (::send(s, buf.data(), buf.size(), MSG_NOSIGNAL) <= 0) break;
      }
    });
  }

  CollectorConfig cfg;
  cfg.sysfsRoot = sysDir;
  cfg.ib = false;
  cfg.nvml = false;
  cfg.netdevs = {ifA};
  cfg.smoothingSeconds = 0.5;
  auto set = CollectorSet::create(cfg, nullptr);
  for (size_t i = 0; i < socks.size(); ++i) set->addTcpSocket(socks[i], "lab" + std::to_string(i));

  auto t0 = Clock::now();
  auto next = t0;
  for (int ph = 0; ph < 2; ++ph) {
    sh("tc qdisc change dev " + ifA + " root tbf rate " + std::to_string(static_cast<int>(kRatesMbit[ph])) +
       "mbit burst 64kb latency 50ms");
    auto phaseStart = Clock::now();
    std::vector<double> estimates, delivery;
    Clock::time_point truthStart{};
    uint64_t sentStart = 0;
    while (Clock::now() - phaseStart < kPhase) {
      next += kPeriod;
      std::this_thread::sleep_until(next);
      auto now = Clock::now();
      set->sample(now);
      if (now - phaseStart < kSettle) continue;
      if (truthStart == Clock::time_point{}) {
        truthStart = Clock::now();
        sentStart = qdiscSentBytes(ifA);
      }
      double tcpSum = 0;
      for (const LinkHealth& l : set->snapshot().links) {
        if (l.kind == LinkKind::kNetdev && l.rateValid) estimates.push_back(l.txBps);
        if (l.kind == LinkKind::kTcp) tcpSum += l.deliveryBps;
      }
      delivery.push_back(tcpSum);
    }
    PhaseResult& pr = r.phase[ph];
    uint64_t sentEnd = qdiscSentBytes(ifA);
    double truthSeconds = std::chrono::duration<double>(Clock::now() - truthStart).count();
    if (sentEnd > sentStart && truthSeconds > 0) pr.truthBps = static_cast<double>(sentEnd - sentStart) / truthSeconds;
    pr.samples = static_cast<int>(estimates.size());
    if (!estimates.empty()) {
      double sum = 0;
      for (double v : estimates) sum += v;
      pr.meanBps = sum / static_cast<double>(estimates.size());
      pr.minBps = *std::min_element(estimates.begin(), estimates.end());
      pr.maxBps = *std::max_element(estimates.begin(), estimates.end());
      pr.endBps = estimates.back();
    }
    pr.tcpDeliveryBps = median(delivery);
  }
  stop = true;
  for (int s : socks) ::shutdown(s, SHUT_RDWR);
  for (auto& t : senders) t.join();
  receiver.join();
  for (int s : socks) ::close(s);
  r.ok = 1;
  return r;
}

struct NetnsGuard {
  std::string a, b;
  ~NetnsGuard() {
    sh("ip netns del " + a);
    sh("ip netns del " + b);
  }
};

TEST(NetnsShaping, NetdevAndTcpInfoFollowTbfRateChange) {
  if (::geteuid() != 0) GTEST_SKIP() << "needs root to create network namespaces";
  if (sh("command -v ip") != 0 || sh("command -v tc") != 0) GTEST_SKIP() << "needs iproute2 (ip, tc)";
  const std::string id = std::to_string(::getpid() % 100000);
  NetnsGuard ns{"ww-coll-" + id + "-a", "ww-coll-" + id + "-b"};
  const std::string ifA = "wwc" + id + "a", ifB = "wwc" + id + "b";
  if (sh("ip netns add " + ns.a) != 0 || sh("ip netns add " + ns.b) != 0) {
    GTEST_SKIP() << "cannot create network namespaces (ip netns add failed)";
  }
  const std::vector<std::string> setup = {
      "ip link add " + ifA + " netns " + ns.a + " type veth peer name " + ifB + " netns " + ns.b,
      "ip -n " + ns.a + " addr add 10.213.77.1/30 dev " + ifA,
      "ip -n " + ns.b + " addr add 10.213.77.2/30 dev " + ifB,
      // No GSO on the shaped veth: (1) a 64 KiB GSO packet needs tbf's whole 64 KiB bucket, so a timer
      // wake-up late by a fraction of a millisecond (2 shared cores) leaves the link idle; (2) tbf charges
      // each segment's headers while tx_bytes counts a GSO packet's headers once (~4% apart). With
      // MTU-sized packets both count the same bytes and the bucket absorbs scheduling jitter.
      "ip -n " + ns.a + " link set " + ifA + " gso_max_segs 1",
      "ip -n " + ns.a + " link set " + ifA + " up",
      "ip -n " + ns.b + " link set " + ifB + " up",
      "ip netns exec " + ns.a + " tc qdisc add dev " + ifA + " root tbf rate 200mbit burst 64kb latency 50ms",
  };
  for (const std::string& c : setup) {
    if (sh(c) != 0) GTEST_SKIP() << "namespace/veth/tbf setup failed: " << c;
  }
  char tmpl[] = "/tmp/ww-netns-sys-XXXXXX";
  ASSERT_NE(::mkdtemp(tmpl), nullptr);
  const std::string sysDir = tmpl;

  // One attempt = one forked lab run (about 11 s), bounded to 14 s.
  auto attempt = [&](int n, LabResult* r) {
    int fds[2];
    if (::pipe(fds) != 0) return std::string("pipe failed");
    pid_t pid = ::fork();
    if (pid < 0) return std::string("fork failed");
    if (pid == 0) {
      ::prctl(PR_SET_PDEATHSIG, SIGKILL);
      ::close(fds[0]);
      LabResult res = runLab(ns.a, ns.b, ifA, sysDir, kPort + n);
      ssize_t w = ::write(fds[1], &res, sizeof res);
      ::_exit(w == static_cast<ssize_t>(sizeof res) ? 0 : 1);
    }
    ::close(fds[1]);
    pollfd p{fds[0], POLLIN, 0};
    size_t got = 0;
    auto deadline = std::chrono::steady_clock::now() + 14s;
    while (got < sizeof *r && std::chrono::steady_clock::now() < deadline) {
      if (::poll(&p, 1, 500) <= 0) continue;
      ssize_t k = ::read(fds[0], reinterpret_cast<char*>(r) + got, sizeof *r - got);
      if (k <= 0) break;
      got += static_cast<size_t>(k);
    }
    ::close(fds[0]);
    if (got < sizeof *r) ::kill(pid, SIGKILL);
    int status = 0;
    ::waitpid(pid, &status, 0);
    if (got < sizeof *r) return std::string("lab child did not report within 14 s");
    if (!r->ok) return std::string("lab child failed: ") + r->error;
    return std::string();
  };

  std::string unsaturated;
  for (int n = 0; n < kAttempts; ++n) {
    LabResult r;
    std::string err = attempt(n, &r);
    if (!err.empty()) {
      ::rmdir(sysDir.c_str());
      FAIL() << err;
    }
    bool saturated = true;
    for (int ph = 0; ph < 2; ++ph) {
      const PhaseResult& pr = r.phase[ph];
      const double shaped = kRatesMbit[ph] * 1e6 / 8;
      std::printf("attempt %d phase %d (%g Mbit/s = %.3f MB/s): qdisc sent %.3f MB/s (%+.1f%%); netdev estimate "
                  "mean %.3f MB/s (%+.1f%% of shaped, %+.1f%% of sent), end %.3f, settled range [%.3f..%.3f] over "
                  "%d samples; TCP delivery rate median %.3f MB/s (%+.1f%%)\n",
                  n, ph, kRatesMbit[ph], shaped / 1e6, pr.truthBps / 1e6, 100 * (pr.truthBps / shaped - 1),
                  pr.meanBps / 1e6, 100 * (pr.meanBps / shaped - 1), 100 * (pr.meanBps / pr.truthBps - 1),
                  pr.endBps / 1e6, pr.minBps / 1e6, pr.maxBps / 1e6, pr.samples, pr.tcpDeliveryBps / 1e6,
                  100 * (pr.tcpDeliveryBps / shaped - 1));
      ASSERT_GE(pr.samples, 5);
      ASSERT_GT(pr.truthBps, 0) << "could not read the qdisc's sent bytes";
      // Always: the collector's estimate matches what the link really carried (kernel's own count).
      EXPECT_NEAR(pr.meanBps / pr.truthBps, 1.0, 0.10) << "phase " << ph;
      if (pr.truthBps < 0.9 * shaped) saturated = false;
    }
    if (!saturated) {
      unsaturated += " attempt " + std::to_string(n) + ": the link carried less than 90% of the shaped rate;";
      continue;
    }
    for (int ph = 0; ph < 2; ++ph) {
      const PhaseResult& pr = r.phase[ph];
      const double shaped = kRatesMbit[ph] * 1e6 / 8;
      // The criterion: the estimate follows the shaping within 10% in each phase (mean over the
      // settled window; single samples follow the real, jittery traffic and are printed above).
      EXPECT_NEAR(pr.meanBps / shaped, 1.0, 0.10) << "phase " << ph;
      // Sum over the streams of each socket's latest non-app-limited TCP_INFO delivery rate. It counts
      // payload only (1448 of 1514 bytes per full frame), ~4.4% under the shaped wire rate: a 15% band.
      EXPECT_NEAR(pr.tcpDeliveryBps / shaped, 1.0, 0.15) << "phase " << ph;
    }
    ::rmdir(sysDir.c_str());
    return;
  }
  ::rmdir(sysDir.c_str());
  // The collector matched the qdisc's own count in every attempt (checked above), but the machine was
  // too loaded to drive the link at the shaped rate, so "follows the shaping" could not be judged.
  GTEST_SKIP() << "machine too loaded to saturate the shaped veth:" << unsaturated;
}

}  // namespace
}  // namespace wirewise::collectors
