// Error paths of the real library through NCCL's net ABI: each is an error code, never a crash or a hang.
#include <cstring>

#include <gtest/gtest.h>

#include "tests/net/net_abi_util.h"

namespace wirewise::net::testing {
namespace {

TEST(NetAbiErrors, MalformedHandleIsAnErrorNotACrash) {
  const ncclNet_v11_t* net = v11();
  void* ctx = nullptr;
  ASSERT_EQ(net->init(&ctx, 9, nullptr, nullptr, nullptr), ncclSuccess);
  char handle[NCCL_NET_HANDLE_MAXSIZE];
  std::memset(handle, 0x5a, sizeof handle);
  void* sendComm = nullptr;
  ncclNetDeviceHandle_v11_t* dev = nullptr;
  EXPECT_EQ(net->connect(ctx, 0, handle, &sendComm, &dev), ncclInternalError);
  EXPECT_EQ(sendComm, nullptr);
  EXPECT_EQ(net->finalize(ctx), ncclSuccess);
}

TEST(NetAbiErrors, ConnectToAClosedListenerFails) {
  const ncclNet_v11_t* net = v11();
  void* ctx = nullptr;
  ASSERT_EQ(net->init(&ctx, 10, nullptr, nullptr, nullptr), ncclSuccess);
  char handle[NCCL_NET_HANDLE_MAXSIZE];
  void* listenComm = nullptr;
  ASSERT_EQ(net->listen(ctx, 0, handle, &listenComm), ncclSuccess);
  ASSERT_EQ(net->closeListen(listenComm), ncclSuccess);
  void* sendComm = nullptr;
  EXPECT_EQ(connectLoop(net, ctx, 0, handle, &sendComm), ncclSystemError);
  EXPECT_EQ(sendComm, nullptr);
  EXPECT_EQ(net->finalize(ctx), ncclSuccess);
}

TEST(NetAbiErrors, PeerThatVanishesIsAnErrorNotAHang) {
  const ncclNet_v11_t* net = v11();
  void* ctx = nullptr;
  ASSERT_EQ(net->init(&ctx, 11, nullptr, nullptr, nullptr), ncclSuccess);
  void *lc, *sc, *rc;
  pair(net, ctx, &lc, &sc, &rc);
  char buf[64];
  void* req = nullptr;
  ASSERT_EQ(postRecv(net, rc, buf, sizeof buf, 0, nullptr, &req), ncclSuccess);
  ASSERT_NE(req, nullptr);
  ASSERT_EQ(net->closeSend(sc), ncclSuccess);
  int size = 0;
  EXPECT_EQ(waitRequest(net, req, &size), ncclRemoteError);
  EXPECT_EQ(net->closeRecv(rc), ncclSuccess);
  EXPECT_EQ(net->closeListen(lc), ncclSuccess);
  EXPECT_EQ(net->finalize(ctx), ncclSuccess);
}

TEST(NetAbiErrors, MessageLargerThanTheReceiveBufferIsRejected) {
  const ncclNet_v11_t* net = v11();
  void* ctx = nullptr;
  ASSERT_EQ(net->init(&ctx, 12, nullptr, nullptr, nullptr), ncclSuccess);
  void *lc, *sc, *rc;
  pair(net, ctx, &lc, &sc, &rc);
  char out[100] = {}, in[10];
  void *sreq = nullptr, *rreq = nullptr;
  ASSERT_EQ(postSend(net, sc, out, sizeof out, 0, nullptr, &sreq), ncclSuccess);
  ASSERT_EQ(postRecv(net, rc, in, sizeof in, 0, nullptr, &rreq), ncclSuccess);
  int size = 0;
  EXPECT_EQ(waitRequest(net, sreq, &size), ncclSuccess);
  EXPECT_EQ(waitRequest(net, rreq, &size), ncclInvalidUsage);
  void* mh = nullptr;
  EXPECT_EQ(net->regMr(sc, out, sizeof out, NCCL_PTR_CUDA, &mh), ncclInternalError);
  net->closeSend(sc);
  net->closeRecv(rc);
  net->closeListen(lc);
  net->finalize(ctx);
}

}  // namespace
}  // namespace wirewise::net::testing
