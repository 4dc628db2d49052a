// Competing flows on one rail, real kernels' TCP between two network namespaces (the fixture of
// netns_fixture.h): both rails shaped by `tc tbf` to 200 Mbit/s, wirewise streaming A to B over both,
// every byte verified. Mid-run, k bulk TCP flows of another "job" start on rail 0 only (A to B, bound to
// rail 0's addresses) and stop 4 s later. TCP fairness would leave wirewise about 1/(1+k) of rail 0 (how
// much the flows really take is measured): the scheduler's share of rail 0 must follow what rail 0 leaves
// to wirewise, and move within a bounded time; wirewise's goodput must stay near what is left to it (rail 1
// whole plus its part of rail 0), above what equal static striping would get (2 x rail 0's remainder), and
// the share must come back once the competition stops.
// Root only (network namespaces); skipped otherwise.
#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sched.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <future>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include "net/transport.h"
#include "tests/net/netns_fixture.h"
#include "tests/net/transport_util.h"
#include "tests/wait_until.h"

namespace wirewise::net {
namespace {

using Clock = std::chrono::steady_clock;
using testing::Netns;
using testing::waitDone;
using testing::word;

// k bulk TCP flows from namespace A to B over rail 0 (10.78.0.1 to 10.78.0.2): a sender thread writing
// 64 KiB to every writable socket, a receiver thread reading and counting. Stands in for another job
// sharing the rail; its own threads, so that nothing outside the test's namespaces is needed.
class Competitor {
 public:
  Competitor(int nsA, int nsB, int flows) : nsA_(nsA), nsB_(nsB), flows_(flows) {}
  ~Competitor() { stop(); }
  void start() {
    receiver_ = std::thread([this] { receive(); });
    sender_ = std::thread([this] { send(); });
  }
  void stop() {
    stop_ = true;
    if (sender_.joinable()) sender_.join();
    if (receiver_.joinable()) receiver_.join();
  }
  uint64_t received() const { return received_.load(); }
  const std::string& error() const { return error_; }  // after stop()

