// Net interface v8 (NCCL 2.20.3+): int sizes; no vProps or size limits in the properties.
#include "net/plugin_glue.h"
#include "plugin/export.h"

namespace {

namespace glue = wirewise::net::glue;

ncclResult_t isend(void* sendComm, void* data, int size, int tag, void*, void** request) {
  if (size < 0) return ncclInternalError;
  return glue::isend(sendComm, data, static_cast<size_t>(size), tag, request);
}

ncclResult_t irecv(void* recvComm, int n, void** data, int* sizes, int* tags, void**, void** request) {
  if (n < 1 || n > wirewise::net::kMaxRecvs || sizes == nullptr) return ncclInternalError;
  size_t wide[wirewise::net::kMaxRecvs];
  for (int i = 0; i < n; ++i) {
    if (sizes[i] < 0) return ncclInternalError;
    wide[i] = static_cast<size_t>(sizes[i]);
  }
  return glue::irecv(recvComm, n, data, wide, tags, request);
}

}  // namespace

extern "C" WW_EXPORT const ncclNet_v8_t ncclNetPlugin_v8 = {
    WW_PLUGIN_NAME,    glue::init,     glue::devices,   glue::getProperties<ncclNetProperties_v8_t>,
    glue::listen,      glue::connect,  glue::accept,    glue::regMr,
    glue::regMrDmaBuf, glue::deregMr,  isend,           irecv,
    glue::iflush,      glue::test,     glue::closeSend, glue::closeRecv,
    glue::closeListen, nullptr,        nullptr};
