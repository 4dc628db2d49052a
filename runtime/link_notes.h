// What the coordinator hears of one link (docs/policy.md, "Evidence"): a link is news when it is degraded,
// or down after having been up (an unused port that was never up is not). Pure; the sampler calls it per
// link per pass.
#pragma once

#include <optional>
#include <string>

#include "adaptive/evidence_types.h"
#include "telemetry/collectors/link_health.h"

namespace wirewise {

// Null when the link is no news. host prefixes the link's id, cut to kMaxLinkName printable bytes.
std::optional<adapt::LinkNote> linkNoteFor(const std::string& host, const collectors::LinkHealth& l, bool everUp);

}  // namespace wirewise
