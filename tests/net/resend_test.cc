// Faults on loopback: one stream of a two-rail connection is shut down under a running transfer (writes
// on it fail from then on); its unacknowledged chunks must be resent on the other rail and every byte
// must arrive once and intact, and the sender must reopen the stream (a new connection to the receive
// comm's own listener) so that rail 1 carries bytes again. With every stream shut down, both ends report an
// error instead of hanging.
// (Real links going down, detected by the missing acknowledgements, are in netns_adaptive_test.cc.)
#include <sys/socket.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include "net/comm.h"
#include "net/transport.h"
#include "tests/net/traffic.h"
#include "tests/net/transport_util.h"

namespace wirewise::net {
namespace {

using testing::connectPair;
using testing::Pair;
using testing::waitDone;

class Resend : public ::testing::Test {
 protected:
  void SetUp() override {
    setDevices({loopbackDevice(2)});
    TransportConfig config;
    config.chunkBytes = 32 << 10;
    config.railTimeoutMs = 1000;
    setConfig(config);
  }
};

struct Outcome {
  std::string sendError, recvError;
  int received = 0;
};

// Sends `traffic` with up to 16 in flight while the receiver verifies every byte; `fault` runs on the
// sender thread after `faultAfter` messages were posted.
template <typename Fault>
Outcome transfer(Pair& p, const std::vector<testing::Message>& traffic, uint64_t seed, int faultAfter, Fault fault) {
  Outcome o;
  constexpr int kWindow = 16;
  std::thread sender([&] {
    size_t maxSize = 0;
    for (const auto& m : traffic) maxSize = std::max(maxSize, m.size);
    std::vector<std::vector<char>> bufs(kWindow, std::vector<char>(maxSize + 1));
    std::vector<void*> reqs(kWindow, nullptr);
    for (size_t i = 0; i < traffic.size(); ++i) {
      if (static_cast<int>(i) == faultAfter) fault();
      void*& slot = reqs[i % kWindow];
      if (slot != nullptr) {
        if (Status s = waitDone(slot, nullptr); s != Status::kOk) {
          o.sendError = "send test " + std::to_string(static_cast<int>(s)) + " before message " + std::to_string(i);
          return;
        }
      }
      testing::fill(bufs[i % kWindow].data(), traffic[i].size, seed, static_cast<int>(i));
      slot = nullptr;
      if (isend(p.sc, bufs[i % kWindow].data(), traffic[i].size, traffic[i].tag, &slot) != Status::kOk || !slot) {
        o.sendError = "isend";
        return;
      }
    }
    for (void* r : reqs)
      if (r != nullptr && waitDone(r, nullptr) != Status::kOk) o.sendError = "final send test";
  });
  std::thread receiver([&] {
    size_t maxSize = 0;
    for (const auto& m : traffic) maxSize = std::max(maxSize, m.size);
    std::vector<std::vector<char>> bufs(kWindow, std::vector<char>(maxSize + 1));
    std::vector<void*> reqs(kWindow, nullptr);
    size_t posted = 0;
    for (size_t i = 0; i < traffic.size(); ++i) {
      while (posted < traffic.size() && posted < i + kWindow) {
        void* data[1] = {bufs[posted % kWindow].data()};
        size_t sizes[1] = {bufs[0].size()};
        int tags[1] = {traffic[posted].tag};
        if (irecv(p.rc, 1, data, sizes, tags, &reqs[posted % kWindow]) != Status::kOk) {
          o.recvError = "irecv";
          return;
        }
        ++posted;
      }
      int size = -1;
      if (Status s = waitDone(reqs[i % kWindow], &size); s != Status::kOk) {
        o.recvError = "recv test " + std::to_string(static_cast<int>(s)) + " at message " + std::to_string(i);
        return;
      }
      if (static_cast<size_t>(size) != traffic[i].size ||
          testing::firstMismatch(bufs[i % kWindow].data(), traffic[i].size, seed, static_cast<int>(i)) >= 0) {
        o.recvError = "message " + std::to_string(i) + " corrupted";
        return;
      }
      ++o.received;
    }
  });
  sender.join();
  receiver.join();
  return o;
}

// Transfers (each verified) until the sender has reopened `n` streams in all: progress, and so the
// reconnect, only runs while a transfer drives the comm. Bounded: 10 s.
std::string transferUntilReopened(Pair& p, uint64_t n, uint64_t seed) {
  auto* sc = static_cast<SendComm*>(p.sc);
  const auto start = std::chrono::steady_clock::now();
  for (int round = 0; sc->reopenedStreams() < n; ++round) {
    if (std::chrono::steady_clock::now() - start > std::chrono::seconds(10)) return "not reopened within 10 s";
    auto traffic = testing::makeTraffic(seed + static_cast<uint64_t>(round), 50, 256 << 10);
    Outcome o = transfer(p, traffic, seed + static_cast<uint64_t>(round), -1, [] {});
    if (!o.sendError.empty() || !o.recvError.empty()) return o.sendError + " / " + o.recvError;
  }
  return "";
}

TEST_F(Resend, AStreamThatFailsMidTransferIsResentIntactAndReopened) {
  Pair p = connectPair(0);
  ASSERT_NE(p.sc, nullptr);
  ASSERT_NE(p.rc, nullptr);
  auto* sc = static_cast<SendComm*>(p.sc);
  ASSERT_EQ(sc->streamCount(), 2u);
  const uint64_t seed = 0xfa11;
  auto traffic = testing::makeTraffic(seed, 400, 1 << 20);
  Outcome o = transfer(p, traffic, seed, 150, [&] { shutdown(sc->streamFd(1), SHUT_RDWR); });
  EXPECT_EQ(o.sendError, "");
  EXPECT_EQ(o.recvError, "");
  EXPECT_EQ(o.received, 400);
  CommTelemetry t;
  ASSERT_TRUE(sendTelemetry(p.sc, &t));
  EXPECT_TRUE(t.rail[0].up);
  EXPECT_GT(t.resentChunks, 0u);
  const uint64_t rail1Before = sc->scheduler().delivered(1);
  const uint64_t resentBefore = t.resentChunks;
  // The dead stream is replaced (first retry 250 ms after the failure); then a further transfer on the
  // same comm puts bytes on rail 1 again, and every byte is still verified.
  const auto fault = std::chrono::steady_clock::now();
  ASSERT_EQ(transferUntilReopened(p, 1, seed + 100), "");
  const double reopenS = std::chrono::duration<double>(std::chrono::steady_clock::now() - fault).count();
  auto more = testing::makeTraffic(seed + 1, 300, 1 << 20);
  Outcome o2 = transfer(p, more, seed + 1, -1, [] {});
  EXPECT_EQ(o2.sendError, "");
  EXPECT_EQ(o2.recvError, "");
  EXPECT_EQ(o2.received, 300);
  ASSERT_TRUE(sendTelemetry(p.sc, &t));
  EXPECT_TRUE(t.rail[1].up);
  EXPECT_EQ(sc->reopenedStreams(), 1u);
  EXPECT_EQ(static_cast<RecvComm*>(p.rc)->reopenedStreams(), 1u);
  EXPECT_EQ(sc->streamsUp(), 2);
  EXPECT_EQ(sc->streamCount(), 3u);  // the replacement took a new index
  EXPECT_GT(sc->scheduler().delivered(1), rail1Before + (1u << 20));
  EXPECT_EQ(t.resentChunks, resentBefore);  // the reopened stream lost nothing
  std::printf("[resend] %llu chunks resent, %llu duplicate copies dropped by the receiver; rail 1 reopened, "
              "%.1f MiB on it in the next transfer (reopened within %.2f s of the end of the first)\n",
              static_cast<unsigned long long>(resentBefore),
              static_cast<unsigned long long>(static_cast<RecvComm*>(p.rc)->duplicatesDropped()),
              static_cast<double>(sc->scheduler().delivered(1) - rail1Before) / (1 << 20), reopenS);
  p.close();
}

// The reopened stream may die too: it is replaced again under the next index, and the transfer stays
// intact through both failures.
TEST_F(Resend, AReopenedStreamThatFailsIsReopenedAgain) {
  Pair p = connectPair(0);
  ASSERT_NE(p.sc, nullptr);
  auto* sc = static_cast<SendComm*>(p.sc);
  const uint64_t seed = 0x2fa11;
  auto traffic = testing::makeTraffic(seed, 300, 1 << 20);
  Outcome o = transfer(p, traffic, seed, 50, [&] { shutdown(sc->streamFd(1), SHUT_RDWR); });
  ASSERT_EQ(o.recvError, "");
  ASSERT_EQ(o.sendError, "");
  ASSERT_EQ(transferUntilReopened(p, 1, seed + 100), "");
  ASSERT_EQ(sc->streamCount(), 3u);
  traffic = testing::makeTraffic(seed + 2, 400, 1 << 20);
  o = transfer(p, traffic, seed + 2, 20, [&] { shutdown(sc->streamFd(2), SHUT_RDWR); });
  EXPECT_EQ(o.sendError, "");
  EXPECT_EQ(o.recvError, "");
  EXPECT_EQ(o.received, 400);
  EXPECT_EQ(transferUntilReopened(p, 2, seed + 200), "");
  const uint64_t rail1Before = sc->scheduler().delivered(1);
  traffic = testing::makeTraffic(seed + 3, 300, 1 << 20);
  o = transfer(p, traffic, seed + 3, -1, [] {});
  EXPECT_EQ(o.sendError, "");
  EXPECT_EQ(o.recvError, "");
  EXPECT_GT(sc->scheduler().delivered(1), rail1Before);
  EXPECT_EQ(sc->reopenedStreams(), 2u);
  EXPECT_EQ(sc->streamsUp(), 2);
  EXPECT_EQ(sc->streamCount(), 4u);
  p.close();
}

TEST_F(Resend, NoStreamLeftIsAnErrorOnBothEndsNotAHang) {
  Pair p = connectPair(0);
  ASSERT_NE(p.sc, nullptr);
  auto* sc = static_cast<SendComm*>(p.sc);
  const uint64_t seed = 0xdead;
  auto traffic = testing::makeTraffic(seed, 200, 1 << 20);
  auto start = std::chrono::steady_clock::now();
  Outcome o = transfer(p, traffic, seed, 60, [&] {
    shutdown(sc->streamFd(0), SHUT_RDWR);
    shutdown(sc->streamFd(1), SHUT_RDWR);
  });
  double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  EXPECT_NE(o.sendError, "");
  EXPECT_NE(o.recvError, "");
  EXPECT_NE(o.sendError.find("send test 5"), std::string::npos) << o.sendError;  // Status::kRemoteError
  EXPECT_NE(o.recvError.find("recv test 5"), std::string::npos) << o.recvError;
  EXPECT_LT(s, 30.0);
  std::printf("[resend] no stream left: sender '%s', receiver '%s' after %.2f s, %d messages intact\n",
              o.sendError.c_str(), o.recvError.c_str(), s, o.received);
  p.close();
}

// Progress is given the clock reading of whichever thread drives (read before it took the baton), so a
// reading may be older than the one before it. An older reading must not look like a stall: with bytes
// outstanding, "now minus the last progress" would wrap round to centuries and kill the stream. Two
// AF_UNIX streams (bytes stay outstanding until the far end reads them; TCP_INFO fails there, so a stream
// that looks stalled is taken for dead at once).
TEST(ProgressClock, AnOlderReadingIsNotAStall) {
  std::vector<StreamFd> near;
  std::vector<int> far;
  for (int i = 0; i < 2; ++i) {
    int sv[2];
    ASSERT_EQ(socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK, 0, sv), 0);
    near.push_back({sv[0], i});
    far.push_back(sv[1]);
  }
  CommOptions opt;
  opt.railTimeoutNs = 1'000'000'000;
  SendComm sc(near, 2, {1e9, 1e9}, opt);
  std::vector<char> msg(4096, 'x');
  ASSERT_NE(sc.post(msg.data(), msg.size(), 1), nullptr);
  const uint64_t now = monotonicNs();
  ASSERT_EQ(sc.progress(now), Status::kOk);  // written, unread: outstanding
  ASSERT_EQ(sc.progress(now - 5'000'000'000), Status::kOk);
  EXPECT_EQ(sc.streamsUp(), 2);
  // The check itself still works: a reading past the rail timeout with nothing delivered is a stall.
  ASSERT_EQ(sc.progress(now + 2'000'000'000), Status::kOk);
  EXPECT_EQ(sc.streamsUp(), 1);
  for (int fd : far) close(fd);
}

}  // namespace
}  // namespace wirewise::net
