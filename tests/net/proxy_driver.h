// Plays NCCL's proxy against an ncclNet_vN table: non-blocking connect/accept loops, then isend/irecv/
// test loops that keep up to `window` requests in flight, retrying when the plugin answers a null
// request. Templated over the table type so the same driver runs v11 and v8.
#pragma once

#include <chrono>
#include <cstring>
#include <string>
#include <vector>

#include "common/nccl/net.h"
#include "tests/net/traffic.h"

namespace wirewise::net::testing {

inline constexpr auto kSetupTimeout = std::chrono::seconds(20);

template <typename Net>
ncclResult_t callConnect(const Net* net, void* ctx, int dev, void* handle, void** comm) {
  ncclNetDeviceHandle_v11_t* devComm = nullptr;
  if constexpr (requires { net->finalize; }) return net->connect(ctx, dev, handle, comm, &devComm);
  else return net->connect(dev, handle, comm, &devComm);
}

template <typename Net>
ncclResult_t connectLoop(const Net* net, void* ctx, int dev, void* handle, void** sendComm) {
  auto start = std::chrono::steady_clock::now();
  *sendComm = nullptr;
  while (*sendComm == nullptr) {
    if (ncclResult_t r = callConnect(net, ctx, dev, handle, sendComm); r != ncclSuccess) return r;
    if (std::chrono::steady_clock::now() - start > kSetupTimeout) return ncclSystemError;
  }
  return ncclSuccess;
}

template <typename Net>
ncclResult_t acceptLoop(const Net* net, void* listenComm, void** recvComm) {
  auto start = std::chrono::steady_clock::now();
  *recvComm = nullptr;
  while (*recvComm == nullptr) {
    ncclNetDeviceHandle_v11_t* devComm = nullptr;
    if (ncclResult_t r = net->accept(listenComm, recvComm, &devComm); r != ncclSuccess) return r;
    if (std::chrono::steady_clock::now() - start > kSetupTimeout) return ncclSystemError;
  }
  return ncclSuccess;
}

template <typename Net>
ncclResult_t postSend(const Net* net, void* comm, void* data, size_t size, int tag, void* mh, void** req) {
  if constexpr (requires { net->finalize; }) return net->isend(comm, data, size, tag, mh, nullptr, req);
  else return net->isend(comm, data, static_cast<int>(size), tag, mh, req);
}

template <typename Net>
ncclResult_t postRecv(const Net* net, void* comm, void* data, size_t cap, int tag, void* mh, void** req) {
  int tags[1] = {tag};
  void* datas[1] = {data};
  void* mhs[1] = {mh};
  if constexpr (requires { net->finalize; }) {
    size_t sizes[1] = {cap};
    void* ph[1] = {nullptr};
    *req = reinterpret_cast<void*>(NCCL_NET_OPTIONAL_RECV_COMPLETION);  // as NCCL does for LL/LL128
    return net->irecv(comm, 1, datas, sizes, tags, mhs, ph, req);
  } else {
    int sizes[1] = {static_cast<int>(cap)};
    return net->irecv(comm, 1, datas, sizes, tags, mhs, req);
  }
}

struct RunResult {
  std::string error;  // empty: every message arrived intact
  size_t bytes = 0;
  double seconds = 0.0;
};

// One side of a transfer of `traffic`. The receiver posts buffers `slack` bytes larger than each message.
template <typename Net>
RunResult runSide(const Net* net, void* comm, bool sender, const std::vector<Message>& traffic, uint64_t seed,
                  int window, size_t slack = 0) {
  RunResult res;
  size_t maxSize = 0;
  for (const Message& m : traffic) maxSize = std::max(maxSize, m.size);
  std::vector<std::vector<char>> bufs(static_cast<size_t>(window), std::vector<char>(maxSize + slack + 1));
  void* mh = nullptr;
  if (net->regMr(comm, bufs[0].data(), bufs[0].size(), NCCL_PTR_HOST, &mh) != ncclSuccess || mh == nullptr)
    return {"regMr failed"};
  struct Slot {
    void* req = nullptr;
    int index = -1;
  };
  std::vector<Slot> slots(static_cast<size_t>(window));
  int next = 0, completed = 0;
  const int n = static_cast<int>(traffic.size());
  auto start = std::chrono::steady_clock::now();
  auto deadline = start + std::chrono::seconds(180);  // generous: shared CI machines can be very loaded
  while (completed < n) {
    if (std::chrono::steady_clock::now() > deadline) return {"timed out after " + std::to_string(completed)};
    for (size_t s = 0; s < slots.size(); ++s) {
      Slot& slot = slots[s];
      if (slot.index < 0 && next < n) {
        const Message& m = traffic[static_cast<size_t>(next)];
        char* buf = bufs[s].data();
        void* req = nullptr;
        ncclResult_t r;
        if (sender) {
          fill(buf, m.size, seed, next);
          r = postSend(net, comm, buf, m.size, m.tag, mh, &req);
        } else {
          r = postRecv(net, comm, buf, m.size + slack, m.tag, mh, &req);
        }
        if (r != ncclSuccess) return {"post failed: " + std::to_string(r)};
        if (req != nullptr) slot = {req, next++};
      }
      if (slot.index < 0) continue;
      int done = 0, size = -1;
      if (ncclResult_t r = net->test(slot.req, &done, &size); r != ncclSuccess)
        return {"test failed: " + std::to_string(r) + " at message " + std::to_string(slot.index)};
      if (!done) continue;
      const Message& m = traffic[static_cast<size_t>(slot.index)];
      if (static_cast<size_t>(size) != m.size)
        return {"message " + std::to_string(slot.index) + ": size " + std::to_string(size) + " != " +
                std::to_string(m.size)};
      if (!sender) {
        if (long at = firstMismatch(bufs[s].data(), m.size, seed, slot.index); at >= 0)
          return {"message " + std::to_string(slot.index) + ": wrong byte at " + std::to_string(at)};
      }
      res.bytes += m.size;
      ++completed;
      slot = Slot{};
    }
  }
  res.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  if (net->deregMr(comm, mh) != ncclSuccess) return {"deregMr failed"};
  return res;
}

}  // namespace wirewise::net::testing
