// Connecting a send/receive pair through the internal API (both ends in one thread: setup never blocks).
#pragma once

#include <chrono>

#include <gtest/gtest.h>

#include "net/transport.h"

namespace wirewise::net::testing {

struct Pair {
  void* lc = nullptr;
  void* sc = nullptr;
  void* rc = nullptr;
  void close() {
    if (sc != nullptr) closeSend(sc);
    if (rc != nullptr) closeRecv(rc);
    if (lc != nullptr) closeListen(lc);
    sc = rc = lc = nullptr;
  }
};

// listenDev and connectDev differ when the two ends live in different network namespaces.
inline Pair connectPair(int listenDev, int connectDev = -1) {
  if (connectDev < 0) connectDev = listenDev;
  Pair p;
  char handle[kHandleBytes];
  EXPECT_EQ(listen(listenDev, handle, &p.lc), Status::kOk);
  auto start = std::chrono::steady_clock::now();
  while ((p.sc == nullptr || p.rc == nullptr) && std::chrono::steady_clock::now() - start < std::chrono::seconds(20)) {
    if (p.sc == nullptr) {
      EXPECT_EQ(connect(connectDev, handle, &p.sc), Status::kOk);
    }
    if (p.rc == nullptr) {
      EXPECT_EQ(accept(p.lc, &p.rc), Status::kOk);
    }
  }
  return p;
}

// Test until done or error; kInProgress-like timeout reported as kInternalError after `limit`.
inline Status waitDone(void* req, int* sizes, std::chrono::steady_clock::duration limit = std::chrono::seconds(60)) {
  auto start = std::chrono::steady_clock::now();
  int done = 0;
  while (!done) {
    if (Status s = test(req, &done, sizes); s != Status::kOk) return s;
    if (std::chrono::steady_clock::now() - start > limit) return Status::kInternalError;
  }
  return Status::kOk;
}

}  // namespace wirewise::net::testing
