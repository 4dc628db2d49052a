// What every ncclNet_vN shim shares: the status mapping, the exception wall, NCCL's logger and the
// properties conversion (templated over the vN properties struct, whose later versions add fields).
#pragma once

#include <atomic>
#include <cstring>
#include <new>

#include "net/transport.h"
#include "common/nccl/net.h"

namespace wirewise::net::glue {

inline std::atomic<ncclDebugLogger_t> ncclLogger{nullptr};

inline void warnThroughNccl(const char* msg) {
  if (ncclDebugLogger_t log = ncclLogger.load(std::memory_order_acquire)) {
    log(NCCL_LOG_WARN, NCCL_NET, "wirewise/net", 0, "%s", msg);
  }
}

inline void infoThroughNccl(const char* msg) {
  if (ncclDebugLogger_t log = ncclLogger.load(std::memory_order_acquire)) {
    log(NCCL_LOG_INFO, NCCL_NET, "wirewise/net", 0, "%s", msg);
  }
}

inline ncclResult_t toNccl(Status s) {
  switch (s) {
    case Status::kOk: return ncclSuccess;
    case Status::kSystemError: return ncclSystemError;
    case Status::kInvalidArgument: return ncclInvalidArgument;
    case Status::kInvalidUsage: return ncclInvalidUsage;
    case Status::kRemoteError: return ncclRemoteError;
    case Status::kInternalError: break;
  }
  return ncclInternalError;
}

// No exception may cross into NCCL: an allocation failure is a system error, anything else a bug.
template <typename F>
ncclResult_t guard(F&& f) noexcept {
  try {
    return toNccl(f());
  } catch (const std::bad_alloc&) {
    return ncclSystemError;
  } catch (...) {
    return ncclInternalError;
  }
}

inline ncclResult_t init(ncclDebugLogger_t log) {
  if (log != nullptr) ncclLogger.store(log, std::memory_order_release);
  return guard([] {
    setInfoLog(infoThroughNccl);
    return netInit(warnThroughNccl);
  });
}

inline ncclResult_t devices(int* ndev) {
  if (ndev == nullptr) return ncclInternalError;
  *ndev = deviceCount();
  return ncclSuccess;
}

template <typename Props>
ncclResult_t getProperties(int dev, Props* props) {
  if (props == nullptr) return ncclInternalError;
  DeviceProps p;
  if (Status s = getProperties(dev, &p); s != Status::kOk) return toNccl(s);
  std::memset(props, 0, sizeof *props);
  props->name = const_cast<char*>(p.name);
  props->pciPath = nullptr;  // a virtual device for NCCL's topology: no PCI path
  props->guid = p.guid;
  props->ptrSupport = p.ptrSupport;
  props->regIsGlobal = 0;
  props->speed = p.speedMbps;
  props->port = 0;
  props->latency = p.latencyUs;
  props->maxComms = p.maxComms;
  props->maxRecvs = p.maxRecvs;
  props->netDeviceType = NCCL_NET_DEVICE_HOST;
  props->netDeviceVersion = 0;
  if constexpr (requires { props->maxP2pBytes; }) {
    props->forceFlush = 0;
    props->vProps.ndevs = 1;
    props->vProps.devs[0] = dev;
    props->maxP2pBytes = p.maxP2pBytes;
    props->maxCollBytes = p.maxCollBytes;
  }
  if constexpr (requires { props->maxMultiRequestSize; }) props->maxMultiRequestSize = 1;
  if constexpr (requires { props->railId; }) {  // v12
    props->railId = static_cast<int16_t>(p.railId);
    props->planeId = -1;  // no planes: NCCL's "undefined"
  }
  return ncclSuccess;
}

inline ncclResult_t listen(int dev, void* handle, void** listenComm) {
  return guard([&] { return net::listen(dev, handle, listenComm); });
}
inline ncclResult_t connect(int dev, void* handle, void** sendComm, ncclNetDeviceHandle_v11_t** sendDevComm) {
  if (sendDevComm != nullptr) *sendDevComm = nullptr;  // HOST device type: no offload handle
  return guard([&] { return net::connect(dev, handle, sendComm); });
}
inline ncclResult_t accept(void* listenComm, void** recvComm, ncclNetDeviceHandle_v11_t** recvDevComm) {
  if (recvDevComm != nullptr) *recvDevComm = nullptr;
  return guard([&] { return net::accept(listenComm, recvComm); });
}
inline ncclResult_t regMr(void* comm, void* data, size_t size, int type, void** mhandle) {
  return guard([&] { return net::regMr(comm, data, size, type, mhandle); });
}
inline ncclResult_t regMrDmaBuf(void* comm, void* data, size_t size, int type, uint64_t, int, void** mhandle) {
  return regMr(comm, data, size, type, mhandle);
}
inline ncclResult_t deregMr(void* comm, void* mhandle) { return guard([&] { return net::deregMr(comm, mhandle); }); }
inline ncclResult_t isend(void* sendComm, void* data, size_t size, int tag, void** request) {
  return guard([&] { return net::isend(sendComm, data, size, tag, request); });
}
inline ncclResult_t irecv(void* recvComm, int n, void** data, const size_t* sizes, int* tags, void** request) {
  return guard([&] { return net::irecv(recvComm, n, data, sizes, tags, request); });
}
inline ncclResult_t iflush(void* recvComm, int, void**, int*, void**, void** request) {
  return guard([&] { return net::iflush(recvComm, request); });
}
inline ncclResult_t test(void* request, int* done, int* sizes) {
  return guard([&] { return net::test(request, done, sizes); });
}
inline ncclResult_t closeSend(void* c) { return guard([&] { return net::closeSend(c); }); }
inline ncclResult_t closeRecv(void* c) { return guard([&] { return net::closeRecv(c); }); }
inline ncclResult_t closeListen(void* c) { return guard([&] { return net::closeListen(c); }); }

}  // namespace wirewise::net::glue
