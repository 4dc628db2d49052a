// The adaptation log's `net_paths` event: what a communicator's network paths carried since the last
// report (docs/telemetry.md, "Profiler events"). Used by the runtime's background thread at every
// summary and at the communicator's finalize; never by the profiler callbacks.
#pragma once

#include <cstdint>
#include <string>
#include <unordered_map>

#include <nlohmann/json.hpp>

#include "common/log_events.h"
#include "telemetry/proxy_sink.h"

namespace wirewise {

class NetPathsReporter {
 public:
  // Rows with at most this many paths (the busiest by bytes); the rest are counted as paths_omitted.
  static constexpr size_t kMaxRows = 256;

  // The event for the interval since the previous call (since the sink's start on the first), or null
  // when no path saw an op or a step and no counter moved. comm is the communicator's id as logged.
  nlohmann::json take(const ProxySink& sink, const std::string& comm, int64_t intervalMs);

 private:
  std::unordered_map<uint64_t, NetPathTotals> last_;  // by path key
  ProxyCounters lastCounters_;
};

}  // namespace wirewise
