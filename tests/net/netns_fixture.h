// The fixture shared by the real-kernel network-namespace tests (netns_adaptive_test.cc,
// netns_competing_test.cc): two namespaces A (sender) and B (receiver) joined by two veth pairs, rail i
// being 10.78.i.1 (A, interface x_(i)) to 10.78.i.2 (B); device 0 is the receiver's merged two-rail
// device, device 1 the sender's. Root only: SetUp skips with the reason otherwise.
#pragma once

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <sched.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <functional>
#include <future>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include "net/transport.h"
#include "tests/net/transport_util.h"

namespace wirewise::net::testing {

inline bool sh(const std::string& cmd) { return std::system((cmd + " >/dev/null 2>&1").c_str()) == 0; }

inline Rail rail(const std::string& ifname, const char* ip, int mbps) {
  Rail r;
  r.ifname = ifname;
  auto* in = reinterpret_cast<sockaddr_in*>(&r.addr);
  in->sin_family = AF_INET;
  inet_pton(AF_INET, ip, &in->sin_addr);
  r.addrLen = sizeof(sockaddr_in);
  r.speedMbps = mbps;
  return r;
}

class Netns : public ::testing::Test {
 protected:
  void SetUp() override {
    if (geteuid() != 0) GTEST_SKIP() << "needs root for network namespaces";
    if (!sh("command -v ip") || !sh("command -v tc")) GTEST_SKIP() << "needs iproute2 (ip, tc)";
    tag_ = "wwa" + std::to_string(getpid());
    a_ = tag_ + "a";
    b_ = tag_ + "b";
    if (!sh("ip netns add " + a_)) GTEST_SKIP() << "cannot create network namespaces here";
    ASSERT_TRUE(sh("ip netns add " + b_));
    for (int i = 0; i < 2; ++i) {
      std::string x = x_(i), y = tag_ + "y" + std::to_string(i);
      if (!sh("ip link add " + x + " type veth peer name " + y)) GTEST_SKIP() << "cannot create veth pairs";
      ASSERT_TRUE(sh("ip link set " + x + " netns " + a_));
      ASSERT_TRUE(sh("ip link set " + y + " netns " + b_));
      ASSERT_TRUE(sh("ip -n " + a_ + " addr add 10.78." + std::to_string(i) + ".1/24 dev " + x));
      ASSERT_TRUE(sh("ip -n " + b_ + " addr add 10.78." + std::to_string(i) + ".2/24 dev " + y));
      ASSERT_TRUE(sh("ip -n " + a_ + " link set " + x + " up"));
      ASSERT_TRUE(sh("ip -n " + b_ + " link set " + y + " up"));
    }
    nsA_ = open(("/run/netns/" + a_).c_str(), O_RDONLY | O_CLOEXEC);
    nsB_ = open(("/run/netns/" + b_).c_str(), O_RDONLY | O_CLOEXEC);
    ASSERT_GE(nsA_, 0);
    ASSERT_GE(nsB_, 0);
    // Device 0: the receiver's addresses (namespace B); device 1: the sender's (namespace A).
    Device recvDev{"merged-b", {rail(tag_ + "y0", "10.78.0.2", 10000), rail(tag_ + "y1", "10.78.1.2", 10000)}, 20000};
    Device sendDev{"merged-a", {rail(x_(0), "10.78.0.1", 10000), rail(x_(1), "10.78.1.1", 10000)}, 20000};
    setDevices({recvDev, sendDev});
  }
  void TearDown() override {
    if (nsA_ >= 0) close(nsA_);
    if (nsB_ >= 0) close(nsB_);
    if (!a_.empty()) sh("ip netns del " + a_);
    if (!b_.empty()) sh("ip netns del " + b_);
  }
  std::string x_(int i) const { return tag_ + "x" + std::to_string(i); }
  void shape(int i, const char* verb, int mbit) {
    ASSERT_TRUE(sh("tc -n " + a_ + " qdisc " + verb + " dev " + x_(i) + " root tbf rate " + std::to_string(mbit) +
                   "mbit burst 64kb latency 20ms"));
  }
  // Connects sender (namespace A) and receiver (namespace B); each side's thread stays in its namespace
  // for the rest of its life, so the caller passes the work to do there.
  template <typename SendFn, typename RecvFn>
  void run(SendFn sendFn, RecvFn recvFn) {
    std::promise<std::vector<char>> handle;
    auto handleReady = handle.get_future();
    std::thread receiver([&] {
      if (setns(nsB_, CLONE_NEWNET) != 0) return handle.set_value({});
      std::vector<char> h(kHandleBytes);
      void* lc = nullptr;
      if (listen(0, h.data(), &lc) != Status::kOk) return handle.set_value({});
      handle.set_value(h);
      void* rc = nullptr;
      auto start = std::chrono::steady_clock::now();
      while (rc == nullptr && std::chrono::steady_clock::now() - start < std::chrono::seconds(20))
        if (accept(lc, &rc) != Status::kOk) break;
      closeListen(lc);  // as NCCL does right after accept: reopening must not need it
      recvFn(rc);
      if (rc != nullptr) closeRecv(rc);
    });
    std::thread sender([&] {
      std::vector<char> h = handleReady.get();
      void* sc = nullptr;
      if (!h.empty() && setns(nsA_, CLONE_NEWNET) == 0) {
        auto start = std::chrono::steady_clock::now();
        while (sc == nullptr && std::chrono::steady_clock::now() - start < std::chrono::seconds(20))
          if (connect(1, h.data(), &sc) != Status::kOk) break;
      }
      sendFn(sc);
      if (sc != nullptr) closeSend(sc);
    });
    sender.join();
    receiver.join();
  }

