// What wirewise's choices saved, or cost, against NCCL's own choices, estimated from the log's own
// measurements (`wirewise log summarize`, docs/adaptation-log.md "Time saved"). Pure: reads a
// CommSummary.
#pragma once

#include <cstdint>
#include <string>

#include "tools/log_summary.h"

namespace wirewise::tools {

// Per rank (the summary rows of every rank, divided by the ranks that reported them).
struct SavingsEstimate {
  double savedUs = 0;  // NCCL's choices' estimated time less the time as run; negative: wirewise cost time
  double runUs = 0;    // collective time as run, every bucket
  double estimatedRunUs = 0;  // of which in the buckets estimated
  uint64_t bucketsEstimated = 0;
  uint64_t bucketsUnknown = 0;  // a change of choice there carries no before/after measurement
  int64_t ranks = 0;
  bool any() const { return bucketsEstimated > 0; }
};

// Per (collective, size bucket), the summary intervals in order, against what the policy had committed
// then. The policy's `adapt` events that changed the choice (calibrated, commit, recover, revert) say what
// each change gained per call, measured before and after under the same conditions (`before_us`,
// `after_us`); chained, they give what the committed choice gains over NCCL's own at each moment. Every
// call of the committed choice counts that gain. In each interval the choice most calls ran is the
// incumbent; the other calls were probes, and count the difference between their time and the
// incumbent's in the same interval (a probe slower than NCCL's choice is a cost). A bucket where a change
// carries no before/after measurement is counted as unknown, not guessed.
SavingsEstimate estimateSavings(const CommSummary& c);

// "saved 1.84 s of 10.12 s per rank (15.4% of NCCL's 11.96 s), estimated in 6 buckets; ..." or "".
std::string savingsText(const SavingsEstimate& e);

}  // namespace wirewise::tools
