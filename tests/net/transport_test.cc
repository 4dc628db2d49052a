// The transport through its internal API: the request windows, and a 4-rail loopback device whose every
// rail must carry a share of a verified random message stream.
#include "net/transport.h"

#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include <cstdio>

#if defined(__SANITIZE_THREAD__)
constexpr bool kUnderTsan = true;
#elif defined(__has_feature)
#if __has_feature(thread_sanitizer)
constexpr bool kUnderTsan = true;
#else
constexpr bool kUnderTsan = false;
#endif
#else
constexpr bool kUnderTsan = false;
#endif

#include "net/comm.h"
#include "net/wire.h"
#include "tests/net/traffic.h"
#include "tests/net/transport_util.h"

namespace wirewise::net {
namespace {

using testing::connectPair;
using testing::Pair;

class TransportTest : public ::testing::Test {
 protected:
  void SetUp() override {
    setDevices({loopbackDevice(1), loopbackDevice(4)});
    TransportConfig config;
    config.chunkBytes = 64 << 10;
    setConfig(config);
  }
};

// A send comm takes 32 x maxRecvs isends (NCCL's rule for multi-receive peers), then answers NULL.
TEST_F(TransportTest, SendWindowThenNullRequest) {
  Pair p = connectPair(0);
  ASSERT_NE(p.sc, nullptr);
  char byte = 'x';
  void* reqs[kMaxSendRequests];
  for (void*& r : reqs) {
    ASSERT_EQ(isend(p.sc, &byte, 1, 0, &r), Status::kOk);
    ASSERT_NE(r, nullptr);
  }
  void* extra = &byte;
  ASSERT_EQ(isend(p.sc, &byte, 1, 0, &extra), Status::kOk);
  EXPECT_EQ(extra, nullptr);  // NCCL retries later
  int done = 0, size = -1;
  for (void* r : reqs) {
    while (!done) ASSERT_EQ(test(r, &done, &size), Status::kOk);
    EXPECT_EQ(size, 1);
    done = 0;
  }
  ASSERT_EQ(isend(p.sc, &byte, 1, 0, &extra), Status::kOk);
  EXPECT_NE(extra, nullptr);
  void* rreq = nullptr;
  void* data[1] = {nullptr};
  size_t sizes[1] = {0};
  EXPECT_EQ(irecv(p.rc, kMaxRecvs + 1, data, sizes, nullptr, &rreq), Status::kInternalError);
  EXPECT_EQ(irecv(p.rc, 0, data, sizes, nullptr, &rreq), Status::kInternalError);
  void* mh = nullptr;
  EXPECT_EQ(regMr(p.sc, &byte, 1, kPtrHost, &mh), Status::kOk);
  EXPECT_NE(mh, nullptr);
  EXPECT_EQ(regMr(p.sc, &byte, 1, 0x2, &mh), Status::kInternalError);
  void* flush = &byte;
  EXPECT_EQ(iflush(p.rc, &flush), Status::kOk);
  EXPECT_EQ(flush, nullptr);
  p.close();
}

// A stranger that sends garbage instead of a hello, or hangs up mid-hello, is dropped; the listener keeps
// working and the next real connection is accepted.
TEST_F(TransportTest, MalformedHelloIsDroppedAndTheListenerSurvives) {
  char handle[kHandleBytes];
  void* lc = nullptr;
  ASSERT_EQ(listen(0, handle, &lc), Status::kOk);
  NetHandle h;
  std::memcpy(&h, handle, sizeof h);
  sockaddr_in peer{};
  peer.sin_family = AF_INET;
  peer.sin_port = h.rails[0].port;
  std::memcpy(&peer.sin_addr, h.rails[0].addr, 4);
  for (int variant = 0; variant < 2; ++variant) {
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    ASSERT_EQ(::connect(fd, reinterpret_cast<sockaddr*>(&peer), sizeof peer), 0);
    char junk[sizeof(Hello)];
    std::memset(junk, 0x41, sizeof junk);
    ASSERT_GT(send(fd, junk, variant == 0 ? sizeof junk : 5, 0), 0);
    void* rc = nullptr;
    for (int i = 0; i < 50; ++i) {
      ASSERT_EQ(accept(lc, &rc), Status::kOk);
      ASSERT_EQ(rc, nullptr);
      if (i == 10) close(fd);
      std::this_thread::sleep_for(std::chrono::milliseconds(1));  // accept() polled as NCCL does, 50 times
    }
  }
  void* sc = nullptr;
  void* rc = nullptr;
  auto start = std::chrono::steady_clock::now();
  while ((sc == nullptr || rc == nullptr) && std::chrono::steady_clock::now() - start < std::chrono::seconds(20)) {
    if (sc == nullptr) {
      ASSERT_EQ(connect(0, handle, &sc), Status::kOk);
    }
    if (rc == nullptr) {
      ASSERT_EQ(accept(lc, &rc), Status::kOk);
    }
  }
  EXPECT_NE(sc, nullptr);
  EXPECT_NE(rc, nullptr);
  closeSend(sc);
  closeRecv(rc);
  closeListen(lc);
}

// NCCL_DEBUG=INFO users read what a connection did when it closes: bytes and share per named rail,
// resends, hedges, reopened streams.
std::string gInfo;
void captureInfo(const char* msg) { gInfo += std::string(msg) + "\n"; }

TEST_F(TransportTest, ClosingASendCommLogsWhatEachRailCarried) {
  gInfo.clear();
  setInfoLog(captureInfo);
  Pair p = connectPair(1);
  ASSERT_NE(p.sc, nullptr);
  ASSERT_NE(p.rc, nullptr);
  std::vector<char> out(8 << 20, 'w'), in((8 << 20) + 1);
  void* sreq = nullptr;
  void* rreq = nullptr;
  void* data[1] = {in.data()};
  size_t sizes[1] = {in.size()};
  int tags[1] = {3};
  ASSERT_EQ(irecv(p.rc, 1, data, sizes, tags, &rreq), Status::kOk);
  ASSERT_EQ(isend(p.sc, out.data(), out.size(), 3, &sreq), Status::kOk);
  ASSERT_NE(sreq, nullptr);
  ASSERT_NE(rreq, nullptr);
  int size = 0;
  ASSERT_EQ(testing::waitDone(sreq, nullptr), Status::kOk);
  ASSERT_EQ(testing::waitDone(rreq, &size), Status::kOk);
  EXPECT_EQ(gInfo, "") << "nothing is logged before the close";
  closeSend(p.sc);
  setInfoLog(nullptr);
  std::printf("[close summary] %s", gInfo.c_str());
  EXPECT_NE(gInfo.find("wirewise net: connection to 127.0.0.1 closed: 8.4 MB sent: lo#0 "), std::string::npos) << gInfo;
  for (const char* rail : {", lo#1 ", ", lo#2 ", ", lo#3 "})
    EXPECT_NE(gInfo.find(rail), std::string::npos) << rail << " missing in " << gInfo;
  EXPECT_NE(gInfo.find("; 0 chunks resent (0 of them hedged), 0 streams reopened\n"), std::string::npos) << gInfo;
  EXPECT_EQ(gInfo.find("down"), std::string::npos) << gInfo;
  closeRecv(p.rc);
  closeListen(p.lc);
}

// A send completes when the peer's kernel has acknowledged its bytes (so a dead rail's chunks can be resent
// from NCCL's buffer). The receiver writes a 16-byte advert on every stream right after the connection is
// made, and Linux takes "data sent soon after data received" as an interactive ("pingpong") connection
// whose acknowledgements it delays by its 40 ms timer: each stream's first small message took 40-44 ms and,
// with no bytes delivered meanwhile, its rail's measured rate fell to a quarter, a share the rail kept
// (the four-rail test below saw rails at 5-9% of the bytes). A one-byte message on a fresh connection,
// nothing received: the kernel alone must acknowledge it, at once.
TEST_F(TransportTest, FirstSmallMessageIsNotHeldByADelayedAcknowledgement) {
  double fastestMs = 1e9;
  for (int round = 0; round < 3; ++round) {
    Pair p = connectPair(0);
    ASSERT_NE(p.sc, nullptr);
    ASSERT_NE(p.rc, nullptr);
    char byte = 1;
    void* req = nullptr;
    const auto start = std::chrono::steady_clock::now();
    ASSERT_EQ(isend(p.sc, &byte, 1, 7, &req), Status::kOk);
    ASSERT_NE(req, nullptr);
    ASSERT_EQ(testing::waitDone(req, nullptr, std::chrono::seconds(5)), Status::kOk);
    const double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
    std::printf("[first message] a one-byte send on a fresh connection acknowledged after %.3f ms\n", ms);
    fastestMs = std::min(fastestMs, ms);
    closeSend(p.sc);
    closeRecv(p.rc);
    closeListen(p.lc);
  }
  // A delayed acknowledgement takes at least 40 ms (the kernel's minimum) on every connection; the kernel
  // acknowledging at once takes microseconds. The fastest of three fails only if the sender thread was kept
  // off the CPU for 20 ms all three times.
  EXPECT_LT(fastestMs, 20.0);
}

TEST_F(TransportTest, FourRailsReassembleRandomTrafficAndEveryRailCarriesBytes) {
  Pair p = connectPair(1);
  ASSERT_NE(p.sc, nullptr);
  ASSERT_NE(p.rc, nullptr);
  const uint64_t seed = 0x4a11;
  auto traffic = testing::makeTraffic(seed, 500, 3 << 20);
  std::string sendError, recvError;
  std::thread sender([&] {
    std::vector<char> buf;
    for (size_t i = 0; i < traffic.size() && sendError.empty(); ++i) {
      buf.resize(traffic[i].size + 1);
      testing::fill(buf.data(), traffic[i].size, seed, static_cast<int>(i));
      void* req = nullptr;
      if (isend(p.sc, buf.data(), traffic[i].size, traffic[i].tag, &req) != Status::kOk || req == nullptr) {
        sendError = "isend";
        break;
      }
      int done = 0;
      while (!done)
        if (test(req, &done, nullptr) != Status::kOk) sendError = "test", done = 1;
    }
  });
  std::thread receiver([&] {
    // Many receives in flight: post ahead, complete in order.
    constexpr int kAhead = 12;
    std::vector<std::vector<char>> bufs(kAhead, std::vector<char>((3 << 20) + 1));
    std::vector<void*> reqs(kAhead, nullptr);
    size_t posted = 0, completed = 0;
    while (completed < traffic.size() && recvError.empty()) {
      while (posted < traffic.size() && posted - completed < kAhead) {
        void* data[1] = {bufs[posted % kAhead].data()};
        size_t sizes[1] = {bufs[0].size()};
        int tags[1] = {traffic[posted].tag};
        if (irecv(p.rc, 1, data, sizes, tags, &reqs[posted % kAhead]) != Status::kOk) recvError = "irecv";
        ++posted;
      }
      int done = 0, size = 0;
      if (test(reqs[completed % kAhead], &done, &size) != Status::kOk) recvError = "test";
      if (!done) continue;
      if (static_cast<size_t>(size) != traffic[completed].size) recvError = "size at " + std::to_string(completed);
      if (testing::firstMismatch(bufs[completed % kAhead].data(), traffic[completed].size, seed,
                                 static_cast<int>(completed)) >= 0)
        recvError = "bytes at " + std::to_string(completed);
      ++completed;
    }
  });
  sender.join();
  receiver.join();
  EXPECT_EQ(sendError, "");
  EXPECT_EQ(recvError, "");
  auto stats = sendRailStats(p.sc);
  ASSERT_EQ(stats.size(), 4u);
  uint64_t total = 0;
  std::string shares;
  for (const RailStats& s : stats) total += s.bytes;
  for (const RailStats& s : stats) shares += " " + std::to_string(s.bytes);
  std::printf("[four rails] bytes per rail:%s\n", shares.c_str());
  for (const RailStats& s : stats) {
    // The shares follow measured rates: fair is 25%, measured 17-33% with two CPU hogs beside the test.
    // (Before the receiver asked for immediate acknowledgements, the first test above, rails 0 and 1 lost
    // their rate estimate to the delayed-ACK stall of their first message and kept 5-15%.) ThreadSanitizer
    // slows the progress loop 5-15x unevenly (one rail has been seen at 4%), so under it only "every rail
    // carried bytes" is asserted; the share bound needs undistorted timing.
    EXPECT_GT(s.bytes, kUnderTsan ? 0 : total / 16) << "a rail carried almost nothing; bytes per rail:" << shares;
    EXPECT_GT(s.chunks, 0u);
    EXPECT_GT(s.rttUs, 0u) << "TCP_INFO gave no RTT";
  }
  closeSend(p.sc);
  closeRecv(p.rc);
  closeListen(p.lc);
}

}  // namespace
}  // namespace wirewise::net

