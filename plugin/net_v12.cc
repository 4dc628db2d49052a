// Net interface v12 (NCCL 2.30.3+, tried first there): v11's calls; the properties add the rail and plane.
#include "plugin/export.h"
#include "plugin/net_comm_shim.h"

namespace glue = wirewise::net::glue;
namespace shim = wirewise::net::comm_shim;

extern "C" WW_EXPORT const ncclNet_v12_t ncclNetPlugin_v12 = {
    WW_PLUGIN_NAME,      shim::init,    glue::devices,   glue::getProperties<ncclNetProperties_v12_t>,
    shim::listen,        shim::connect, glue::accept,    glue::regMr,
    glue::regMrDmaBuf,   glue::deregMr, shim::isend,     shim::irecv,
    glue::iflush,        glue::test,    glue::closeSend, glue::closeRecv,
    glue::closeListen,   nullptr,       nullptr,         nullptr,
    shim::finalize,      nullptr};
