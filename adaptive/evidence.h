// Evidence: members' samples of one interval merged into per (collective, bucket, choice) observations.
//
// Arrival skew: every rank's KernelCh span runs from its own kernel start to the common end, so a rank
// that arrived early also measures its wait. The rank that arrived last measures the bare transfer, and
// its span is the shortest: a collective's time is the minimum over the ranks that reported it. The
// observations of an interval are then the medians of those times per key, robust to the odd straggler
// interval and to the rare collective whose last rank's sample is missing.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "adaptive/evidence_types.h"

namespace wirewise::adapt {

// What ran: NCCL's algorithm, protocol and channel count for one collective.
struct Choice {
  int8_t algo = -1, proto = -1;
  uint8_t nChannels = 0;
  friend auto operator<=>(const Choice&, const Choice&) = default;
};
Decision toDecision(Choice c);  // explicit algo/proto/channels
std::string choiceName(Choice c);  // "ring/simple/16"

struct Observation {
  int coll = -1;
  int bucket = 0;
  Choice choice;
  double medianUs = 0;   // median over collectives of the min-over-ranks time
  double totalUs = 0;    // sum of those times: this key's share of comm time in the interval
  double meanBytes = 0;
  int n = 0;             // collectives
  // Slow channels (the profiler's per-channel summary of each collective, taken from the rank whose time
  // was kept, i.e. the one that measured the bare transfer): the channels slow in at least 3/4 of the
  // collectives and in at least kMinSlowCollectives of them, so that a noisy collective or two do not
  // name a channel; slowRatio is the median slowest/median ratio of the collectives that named one.
  // 0 and 0: no such channel, or a profiler whose channel times are coarse.
  uint64_t slowChannels = 0;
  double slowRatio = 0;
  friend bool operator==(const Observation&, const Observation&) = default;
};

inline constexpr int kMinSlowCollectives = 3;

struct MergeStats {
  uint64_t collectives = 0;   // distinct (collective type, seqNumber) merged
  uint64_t mixedChoices = 0;  // collectives whose ranks reported different choices (dropped)
};

// Observations sorted by (coll, bucket, choice). Samples with unknown coll/algo/proto are ignored.
// Slow-channel evidence is aggregated per key like the times (see Observation::slowChannels).
std::vector<Observation> mergeInterval(std::span<const MemberEvidence> members, MergeStats* stats = nullptr);

}  // namespace wirewise::adapt
