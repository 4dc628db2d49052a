// Decision-table ranges as the adaptation log writes them (docs/adaptation-log.md): one logev::Range per
// range. Shared by every writer of "table" events.
#pragma once

#include <span>
#include <vector>

#include <nlohmann/json.hpp>

#include "adaptive/decision_table.h"
#include "common/log_events.h"

namespace wirewise {

std::vector<logev::Range> logRanges(std::span<const TableRule> ranges);
logev::Range logRange(const TableRule& r);
// The same as JSON, for writers that still build their events by hand.
nlohmann::json rangesJson(std::span<const TableRule> ranges);

}  // namespace wirewise