namespace wirewise::net {
namespace {

using testing::connectPair;
using testing::Pair;

// Goodput of one connection over loopback with 1 or 4 streams: printed for the notes, not asserted
// (loopback on a shared CI box measures memory copies, not a network).
double loopbackGoodput(int rails, int streamsPerRail, size_t messageBytes, int messages) {
  setDevices({loopbackDevice(rails)});
  TransportConfig config;
  config.streamsPerRail = streamsPerRail;
  setConfig(config);
  Pair p = connectPair(0);
  if (p.sc == nullptr || p.rc == nullptr) return 0.0;
  std::vector<char> out(messageBytes, 'a'), in(messageBytes);
  auto start = std::chrono::steady_clock::now();
  std::thread sender([&] {
    for (int i = 0; i < messages; ++i) {
      void* req = nullptr;
      while (req == nullptr) (void)isend(p.sc, out.data(), out.size(), 0, &req);
      int done = 0;
      while (!done && test(req, &done, nullptr) == Status::kOk) {
      }
    }
  });
  for (int i = 0; i < messages; ++i) {
    void* data[1] = {in.data()};
    size_t sizes[1] = {in.size()};
    void* req = nullptr;
    (void)irecv(p.rc, 1, data, sizes, nullptr, &req);
    int done = 0;
    while (req != nullptr && !done && test(req, &done, nullptr) == Status::kOk) {
    }
  }
  sender.join();
  double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  closeSend(p.sc);
  closeRecv(p.rc);
  closeListen(p.lc);
  return static_cast<double>(messageBytes) * messages / s / 1e9;
}

TEST(TransportThroughput, LoopbackOneVersusFourStreams) {
  double one = loopbackGoodput(1, 1, 8 << 20, 64);
  double four = loopbackGoodput(1, 4, 8 << 20, 64);
  double rails = loopbackGoodput(4, 1, 8 << 20, 64);
  std::printf("[loopback goodput, 8 MiB messages] 1 stream %.2f GB/s, 4 streams %.2f GB/s, 4 rails %.2f GB/s\n", one,
              four, rails);
  EXPECT_GT(one, 0.0);
  EXPECT_GT(four, 0.0);
  EXPECT_GT(rails, 0.0);
}

}  // namespace
}  // namespace wirewise::net
