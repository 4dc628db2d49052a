#include "runtime/link_notes.h"

#include "common/text.h"

namespace wirewise {

std::optional<adapt::LinkNote> linkNoteFor(const std::string& host, const collectors::LinkHealth& l, bool everUp) {
  const bool degraded = l.state == collectors::LinkState::kDegraded;
  const bool lost = l.state == collectors::LinkState::kDown && everUp;
  if (!degraded && !lost) return std::nullopt;
  adapt::LinkNote n;
  n.link = printableOnly((host + "/" + l.id).substr(0, adapt::kMaxLinkName));
  n.state = degraded ? 1 : 2;
  n.capacityRatio = l.bestNominalBps > 0 ? static_cast<float>(l.nominalBps / l.bestNominalBps) : 1.0f;
  n.errorsPerSec = static_cast<float>(l.errorsPerSec);
  if (l.kind == collectors::LinkKind::kRail) {
    // A rail has no nominal speed worth comparing: its measured rate against its peer rails' stands in.
    n.capacityRatio = static_cast<float>(l.rateRatio);
    n.errorsPerSec = l.congested ? static_cast<float>(l.congestionPerSec) : 0.0f;  // retransmits/s
    if (l.baselineRttUs > 0) {
      n.rttUs = static_cast<float>(l.rttUs);
      n.baselineRttUs = static_cast<float>(l.baselineRttUs);
    }
  }
  return n;
}

}  // namespace wirewise
