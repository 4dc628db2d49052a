// Net interface v9 (NCCL 2.24.3+): size_t sizes, no profiler handles.
#include "net/plugin_glue.h"
#include "plugin/export.h"

namespace {

namespace glue = wirewise::net::glue;

ncclResult_t isend(void* sendComm, void* data, size_t size, int tag, void*, void** request) {
  return glue::isend(sendComm, data, size, tag, request);
}

ncclResult_t irecv(void* recvComm, int n, void** data, size_t* sizes, int* tags, void**, void** request) {
  return glue::irecv(recvComm, n, data, sizes, tags, request);
}

}  // namespace

extern "C" WW_EXPORT const ncclNet_v9_t ncclNetPlugin_v9 = {
    WW_PLUGIN_NAME,    glue::init,     glue::devices,   glue::getProperties<ncclNetProperties_v9_t>,
    glue::listen,      glue::connect,  glue::accept,    glue::regMr,
    glue::regMrDmaBuf, glue::deregMr,  isend,           irecv,
    glue::iflush,      glue::test,     glue::closeSend, glue::closeRecv,
    glue::closeListen, nullptr,        nullptr,         nullptr};
