// Net interface v11 (NCCL 2.28 and 2.29, tried first there): per-communicator init/finalize with a context.
#include "plugin/export.h"
#include "plugin/net_comm_shim.h"

namespace glue = wirewise::net::glue;
namespace shim = wirewise::net::comm_shim;

extern "C" WW_EXPORT const ncclNet_v11_t ncclNetPlugin_v11 = {
    WW_PLUGIN_NAME,      shim::init,    glue::devices,   glue::getProperties<ncclNetProperties_v11_t>,
    shim::listen,        shim::connect, glue::accept,    glue::regMr,
    glue::regMrDmaBuf,   glue::deregMr, shim::isend,     shim::irecv,
    glue::iflush,        glue::test,    glue::closeSend, glue::closeRecv,
    glue::closeListen,   nullptr,       nullptr,         nullptr,
    shim::finalize,      nullptr};
