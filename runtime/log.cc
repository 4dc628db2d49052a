#include "runtime/log.h"

#include <atomic>
#include <cstdarg>
#include <cstdio>

namespace wirewise::log {
namespace {
std::atomic<ncclDebugLogger_t> gLogger{nullptr};
}

void setLogger(ncclDebugLogger_t fn) {
  if (fn == nullptr) return;
  ncclDebugLogger_t expected = nullptr;
  gLogger.compare_exchange_strong(expected, fn);
}

ncclDebugLogger_t logger() { return gLogger.load(std::memory_order_acquire); }

void write(ncclDebugLogLevel level, unsigned long subsys, const char* file, int line, const char* fmt, ...) {
  ncclDebugLogger_t fn = logger();
  if (fn == nullptr) return;  // no host logger yet: stay silent rather than guess where to print
  // NCCL's logger is variadic, not v-style: format here, hand it over as one "%s".
  char buf[1024];
  va_list ap;
  va_start(ap, fmt);
  std::vsnprintf(buf, sizeof buf, fmt, ap);
  va_end(ap);
  fn(level, subsys, file, line, "%s", buf);
}

}  // namespace wirewise::log
