// What net v11 and v12 share (their members and signatures are the same; only the properties differ): a
// per-communicator context with init/finalize, and the calls that carry it or profiler handles we ignore.
#pragma once

#include <new>

#include "net/plugin_glue.h"

namespace wirewise::net::comm_shim {

// The per-communicator context NCCL threads through listen/connect; the transport itself is shared.
struct NetContext {
  uint64_t commId;
  int trafficClass;
};

inline ncclResult_t init(void** ctx, uint64_t commId, ncclNetCommConfig_v11_t* config, ncclDebugLogger_t log,
                         ncclProfilerCallback_t /*prof: no net events yet*/) {
  if (ctx == nullptr) return ncclInternalError;
  *ctx = nullptr;  // finalize must tolerate the context of a failed init
  if (ncclResult_t r = glue::init(log); r != ncclSuccess) return r;
  int trafficClass = config != nullptr ? config->trafficClass : NCCL_NET_TRAFFIC_CLASS_UNDEF;
  auto* c = new (std::nothrow) NetContext{commId, trafficClass};
  if (c == nullptr) return ncclSystemError;
  *ctx = c;
  return ncclSuccess;
}

inline ncclResult_t finalize(void* ctx) {
  delete static_cast<NetContext*>(ctx);
  return ncclSuccess;
}

inline ncclResult_t listen(void* /*ctx*/, int dev, void* handle, void** listenComm) {
  return glue::listen(dev, handle, listenComm);
}

inline ncclResult_t connect(void* /*ctx*/, int dev, void* handle, void** sendComm,
                            ncclNetDeviceHandle_v11_t** sendDevComm) {
  return glue::connect(dev, handle, sendComm, sendDevComm);
}

inline ncclResult_t isend(void* sendComm, void* data, size_t size, int tag, void* /*mhandle*/, void* /*phandle*/,
                          void** request) {
  return glue::isend(sendComm, data, size, tag, request);
}

inline ncclResult_t irecv(void* recvComm, int n, void** data, size_t* sizes, int* tags, void** /*mhandles*/,
                          void** /*phandles*/, void** request) {
  return glue::irecv(recvComm, n, data, sizes, tags, request);
}

}  // namespace wirewise::net::comm_shim
