// The wiring map's JSON form (schema in docs/wiring.md). Figures that were not measured are left out
// rather than written as 0, as in the link_health event, so a reader cannot mistake "no data" for a dead
// link. Reading is strict about types and lenient about unknown keys (a newer probe may add some).
#pragma once

#include <string>

#include <nlohmann/json.hpp>

#include "telemetry/wiring/analysis.h"
#include "telemetry/wiring/wiring_map.h"

namespace wirewise::wiring {

nlohmann::json toJson(const WiringMap& map);
// False with *error naming the offending field ("pairs[3].ce_gbps: expected a number") on a bad map.
bool fromJson(const nlohmann::json& j, WiringMap* map, std::string* error);

// {"flag_below":..,"peer_below":..,"flags":[{"kind","src","dst","measured_gbps","reference_gbps","ratio","text"}],
//  "pairs":[{"src","dst","nominal_gbps","nominal_basis","uni_ratio","bidir_ratio","flagged"}],
//  "gpus":[{"index","memory_gbps","memory_basis","self_copy_ratio","flagged"}]}; unknown figures left out.
nlohmann::json toJson(const Analysis& analysis);

bool readMapFile(const std::string& path, WiringMap* map, std::string* error);
bool writeMapFile(const std::string& path, const WiringMap& map, std::string* error);

}  // namespace wirewise::wiring