 private:
  static sockaddr_in addr(const char* ip, uint16_t port) {
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_port = htons(port);
    inet_pton(AF_INET, ip, &a.sin_addr);
    return a;
  }
  void receive() {
    int l = -1;
    std::vector<pollfd> fds;
    auto fail = [&](const char* what) {
      error_ = what;
      port_.set_value(0);
    };
    if (setns(nsB_, CLONE_NEWNET) != 0) return fail("setns B");
    l = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_in a = addr("10.78.0.2", 0);
    socklen_t len = sizeof a;
    if (l < 0 || bind(l, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0 || ::listen(l, flows_) != 0 ||
        getsockname(l, reinterpret_cast<sockaddr*>(&a), &len) != 0) {
      if (l >= 0) close(l);
      return fail("listen");
    }
    port_.set_value(ntohs(a.sin_port));
    pollfd lp{l, POLLIN, 0};
    while (static_cast<int>(fds.size()) < flows_ && !stop_.load())
      if (poll(&lp, 1, 100) > 0)
        if (int fd = ::accept4(l, nullptr, nullptr, SOCK_CLOEXEC); fd >= 0) fds.push_back({fd, POLLIN, 0});
    close(l);
    std::vector<char> buf(1 << 16);
    size_t live = fds.size();
    auto stoppedAt = Clock::time_point::max();
    while (live > 0) {  // until every flow has ended (the sender closes them at stop), 5 s at most after
      if (stop_.load() && stoppedAt == Clock::time_point::max()) stoppedAt = Clock::now();
      if (Clock::now() - stoppedAt > std::chrono::seconds(5)) break;
      if (poll(fds.data(), fds.size(), 100) <= 0) continue;
      for (auto& p : fds) {
        if (p.fd < 0 || (p.revents & (POLLIN | POLLHUP | POLLERR)) == 0) continue;
        ssize_t n = read(p.fd, buf.data(), buf.size());
        if (n > 0) {
          received_ += static_cast<uint64_t>(n);
        } else {
          close(p.fd);
          p.fd = -1;
          --live;
        }
      }
    }
    for (auto& p : fds)
      if (p.fd >= 0) close(p.fd);
  }
  void send() {
    const uint16_t port = port_future_.get();
    if (port == 0) return;
    if (setns(nsA_, CLONE_NEWNET) != 0) return void(error_ = "setns A");
    std::vector<pollfd> fds;
    for (int i = 0; i < flows_; ++i) {
      int s = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
      sockaddr_in self = addr("10.78.0.1", 0), peer = addr("10.78.0.2", port);
      if (s < 0 || bind(s, reinterpret_cast<sockaddr*>(&self), sizeof self) != 0 ||
          ::connect(s, reinterpret_cast<sockaddr*>(&peer), sizeof peer) != 0) {
        error_ = "connect";
        if (s >= 0) close(s);
        break;
      }
      fds.push_back({s, POLLOUT, 0});
    }
    std::vector<char> buf(1 << 16, 'c');
    while (!stop_.load() && static_cast<int>(fds.size()) == flows_) {
      if (poll(fds.data(), fds.size(), 100) <= 0) continue;
      for (auto& p : fds)
        if (p.revents & POLLOUT) (void)::send(p.fd, buf.data(), buf.size(), MSG_DONTWAIT | MSG_NOSIGNAL);
    }
    for (auto& p : fds) close(p.fd);
  }

  const int nsA_, nsB_, flows_;
  std::atomic<bool> stop_{false};
  std::atomic<uint64_t> received_{0};
  std::promise<uint16_t> port_;
  std::future<uint16_t> port_future_ = port_.get_future();
  std::thread sender_, receiver_;
  std::string error_;
};

struct Sample {
  double t;
  double share0;
  bool up0;
  uint64_t rail0, rail1;  // wirewise's bytes delivered per rail
  uint64_t competitor;    // the competing flows' bytes received
};

TEST_F(Netns, CompetingFlowsOnOneRailMoveTheShareToTheOtherAndBack) {
  constexpr int kRateMbit = 200;  // per rail
  constexpr int kFlows = 4;       // competing flows on rail 0
  constexpr double kWarmup = 3.0, kCompete = 4.0, kAfter = 3.0;
  TransportConfig config;
  config.chunkBytes = 64 << 10;
  setConfig(config);
  shape(0, "add", kRateMbit);
  shape(1, "add", kRateMbit);
  constexpr size_t kMsg = 512 << 10;
  constexpr size_t kWords = kMsg / 8;
  constexpr int kWindow = 16;
  std::string sendError, recvError;
  std::atomic<bool> stop{false}, connected{false};
  std::atomic<int> sent{-1};
  std::atomic<void*> sendComm{nullptr};
  std::vector<std::pair<double, size_t>> arrivals;  // (seconds since start, bytes)
  arrivals.reserve(1 << 16);
  std::vector<Sample> samples;
  samples.reserve(1 << 12);
  const auto t00 = Clock::now();
  auto since = [&](Clock::time_point t) { return std::chrono::duration<double>(t - t00).count(); };
  double competeAt = -1, competeEnd = -1;
  Competitor competitor(nsA(), nsB(), kFlows);

  // Samples the scheduler's view every 5 ms from another thread (as the runtime would) and drives the
  // phases: warm-up, competition, after.
  std::thread control([&] {
    waitUntil([&] { return connected.load(); }, std::chrono::seconds(30));
    const double t0 = since(Clock::now());
    while (connected.load()) {
      const double t = since(Clock::now());
      if (competeAt < 0 && t >= t0 + kWarmup) {
        competitor.start();
        competeAt = t;
      } else if (competeAt >= 0 && competeEnd < 0 && t >= competeAt + kCompete) {
        // stop() returns once the flows' last byte has arrived (their socket buffers drain after close),
        // so the competition ends here, not when it was asked to.
        competitor.stop();
        competeEnd = since(Clock::now());
      } else if (competeEnd >= 0 && t >= competeEnd + kAfter) {
        break;
      }
      CommTelemetry tele;
      void* sc = sendComm.load();
      if (sc != nullptr && sendTelemetry(sc, &tele))
        samples.push_back({t, tele.rail[0].share, tele.rail[0].up, tele.rail[0].bytesDelivered, tele.rail[1].bytesDelivered,
                           competitor.received()});
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
    competitor.stop();
    stop = true;
  });
  runFns(
      [&](void* sc) {
        if (sc == nullptr) {
          sendError = "connect";
          stop = true;
          return;
        }
        sendComm = sc;
        connected = true;
        std::vector<std::vector<uint64_t>> bufs(kWindow, std::vector<uint64_t>(kWords));
        std::vector<void*> reqs(kWindow, nullptr);
        int i = 0;
        for (; !stop.load(); ++i) {
          void*& slot = reqs[i % kWindow];
          if (slot != nullptr && waitDone(slot, nullptr) != Status::kOk) break;
          auto& b = bufs[i % kWindow];
          for (size_t w = 0; w < kWords; ++w) b[w] = word(i, w);
          slot = nullptr;
          while (slot == nullptr)
            if (isend(sc, b.data(), kMsg, 0, &slot) != Status::kOk) break;
          if (slot == nullptr) break;
        }
        if (!stop.load()) sendError = "send failed at message " + std::to_string(i);
        sent = i;
        connected = false;  // ends the control loop early on an error
        for (void* r : reqs)
          if (r != nullptr && waitDone(r, nullptr) != Status::kOk && sendError.empty()) sendError = "final send test";
        sendComm = nullptr;
      },
      [&](void* rc) {
        recvError = testing::receiveStream(rc, sent, kWindow, kMsg, [&] { return since(Clock::now()); }, &arrivals);
      });
  control.join();
  ASSERT_EQ(sendError, "");
  ASSERT_EQ(recvError, "");
  ASSERT_EQ(competitor.error(), "");
  ASSERT_EQ(static_cast<int>(arrivals.size()), sent.load());  // every message arrived, every byte checked
  ASSERT_GE(competeEnd, 0.0) << "the run ended before the competition did";
  ASSERT_GT(samples.size(), 100u);
  const double end = arrivals.back().first;

  auto goodput = [&](double from, double to) {
    double sum = 0;
    for (auto& [t, b] : arrivals)
      if (t > from && t <= to) sum += static_cast<double>(b);
    return sum / (to - from);
  };
  // The sampled counters' rate between two times (nearest samples at or after each).
  auto at = [&](double t) {
    for (const Sample& s : samples)
      if (s.t >= t) return s;
    return samples.back();
  };
  auto meanShare = [&](double from, double to) {
    double sum = 0;
    int n = 0;
    for (const Sample& s : samples)
      if (s.t > from && s.t <= to) {
        sum += s.share0;
        ++n;
      }
    return n > 0 ? sum / n : -1.0;
  };
  // The first sampled time from `from` on at which cond(share of rail 0) holds, relative to `from`.
  auto firstAfter = [&](double from, auto cond) {
    for (const Sample& s : samples)
      if (s.t >= from && cond(s.share0)) return s.t - from;
    return -1.0;
  };

  const double before = goodput(competeAt - 2.0, competeAt);
  const double during = goodput(competeAt + 1.0, competeEnd);
  const double after = goodput(competeEnd + 1.0, end);
  const double shareBefore = meanShare(competeAt - 1.0, competeAt);
  const double shareDuring = meanShare(competeAt + 1.0, competeEnd);
  const double shareAfter = meanShare(competeEnd + 1.0, end);
  const double shiftAfter = firstAfter(competeAt, [](double s) { return s < 0.4; });
  const double backAfter = firstAfter(competeEnd, [](double s) { return s > 0.4; });
  // Longest time without a message arriving while the flows ran: a chunk of wirewise's on rail 0 that
  // TCP must retransmit after a timeout (a tail loss in the full tbf queue) holds its message up.
  double stall = 0, last = competeAt, minShare = 1;
  bool down0 = false;
  for (auto& [t, b] : arrivals) {
    if (t <= competeAt || t > competeEnd) continue;
    stall = std::max(stall, t - last);
    last = t;
  }
  for (const Sample& s : samples) {
    if (s.t < competeAt || s.t > competeEnd) continue;
    minShare = std::min(minShare, s.share0);
    down0 = down0 || !s.up0;
  }
  const Sample s0 = at(competeAt + 1.0), s1 = at(competeEnd);
  const double span = s1.t - s0.t;
  const double ww0 = static_cast<double>(s1.rail0 - s0.rail0) / span;       // wirewise on rail 0
  const double ww1 = static_cast<double>(s1.rail1 - s0.rail1) / span;       // wirewise on rail 1
  const double comp = static_cast<double>(s1.competitor - s0.competitor) / span;  // the competing flows
  // What is left to wirewise: rail 1 whole and a fair 1/(1+k) of rail 0, in the goodput this run measured
  // for two free rails; equal static striping would be held to twice its part of rail 0.
  const double available = before / 2.0 * (1.0 + 1.0 / (1 + kFlows));
  const double staticFair = before / 2.0 * 2.0 / (1 + kFlows);
  // The same from the measured competition: rail 0's goodput ceiling (half of `before`) less the flows' rate.
  const double staticMeasured = 2.0 * std::max(0.0, before / 2.0 - comp);

  std::string per250, share250, comp250;
  char buf[32];
  for (double t = competeAt - 1.0; t + 0.25 <= end; t += 0.25) {
    std::snprintf(buf, sizeof buf, " %.1f", goodput(t, t + 0.25) / 1e6);
    per250 += buf;
    std::snprintf(buf, sizeof buf, " %.2f", at(t + 0.25).share0);
    share250 += buf;
    const Sample a = at(t), b = at(t + 0.25);
    std::snprintf(buf, sizeof buf, " %.1f",
                  b.t > a.t ? static_cast<double>(b.competitor - a.competitor) / (b.t - a.t) / 1e6 : 0.0);
    comp250 += buf;
  }
  std::printf("[netns competing] rails %d+%d Mbit/s, %d messages of 512 KiB verified; %d competing flows on rail 0 "
              "for %.1f s\n",
              kRateMbit, kRateMbit, static_cast<int>(arrivals.size()), kFlows, competeEnd - competeAt);
  std::printf("[netns competing] goodput %.1f MB/s before, %.1f MB/s during (from 1 s in; %.0f%% of the %.1f MB/s left "
              "to it: rail 1 + 1/%d of rail 0), %.1f MB/s after (from 1 s after)\n",
              before / 1e6, during / 1e6, 100 * during / available, available / 1e6, 1 + kFlows, after / 1e6);
  std::printf("[netns competing] during: wirewise %.1f MB/s on rail 0 and %.1f on rail 1, the competing flows %.1f MB/s "
              "on rail 0; equal static striping would be held to 2 x rail 0's remainder: %.1f MB/s (fair 1/%d) or "
              "%.1f MB/s (rail 0's ceiling less the flows' measured rate); wirewise got %.1fx / %.1fx that\n",
              ww0 / 1e6, ww1 / 1e6, comp / 1e6, staticFair / 1e6, 1 + kFlows, staticMeasured / 1e6,
              during / staticFair, staticMeasured > 0 ? during / staticMeasured : 0.0);
  std::printf("[netns competing] share of rail 0: %.2f before, %.2f during (lowest %.2f, rail 0 %s), %.2f after; "
              "< 0.4 %.3f s after the flows started, > 0.4 %.3f s after they stopped; longest stall during %.0f ms\n",
              shareBefore, shareDuring, minShare, down0 ? "declared down" : "up throughout", shareAfter, shiftAfter,
              backAfter, stall * 1e3);
  std::printf("[netns competing] goodput per 250 ms from 1 s before the flows (MB/s):%s\n", per250.c_str());
  std::printf("[netns competing] share of rail 0 at the end of each 250 ms:%s\n", share250.c_str());
  std::printf("[netns competing] the competing flows per 250 ms (MB/s):%s\n", comp250.c_str());

  // What rail 0 actually left to wirewise, from the flows' measured rate (TCP does not split rail 0 evenly
  // among one paced and four bulk flows, and on a busy 2-core box the flows' own threads may get little
  // CPU: one ctest run measured them at 4.9 MB/s, with wirewise keeping 19 MB/s of rail 0), and the share
  // a scheduler that follows it would give rail 0.
  const double rail0Left = std::max(0.0, before / 2.0 - comp);
  const double expectedShare = rail0Left / (rail0Left + before / 2.0);
  const double threshold = (shareBefore + expectedShare) / 2.0;
  // The flows take their part of rail 0 only once their TCP windows have grown and their threads get the
  // CPU: in most runs at once, in two full ctest runs after 1.2 and 1.5 s (wirewise kept 42-44 of 48 MB/s
  // until then, and its share followed within 0.25 s once they took it), once after a first 100 ms burst.
  // So the share's move is timed from the first sample from which the flows' rate stayed at half their
  // mean rate or more over two windows of 250 ms, the one before it and the one after.
  auto compRate = [&](double from, double to) {
    const Sample a = at(from), b = at(to);
    return b.t - a.t >= 0.1 ? static_cast<double>(b.competitor - a.competitor) / (b.t - a.t) : 0.0;
  };
  double tookAt = -1;
  for (const Sample& s : samples) {
    if (s.t < competeAt + 0.25 || s.t + 0.25 > competeEnd) continue;
    if (compRate(s.t - 0.25, s.t) >= 0.5 * comp && compRate(s.t, s.t + 0.25) >= 0.5 * comp) {
      tookAt = s.t - 0.25;  // the start of the first window
      break;
    }
  }
  const double shiftHalfway = tookAt < 0 ? -1.0 : firstAfter(tookAt, [&](double s) { return s < threshold; });
  std::printf("[netns competing] rail 0 left to wirewise %.1f MB/s: a share following it is %.2f (measured %.2f); the "
              "flows reached half their rate %.3f s after they started; the share was halfway there (%.2f) %.3f s "
              "after that\n",
              rail0Left / 1e6, expectedShare, shareDuring, tookAt - competeAt, threshold, shiftHalfway);

  // Bounds, from the figures measured on the shared 2-core dev box (docs/net-plugin.md, "Tests"). Equal
  // rails: 0.5 each. The mean share during the competition measured within 0.04-0.17 of the share that
  // follows what rail 0 left (0.09-0.28 against 0.11-0.30 when the flows took their part; 0.44 against
  // 0.46 when they did not): within 0.12. Where the flows took at least a quarter of rail 0, the share fell
  // halfway to that within 0-0.18 s of the flows reaching half their rate: 1 s. On the way back it crossed 0.4 within 0.02-0.70 s (likely slowest
  // when rail 0's estimate was near its floor as the flows ended: one 100 ms probe chunk at a time until
  // 10 ms of busy time make a sample): 1.5 s. Goodput measured 86-149% of what is left to wirewise; 75%
  // leaves room for one more stall and is still 2.2x what equal static striping could reach when the flows
  // take their fair part. From 1 s after the flows ended goodput measured 85-101% of the goodput before.
  EXPECT_GT(comp, 0.0);
  EXPECT_GT(shareBefore, 0.4);
  EXPECT_LT(shareBefore, 0.6);
  EXPECT_NEAR(shareDuring, expectedShare, 0.12);
  if (comp >= 0.25 * before / 2.0) {
    EXPECT_GE(shiftHalfway, 0.0);
    EXPECT_LE(shiftHalfway, 1.0);
  }
  EXPECT_GE(during, 0.75 * (rail0Left + before / 2.0));
  EXPECT_GE(backAfter, 0.0);
  EXPECT_LE(backAfter, 1.5);
  EXPECT_GT(shareAfter, 0.4);
  EXPECT_GE(after, 0.75 * before);
}

}  // namespace
}  // namespace wirewise::net
