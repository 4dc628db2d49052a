// Planning: which candidates to measure, and which measured one wins. Pure functions of the evidence.
//
// The planner does not trust a model it cannot check. Its prior is NCCL's own cost table for the bucket
// (what NCCL enabled and what it predicts, taken from getCollInfo), used only to prune: calibration measures
// every (algorithm, protocol) NCCL predicts within pruneFactor of its best, at NCCL's own channel count, then
// searches channel counts for the best pair. After a detected change it predicts each candidate's time as its
// last measurement scaled by the change the incumbent saw (common mode) and re-measures only those predicted
// close, plus the choice in force before the last switch (a healed link makes it best again) and NCCL's own.
// Decisions are made only on measurements of the current epoch (since the last detected change).
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "adaptive/evidence.h"
#include "adaptive/evidence_types.h"

namespace wirewise::adapt {

struct Estimate {
  double logUs = 0;  // n-weighted mean of interval log-medians
  int n = 0;         // collectives behind it (capped, so that it keeps following the link)
  uint64_t epoch = 0;
};
using Estimates = std::map<Choice, Estimate>;

// Folds one observation into the estimate of its choice; an estimate from an older epoch is replaced.
void addObservation(Estimates& e, const Observation& o, uint64_t epoch);

// (algo, proto) pairs NCCL enables for this bucket whose NCCL cost is within pruneFactor of the cheapest,
// cheapest first, excluding `skip` (NCCL's own pair, measured anyway). nChannels 0: NCCL's own count.
std::vector<Decision> pairCandidates(const Sight& s, double pruneFactor, Choice skip);

// Channel counts to try next for (algo, proto), over 1..maxChannels, never repeating a count in `tried`
// or one already measured in `epoch`. Time against channel count is not unimodal (a degraded NIC that
// carries two of 16 channels but only one of 11 makes a sawtooth), so the search first covers a coarse
// grid (C, 3C/4, C/2), then closes a bracket around the best point and around any other local
// minimum within 10% of it. Empty when every bracket is closed.
std::vector<int> channelCandidates(const Estimates& e, uint64_t epoch, int8_t algo, int8_t proto, int maxChannels,
                                   const std::set<int>& tried);

// Slow-channel evidence of one choice (Observation::slowChannels, from its latest interval): which of
// its channels ran slow, and how much slower the slowest ran than the median channel.
struct ChannelEvidence {
  uint64_t slowMask = 0;
  double ratio = 0;
  int channels = 0;  // the channel count it was measured with
  uint64_t epoch = 0;
};

// NCCL maps channels to NICs rail-aligned (channel i -> NIC i mod nNics), so the channels that one slow
// NIC carries repeat with the NIC count. The smallest p such that "channel i is slow" depends only on
// i mod p for every i < channels: the NIC count as far as the mask shows it (channels when it shows none).
int slowPeriod(uint64_t mask, int channels);

// Time predicted for c channels over the time measured with ev.channels (topology-aware model): each
// channel carries bytes/c; a slow group (channels that are congruent mod slowPeriod: one NIC) keeps the
// total rate it had, shared by its channels in use; a healthy channel keeps its own rate (the pessimistic
// side: it may get faster when fewer channels share its links). The slowest channel in use sets the time.
// Example: {7, 15} of 16 at 4x: 7 channels 16/7/4 = 0.57, 15 channels (channel 7 alone on its NIC)
// 16/15/2 = 0.53, 14 channels 0.57, 8 channels 16/8 = 2.
double predictChannelFactor(const ChannelEvidence& ev, int c);

// Channel counts 1..min(ev.channels, maxChannels) not in `known` whose predicted log time (from the
// evidence choice's measuredLog) is below belowLog, best predicted first (ties: fewer channels), at most max.
std::vector<int> rankChannelCounts(const ChannelEvidence& ev, double measuredLog, double belowLog, int maxChannels,
                                   const std::set<int>& known, size_t max);

// One clause for explanations: "channels 7 and 15 ran 4.0x slower than the median; 7 channels avoid them".
std::string explainChannels(const ChannelEvidence& ev, int chosen);

// After a change: candidates predicted within closeFactor of the incumbent's new time, best predicted
// first, at most `max`; `former` and `nccl` (when known and different) are included whatever their
// prediction, in their predicted place.
// The incumbent went from incumbentLogBefore to incumbentLogNow; every other estimate is shifted alike.
std::vector<Choice> reprobeCandidates(const Estimates& e, Choice incumbent, double incumbentLogBefore,
                                      double incumbentLogNow,
                                      std::optional<Choice> former, std::optional<Choice> nccl, double closeFactor,
                                      int max);

// The best estimate of `epoch` (ties: lower channel count, then lower algo/proto index).
std::optional<std::pair<Choice, Estimate>> bestInEpoch(const Estimates& e, uint64_t epoch);

}  // namespace wirewise::adapt
