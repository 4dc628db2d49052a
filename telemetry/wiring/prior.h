// The wiring map as the link-health model's prior (`WIREWISE_WIRING=FILE`): one LinkHealth record per
// measured GPU pair and one per missing GPU, so a job starts already knowing which pairs are weak.
// Records use the link-health conventions (telemetry/collectors/link_health.h):
//   id "gpu<src>->gpu<dst>:<nvlink|pcie|p2p>" per ordered pair ("p2p": link type unknown, kind pcie,
//   the conservative class); "gpu<n>:wiring" for a missing GPU (present = false, state down).
//   A flagged pair is degraded: nominalBps = what was measured, bestNominalBps = the reference it was
//   compared with, so LinkHealthSummary::minCapacityRatio is the flag's ratio. A healthy pair is up with
//   nominalBps = bestNominalBps = its nominal figure (the measured one when the nominal is unknown).
//   A pair without peer access over NVLink is down. No rates are claimed (rateValid = false).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "telemetry/collectors/link_health.h"
#include "telemetry/wiring/analysis.h"
#include "telemetry/wiring/wiring_map.h"

namespace wirewise::wiring {

struct WiringPrior {
  std::string source;                          // the file it came from
  std::string host;                            // the host the map says it measured
  std::vector<collectors::LinkHealth> links;   // what the link-health model starts with
  std::vector<std::string> flags;              // the analysis' flag lines, for the log
};

// Pure conversion; nowNs stamps lastChangeNs (the sampler's clock).
std::vector<collectors::LinkHealth> priorLinks(const WiringMap& map, const Analysis& analysis, int64_t nowNs);

// Reads and analyses the map at `path` with the default options. Never throws; false with *error set
// ("cannot read FILE", "FILE: pairs[2].src: missing", ...) when the file is unusable: the caller then
// starts without a prior, as if the variable were unset.
bool loadWiringPrior(const std::string& path, int64_t nowNs, WiringPrior* out, std::string* error);

}  // namespace wirewise::wiring
