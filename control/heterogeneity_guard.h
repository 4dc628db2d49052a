// The heterogeneity guard (design.md §4). NCCL picks algorithm and protocol on each rank from that rank's
// own cost table. On a heterogeneous cluster (mixed GPUs or NICs, a topology detected differently) two
// ranks can pick differently for the same collective, and the job hangs (NVIDIA/nccl #1136). Members report
// NCCL's cost table per (collective, size bucket) the first time they see it (adapt::Sight). Where the
// defaults those tables imply differ across members, the guard pins one (algorithm, protocol) that every
// member has enabled, in every verdict from then on, unless the policy's own table already fixes an
// algorithm and protocol enabled on every member for the whole bucket.
//
// What it cannot do: a bucket first seen before B0 is reported at B0 and pinned from B1, so a collective of
// a heterogeneous bucket before B1 runs NCCL's per-rank choice, as without wirewise. It pins algorithm and
// protocol only: NCCL agrees on the channel count at init across ranks. Pure and deterministic (the order in
// which members report does not change the pins).
#pragma once

#include <cstdint>
#include <map>
#include <set>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "adaptive/decision_table.h"
#include "adaptive/evidence_types.h"

namespace wirewise::control {

// NCCL's own pick from a cost table: the first strictly smallest enabled entry in algorithm-major order
// (enabled: >= 0 and < 3.6e9). {-1, -1} when nothing is enabled.
std::pair<int, int> ncclDefaultOf(const float (&cost)[kNumAlgos][kNumProtos]);

class HeterogeneityGuard {
 public:
  void observe(uint64_t memberId, std::span<const adapt::Sight> sights);
  // Rules to put in front of a verdict's rules (the first covering rule wins), one per heterogeneous bucket
  // whose policy decision is not already safe. Each covers the bucket's exact byte range.
  std::vector<TableRule> pins(std::span<const TableRule> policyRules);
  // Lines for the log about buckets found heterogeneous or re-pinned since the last pins(), one per
  // (collective, members' defaults, pin).
  std::vector<std::string> takeNotes();
  size_t heterogeneousBuckets() const;

 private:
  struct Bucket {
    std::set<uint64_t> members;                       // who reported it (a re-sent report counts once)
    std::map<std::pair<int, int>, uint32_t> defaults;  // NCCL's default -> how many members
    float worst[kNumAlgos][kNumProtos] = {};          // max over members; -1 where any member disabled it
    std::pair<int, int> pin{-1, -1};
    bool noted = false;
  };
  void choosePin(int coll, int bucket, Bucket& b);

  std::map<std::pair<int, int>, Bucket> buckets_;  // (coll, bucket)
  // Not yet logged: (coll, " (defaults): what was done") -> buckets, in bucket order.
  std::map<std::pair<int, std::string>, std::vector<int>> findings_;
};

}  // namespace wirewise::control
