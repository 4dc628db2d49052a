// Net interface v11 (NCCL 2.28.3+, tried first): per-communicator init/finalize with a context.
#include "net/plugin_glue.h"
#include "plugin/export.h"

namespace {

namespace glue = wirewise::net::glue;

// The per-communicator context NCCL threads through listen/connect; the transport itself is shared.
struct NetContext {
  uint64_t commId;
  int trafficClass;
};

ncclResult_t init(void** ctx, uint64_t commId, ncclNetCommConfig_v11_t* config, ncclDebugLogger_t log,
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

ncclResult_t finalize(void* ctx) {
  delete static_cast<NetContext*>(ctx);
  return ncclSuccess;
}

ncclResult_t listen(void* /*ctx*/, int dev, void* handle, void** listenComm) {
  return glue::listen(dev, handle, listenComm);
}

ncclResult_t connect(void* /*ctx*/, int dev, void* handle, void** sendComm, ncclNetDeviceHandle_v11_t** sendDevComm) {
  return glue::connect(dev, handle, sendComm, sendDevComm);
}

ncclResult_t isend(void* sendComm, void* data, size_t size, int tag, void* /*mhandle*/, void* /*phandle*/,
                   void** request) {
  return glue::isend(sendComm, data, size, tag, request);
}

ncclResult_t irecv(void* recvComm, int n, void** data, size_t* sizes, int* tags, void** /*mhandles*/,
                   void** /*phandles*/, void** request) {
  return glue::irecv(recvComm, n, data, sizes, tags, request);
}

}  // namespace

extern "C" WW_EXPORT const ncclNet_v11_t ncclNetPlugin_v11 = {
    WW_PLUGIN_NAME,      init,         glue::devices,   glue::getProperties<ncclNetProperties_v11_t>,
    listen,              connect,      glue::accept,    glue::regMr,
    glue::regMrDmaBuf,   glue::deregMr, isend,          irecv,
    glue::iflush,        glue::test,   glue::closeSend, glue::closeRecv,
    glue::closeListen,   nullptr,      nullptr,         nullptr,
    finalize,            nullptr};
