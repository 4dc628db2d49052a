// Net interface v10 (NCCL 2.26.2+): global init with a profiler callback; connect takes a comm config.
#include "net/plugin_glue.h"
#include "plugin/export.h"

namespace {

namespace glue = wirewise::net::glue;

ncclResult_t init(ncclDebugLogger_t log, ncclProfilerCallback_t /*prof*/) { return glue::init(log); }

ncclResult_t connect(int dev, ncclNetCommConfig_v10_t* /*config*/, void* handle, void** sendComm,
                     ncclNetDeviceHandle_v10_t** sendDevComm) {
  return glue::connect(dev, handle, sendComm, sendDevComm);
}

ncclResult_t isend(void* sendComm, void* data, size_t size, int tag, void*, void*, void** request) {
  return glue::isend(sendComm, data, size, tag, request);
}

ncclResult_t irecv(void* recvComm, int n, void** data, size_t* sizes, int* tags, void**, void**, void** request) {
  return glue::irecv(recvComm, n, data, sizes, tags, request);
}

}  // namespace

extern "C" WW_EXPORT const ncclNet_v10_t ncclNetPlugin_v10 = {
    WW_PLUGIN_NAME,    init,           glue::devices,   glue::getProperties<ncclNetProperties_v10_t>,
    glue::listen,      connect,        glue::accept,    glue::regMr,
    glue::regMrDmaBuf, glue::deregMr,  isend,           irecv,
    glue::iflush,      glue::test,     glue::closeSend, glue::closeRecv,
    glue::closeListen, nullptr,        nullptr,         nullptr};
