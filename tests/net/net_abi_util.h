// Loading the real library as NCCL does, and small helpers the ABI tests share.
#pragma once

#include <dlfcn.h>

#include <chrono>

#include <gtest/gtest.h>

#include "tests/net/proxy_driver.h"

namespace wirewise::net::testing {

inline void* library() {
  static void* lib = dlopen(WW_NET_SO, RTLD_NOW | RTLD_LOCAL);
  return lib;
}

template <typename Net>
const Net* table(const char* symbol) {
  void* lib = library();
  return lib == nullptr ? nullptr : static_cast<const Net*>(dlsym(lib, symbol));
}

inline const ncclNet_v12_t* v12() { return table<ncclNet_v12_t>("ncclNetPlugin_v12"); }
inline const ncclNet_v11_t* v11() { return table<ncclNet_v11_t>("ncclNetPlugin_v11"); }
inline const ncclNet_v8_t* v8() { return table<ncclNet_v8_t>("ncclNetPlugin_v8"); }

template <typename Net>
ncclResult_t waitRequest(const Net* net, void* req, int* size,
                         std::chrono::steady_clock::duration limit = kSetupTimeout) {
  auto start = std::chrono::steady_clock::now();
  int done = 0;
  while (!done) {
    if (ncclResult_t r = net->test(req, &done, size); r != ncclSuccess) return r;
    if (std::chrono::steady_clock::now() - start > limit) return ncclInProgress;
  }
  return ncclSuccess;
}

// Connected pair for the error-path tests (both ends in this thread: setup never blocks).
template <typename Net>
void pair(const Net* net, void* ctx, void** listenComm, void** sendComm, void** recvComm) {
  char handle[NCCL_NET_HANDLE_MAXSIZE];
  ASSERT_EQ(net->listen(ctx, 0, handle, listenComm), ncclSuccess);
  *sendComm = *recvComm = nullptr;
  auto start = std::chrono::steady_clock::now();
  while ((*sendComm == nullptr || *recvComm == nullptr) && std::chrono::steady_clock::now() - start < kSetupTimeout) {
    ncclNetDeviceHandle_v11_t* d = nullptr;
    if (*sendComm == nullptr) {
      ASSERT_EQ(net->connect(ctx, 0, handle, sendComm, &d), ncclSuccess);
    }
    if (*recvComm == nullptr) {
      ASSERT_EQ(net->accept(*listenComm, recvComm, &d), ncclSuccess);
    }
  }
  ASSERT_NE(*sendComm, nullptr);
  ASSERT_NE(*recvComm, nullptr);
}

}  // namespace wirewise::net::testing
