// The bridge to NCCL's logger. NCCL hands us a printf-style logger at every init; we keep the first
// non-null one process-wide (it is the same ncclDebugLog for every comm) and fall back to silence.
// Never called from the hot path except wwTrace (compiled out unless WIREWISE_ENABLE_TRACE).
#pragma once

#include "common/nccl/common.h"

namespace wirewise::log {

void setLogger(ncclDebugLogger_t fn);  // first non-null wins; thread-safe
ncclDebugLogger_t logger();            // may be null

void write(ncclDebugLogLevel level, unsigned long subsys, const char* file, int line, const char* fmt, ...)
    __attribute__((format(printf, 5, 6)));

}  // namespace wirewise::log

#define WW_WARN(subsys, fmt, ...) \
  ::wirewise::log::write(NCCL_LOG_WARN, (subsys), __FILE__, __LINE__, "wirewise: " fmt, ##__VA_ARGS__)
#define WW_INFO(subsys, fmt, ...) \
  ::wirewise::log::write(NCCL_LOG_INFO, (subsys), __FILE__, __LINE__, "wirewise: " fmt, ##__VA_ARGS__)
