// Multi-receive irecv through the internal API (n buffers under one request, as NCCL's grouped receives
// post them): every message lands in the buffer with its tag, whatever order the sender used and however
// the chunks were spread over four loopback rails; repeated tags fill their buffers in sending order.
#include <algorithm>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include "net/transport.h"
#include "tests/net/traffic.h"
#include "tests/net/transport_util.h"

namespace wirewise::net {
namespace {

using testing::connectPair;
using testing::Pair;
using testing::waitDone;

class MultiRecv : public ::testing::Test {
 protected:
  void SetUp() override {
    setDevices({loopbackDevice(4)});
    TransportConfig config;
    config.chunkBytes = 16 << 10;  // small chunks: a message spreads over several streams
    setConfig(config);
  }
};

struct Planned {
  int tag;
  size_t size;
  int id;  // content seed index
};

TEST_F(MultiRecv, GroupsOfUpToEightMatchedByTag) {
  Pair p = connectPair(0);
  ASSERT_NE(p.sc, nullptr);
  ASSERT_NE(p.rc, nullptr);
  const uint64_t seed = 0x3a17;
  std::mt19937 rng(7);
  constexpr int kGroups = 60;
  // Group g: n = 1 + g % 8 messages with distinct tags; the sender sends them in a shuffled order and
  // the receiver lists its buffers in another.
  std::vector<std::vector<Planned>> sendOrder(kGroups), recvOrder(kGroups);
  for (int g = 0; g < kGroups; ++g) {
    int n = 1 + g % kMaxRecvs;
    for (int i = 0; i < n; ++i) {
      size_t size = (i + g) % 5 == 0 ? 0 : rng() % (200 << 10);
      sendOrder[g].push_back({100 + i * 3, size, g * 100 + i});
    }
    recvOrder[g] = sendOrder[g];
    std::shuffle(sendOrder[g].begin(), sendOrder[g].end(), rng);
    std::shuffle(recvOrder[g].begin(), recvOrder[g].end(), rng);
  }
  std::string sendError, recvError;
  std::thread sender([&] {
    std::vector<std::vector<char>> bufs;
    std::vector<void*> reqs;
    size_t oldest = 0;
    for (auto& group : sendOrder)
      for (const Planned& m : group) {
        bufs.emplace_back(m.size + 1);
        testing::fill(bufs.back().data(), m.size, seed, m.id);
        void* req = nullptr;
        for (;;) {
          if (isend(p.sc, bufs.back().data(), m.size, m.tag, &req) != Status::kOk) return void(sendError = "isend");
          if (req != nullptr) break;
          if (waitDone(reqs[oldest++], nullptr) != Status::kOk) return void(sendError = "send test");  // window full
        }
        reqs.push_back(req);
      }
    for (; oldest < reqs.size(); ++oldest)
      if (waitDone(reqs[oldest], nullptr) != Status::kOk) return void(sendError = "send test");
  });
  std::thread receiver([&] {
    constexpr int kAhead = 4;
    std::vector<std::vector<std::vector<char>>> bufs(kGroups);
    std::vector<void*> reqs(kGroups, nullptr);
    int posted = 0;
    for (int g = 0; g < kGroups && recvError.empty(); ++g) {
      while (posted < kGroups && posted < g + kAhead) {
        const auto& order = recvOrder[posted];
        int n = static_cast<int>(order.size());
        void* data[kMaxRecvs];
        size_t sizes[kMaxRecvs];
        int tags[kMaxRecvs];
        for (int i = 0; i < n; ++i) {
          bufs[posted].emplace_back(order[i].size + 64);  // larger than the message: the size must be reported
          data[i] = bufs[posted][i].data();
          sizes[i] = bufs[posted][i].size();
          tags[i] = order[i].tag;
        }
        if (irecv(p.rc, n, data, sizes, tags, &reqs[posted]) != Status::kOk || reqs[posted] == nullptr)
          return void(recvError = "irecv");
        ++posted;
      }
      int got[kMaxRecvs];
      std::fill(std::begin(got), std::end(got), -1);
      if (waitDone(reqs[g], got) != Status::kOk) return void(recvError = "recv test at group " + std::to_string(g));
      for (size_t i = 0; i < recvOrder[g].size(); ++i) {
        const Planned& m = recvOrder[g][i];
        if (got[i] != static_cast<int>(m.size))
          return void(recvError = "group " + std::to_string(g) + " buffer " + std::to_string(i) + ": size " +
                                  std::to_string(got[i]) + " != " + std::to_string(m.size));
        if (testing::firstMismatch(bufs[g][i].data(), m.size, seed, m.id) >= 0)
          return void(recvError = "group " + std::to_string(g) + " buffer " + std::to_string(i) + ": wrong bytes");
      }
    }
  });
  sender.join();
  receiver.join();
  EXPECT_EQ(sendError, "");
  EXPECT_EQ(recvError, "");
  p.close();
}

// Tags 5, 5, 7, 5 in one receive; the sender sends A(5) B(7) C(5) D(5): the k-th message with a tag takes
// the k-th buffer with it, so the buffers hold A, B, C, D in the order 0=A, 2=B, 1=C, 3=D. Repeated
// many times so that the chunks race over the four streams.
TEST_F(MultiRecv, RepeatedTagsFillTheirBuffersInSendingOrder) {
  Pair p = connectPair(0);
  ASSERT_NE(p.sc, nullptr);
  const uint64_t seed = 0x5577;
  const int sendTags[4] = {5, 7, 5, 5};
  const int recvTags[4] = {5, 5, 7, 5};
  const int wantId[4] = {0, 2, 1, 3};  // buffer i holds the message sent at position wantId[i]
  const size_t size = 40 << 10;
  std::vector<std::vector<char>> out(4, std::vector<char>(size));
  for (int round = 0; round < 30; ++round) {
    for (int i = 0; i < 4; ++i) testing::fill(out[i].data(), size, seed, round * 10 + i);
    std::vector<std::vector<char>> in(4, std::vector<char>(size));
    void* data[4] = {in[0].data(), in[1].data(), in[2].data(), in[3].data()};
    size_t sizes[4] = {size, size, size, size};
    void* rreq = nullptr;
    ASSERT_EQ(irecv(p.rc, 4, data, sizes, recvTags, &rreq), Status::kOk);
    void* sreq[4];
    for (int i = 0; i < 4; ++i) ASSERT_EQ(isend(p.sc, out[i].data(), size, sendTags[i], &sreq[i]), Status::kOk);
    int got[4];
    std::thread drive([&] {
      for (void* r : sreq) EXPECT_EQ(waitDone(r, nullptr), Status::kOk);
    });
    ASSERT_EQ(waitDone(rreq, got), Status::kOk);
    drive.join();
    for (int i = 0; i < 4; ++i) {
      EXPECT_EQ(got[i], static_cast<int>(size));
      EXPECT_LT(testing::firstMismatch(in[i].data(), size, seed, round * 10 + wantId[i]), 0)
          << "round " << round << " buffer " << i;
    }
  }
  p.close();
}

TEST_F(MultiRecv, AMessageWhoseTagNoBufferTakesIsInvalidUsage) {
  Pair p = connectPair(0);
  ASSERT_NE(p.sc, nullptr);
  char out[10] = {}, a[10], b[10];
  void* data[2] = {a, b};
  size_t sizes[2] = {sizeof a, sizeof b};
  int tags[2] = {1, 2};
  void *rreq = nullptr, *sreq = nullptr;
  ASSERT_EQ(irecv(p.rc, 2, data, sizes, tags, &rreq), Status::kOk);
  ASSERT_EQ(isend(p.sc, out, sizeof out, 3, &sreq), Status::kOk);
  EXPECT_EQ(waitDone(sreq, nullptr), Status::kOk);
  EXPECT_EQ(waitDone(rreq, nullptr), Status::kInvalidUsage);
  p.close();
}

}  // namespace
}  // namespace wirewise::net
