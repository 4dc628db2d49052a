// Multi-receive irecv (n > 1 buffers with tags, as NCCL's grouped receives post them) through the real
// library's ncclNet v8, v9, v10 and v11 tables: properties advertise maxRecvs 8, every message lands in
// the buffer with its tag, test() reports n sizes, and n = 9 is refused.
#include <dlfcn.h>

#include <chrono>
#include <cstring>
#include <thread>
#include <type_traits>
#include <vector>

#include <gtest/gtest.h>

#include "tests/net/net_abi_util.h"

namespace wirewise::net::testing {
namespace {

constexpr int kN = 8;

template <typename Net>
struct Version {
  static constexpr bool kV11 = std::is_same_v<Net, ncclNet_v11_t>;
  static constexpr bool kV10 = std::is_same_v<Net, ncclNet_v10_t>;
  static constexpr bool kIntSizes = std::is_same_v<Net, ncclNet_v8_t>;
};

template <typename Net>
ncclResult_t init(const Net* net, void** ctx) {
  if constexpr (Version<Net>::kV11) return net->init(ctx, 77, nullptr, nullptr, nullptr);
  else if constexpr (Version<Net>::kV10) return net->init(nullptr, nullptr);
  else return net->init(nullptr);
}

template <typename Net>
ncclResult_t listenOn(const Net* net, void* ctx, void* handle, void** lc) {
  if constexpr (Version<Net>::kV11) return net->listen(ctx, 0, handle, lc);
  else return net->listen(0, handle, lc);
}

template <typename Net>
ncclResult_t connectTo(const Net* net, void* ctx, void* handle, void** sc) {
  ncclNetDeviceHandle_v11_t* dev = nullptr;
  if constexpr (Version<Net>::kV11) return net->connect(ctx, 0, handle, sc, &dev);
  else if constexpr (Version<Net>::kV10) return net->connect(0, nullptr, handle, sc, &dev);
  else return net->connect(0, handle, sc, &dev);
}

template <typename Net>
ncclResult_t send(const Net* net, void* sc, void* data, size_t size, int tag, void** req) {
  if constexpr (Version<Net>::kIntSizes) return net->isend(sc, data, static_cast<int>(size), tag, nullptr, req);
  else if constexpr (Version<Net>::kV11 || Version<Net>::kV10) return net->isend(sc, data, size, tag, nullptr, nullptr, req);
  else return net->isend(sc, data, size, tag, nullptr, req);
}

template <typename Net>
ncclResult_t recvN(const Net* net, void* rc, int n, void** data, const size_t* caps, int* tags, void** req) {
  void* mh[kN + 1] = {};
  if constexpr (Version<Net>::kIntSizes) {
    int sizes[kN + 1];
    for (int i = 0; i < n; ++i) sizes[i] = static_cast<int>(caps[i]);
    return net->irecv(rc, n, data, sizes, tags, mh, req);
  } else {
    size_t sizes[kN + 1];
    for (int i = 0; i < n; ++i) sizes[i] = caps[i];
    if constexpr (Version<Net>::kV11 || Version<Net>::kV10) {
      void* ph[kN + 1] = {};
      return net->irecv(rc, n, data, sizes, tags, mh, ph, req);
    } else {
      return net->irecv(rc, n, data, sizes, tags, mh, req);
    }
  }
}

template <typename Net>
void multiRecv(const char* symbol) {
  const Net* net = table<Net>(symbol);
  ASSERT_NE(net, nullptr) << symbol;
  void* ctx = nullptr;
  ASSERT_EQ(init(net, &ctx), ncclSuccess);
  int ndev = 0;
  ASSERT_EQ(net->devices(&ndev), ncclSuccess);
  char handle[NCCL_NET_HANDLE_MAXSIZE];
  void *lc = nullptr, *sc = nullptr, *rc = nullptr;
  ASSERT_EQ(listenOn(net, ctx, handle, &lc), ncclSuccess);
  auto start = std::chrono::steady_clock::now();
  while ((sc == nullptr || rc == nullptr) && std::chrono::steady_clock::now() - start < kSetupTimeout) {
    ncclNetDeviceHandle_v11_t* dev = nullptr;
    if (sc == nullptr) {
      ASSERT_EQ(connectTo(net, ctx, handle, &sc), ncclSuccess);
    }
    if (rc == nullptr) {
      ASSERT_EQ(net->accept(lc, &rc, &dev), ncclSuccess);
    }
  }
  ASSERT_NE(sc, nullptr);
  ASSERT_NE(rc, nullptr);
  const uint64_t seed = 0x7a65;
  for (int round = 0; round < 20; ++round) {
    const int n = 1 + round % kN;
    // Buffer i takes tag 10 + i; the sender goes through the tags backwards; sizes differ per message.
    std::vector<std::vector<char>> out(n), in(n);
    void* data[kN];
    size_t caps[kN];
    int tags[kN];
    for (int i = 0; i < n; ++i) {
      size_t size = static_cast<size_t>((i * 7919 + round * 104729) % (300 << 10));
      out[i].resize(size + 1);
      fill(out[i].data(), size, seed, round * 100 + i);
      out[i].resize(size);
      in[i].assign(size + 100, 0);
      data[i] = in[i].data();
      caps[i] = in[i].size();
      tags[i] = 10 + i;
    }
    void* rreq = nullptr;
    ASSERT_EQ(recvN(net, rc, n, data, caps, tags, &rreq), ncclSuccess);
    ASSERT_NE(rreq, nullptr);
    std::vector<void*> sreq(n, nullptr);
    for (int i = n - 1; i >= 0; --i) ASSERT_EQ(send(net, sc, out[i].data(), out[i].size(), 10 + i, &sreq[i]), ncclSuccess);
    int sizes[kN];
    std::memset(sizes, 0xff, sizeof sizes);
    ncclResult_t sendResult = ncclSuccess;
    std::thread sender([&] {
      for (void* r : sreq) {
        int size = 0;
        if (ncclResult_t e = waitRequest(net, r, &size); e != ncclSuccess) sendResult = e;
      }
    });
    ASSERT_EQ(waitRequest(net, rreq, sizes), ncclSuccess);
    sender.join();
    ASSERT_EQ(sendResult, ncclSuccess);
    for (int i = 0; i < n; ++i) {
      EXPECT_EQ(sizes[i], static_cast<int>(out[i].size())) << symbol << " round " << round << " buffer " << i;
      EXPECT_LT(firstMismatch(in[i].data(), out[i].size(), seed, round * 100 + i), 0)
          << symbol << " round " << round << " buffer " << i;
    }
  }
  void* data[kN + 1] = {};
  size_t caps[kN + 1] = {};
  int tags[kN + 1] = {};
  void* req = nullptr;
  EXPECT_NE(recvN(net, rc, kN + 1, data, caps, tags, &req), ncclSuccess);
  EXPECT_EQ(net->closeSend(sc), ncclSuccess);
  EXPECT_EQ(net->closeRecv(rc), ncclSuccess);
  EXPECT_EQ(net->closeListen(lc), ncclSuccess);
  if constexpr (Version<Net>::kV11) {
    EXPECT_EQ(net->finalize(ctx), ncclSuccess);
  }
}

TEST(NetAbiMultiRecv, V11) { multiRecv<ncclNet_v11_t>("ncclNetPlugin_v11"); }
TEST(NetAbiMultiRecv, V10) { multiRecv<ncclNet_v10_t>("ncclNetPlugin_v10"); }
TEST(NetAbiMultiRecv, V9) { multiRecv<ncclNet_v9_t>("ncclNetPlugin_v9"); }
TEST(NetAbiMultiRecv, V8) { multiRecv<ncclNet_v8_t>("ncclNetPlugin_v8"); }

TEST(NetAbiMultiRecv, PropertiesAdvertiseEightGroupedReceives) {
  const ncclNet_v11_t* net = v11();
  void* ctx = nullptr;
  ASSERT_EQ(net->init(&ctx, 78, nullptr, nullptr, nullptr), ncclSuccess);
  ncclNetProperties_v11_t p;
  ASSERT_EQ(net->getProperties(0, &p), ncclSuccess);
  EXPECT_EQ(p.maxRecvs, kN);
  EXPECT_EQ(p.maxMultiRequestSize, 1);  // NCCL_NET_MULTI_REQUEST is not supported
  const ncclNet_v8_t* old = v8();
  ncclNetProperties_v8_t p8;
  ASSERT_EQ(old->getProperties(0, &p8), ncclSuccess);
  EXPECT_EQ(p8.maxRecvs, kN);
  net->finalize(ctx);
}

}  // namespace
}  // namespace wirewise::net::testing
