// Decision-table ranges as the adaptation log writes them (docs/adaptation-log.md): one object per range,
// {"coll", "min_bytes", "max_bytes", "algo", "proto", "channels"}. Shared by every writer of "table" events.
#pragma once

#include <span>

#include <nlohmann/json.hpp>

#include "adaptive/decision_table.h"

namespace wirewise {

nlohmann::json rangesJson(std::span<const TableRule> ranges);

}  // namespace wirewise