 public:
  void runFns(std::function<void(void*)> sendFn, std::function<void(void*)> recvFn) { run(sendFn, recvFn); }
  void shapeRail(int i, const char* verb, int mbit) { shape(i, verb, mbit); }
  void linkDown(int i) { ASSERT_TRUE(sh("ip -n " + a_ + " link set " + x_(i) + " down")); }
  void linkUp(int i) { ASSERT_TRUE(sh("ip -n " + a_ + " link set " + x_(i) + " up")); }
  // Open descriptors of namespaces A and B, for threads of a test's own that must run there (setns).
  int nsA() const { return nsA_; }
  int nsB() const { return nsB_; }

 protected:
  std::string tag_, a_, b_;
  int nsA_ = -1, nsB_ = -1;
};

// Every word of message i differs from every other word of every message in flight: the receiver checks
// each byte at a fraction of a byte-wise fill's cost.
inline uint64_t word(int message, size_t w) {
  return (static_cast<uint64_t>(message) + 1) * 0x9e3779b97f4a7c15ull ^ (static_cast<uint64_t>(w) * 0xbf58476d1ce4e5b9ull);
}

// The receiving end of a streaming run: `window` receives of `msg` bytes in flight, each message's words
// checked against word(i, w) and its arrival time (now()) recorded, until `sent` messages arrived (the
// sender sets `sent` when it stops; -1 until then). Returns "" or what went wrong first.
inline std::string receiveStream(void* rc, const std::atomic<int>& sent, int window, size_t msg,
                                 const std::function<double()>& now,
                                 std::vector<std::pair<double, size_t>>* arrivals) {
  if (rc == nullptr) return "accept";
  const size_t words = msg / 8;
  std::vector<std::vector<uint64_t>> bufs(static_cast<size_t>(window), std::vector<uint64_t>(words));
  std::vector<void*> reqs(static_cast<size_t>(window), nullptr);
  int posted = 0;
  for (int i = 0; sent.load() < 0 || i < sent.load(); ++i) {
    while (posted < i + window) {
      void* data[1] = {bufs[static_cast<size_t>(posted % window)].data()};
      size_t sizes[1] = {msg};
      int tags[1] = {0};
      if (irecv(rc, 1, data, sizes, tags, &reqs[static_cast<size_t>(posted % window)]) != Status::kOk) return "irecv";
      ++posted;
    }
    int size = -1;
    if (waitDone(reqs[static_cast<size_t>(i % window)], &size) != Status::kOk) return "recv test";
    arrivals->emplace_back(now(), msg);
    auto& b = bufs[static_cast<size_t>(i % window)];
    if (size != static_cast<int>(msg)) return "message " + std::to_string(i) + " size";
    for (size_t w = 0; w < words; ++w)
      if (b[w] != word(i, w)) return "message " + std::to_string(i) + " word " + std::to_string(w);
    std::fill(b.begin(), b.end(), 0);  // a message that skipped a chunk cannot pass on stale bytes
  }
  return "";
}

}  // namespace wirewise::net::testing
