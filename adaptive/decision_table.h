// Decision tables: per collective type, a (algorithm, protocol, nChannels | keep NCCL's) for every
// message size. Built once off the hot path, then published as an immutable snapshot; lookup is O(1).
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "adaptive/buckets.h"
#include "adaptive/types.h"

namespace wirewise {

// A rule covers [minBytes, maxBytes] (both inclusive) of one collective (or every one, coll == kAny).
struct TableRule {
  int coll = kAny;
  uint64_t minBytes = 0;
  uint64_t maxBytes = UINT64_MAX;
  Decision decision;
  friend bool operator==(const TableRule&, const TableRule&) = default;
};

class DecisionTable {
 public:
  // The first rule that covers a size wins, as in NCCL's example tuner. Rules may start and end
  // anywhere: a bucket cut by a rule edge keeps an exact (tiny) list of sub-ranges. A covering rule whose
  // decision is keepsNccl() still wins (it shields the sizes from later rules). Rules with coll outside
  // kAny..4 or minBytes > maxBytes cover nothing. Build is O((rules + buckets) log rules) per collective.
  static std::shared_ptr<const DecisionTable> build(std::span<const TableRule> rules, std::string reason);
  static std::shared_ptr<const DecisionTable> neutral();  // keeps NCCL's choice everywhere

  // Hot path: no allocation, no locks; bounded work (one bucket index, then at most a binary search over
  // the few sub-ranges of a cut bucket). collType outside 0..4: Decision{} (keep NCCL's choice).
  Decision lookup(int collType, uint64_t nBytes) const noexcept {
    return lookup(collType, SizeBuckets::index(nBytes), nBytes);
  }
  // The same with the bucket already known (bucket == SizeBuckets::index(nBytes)): getCollInfo computes it
  // once for the table and for the cost-table sights.
  Decision lookup(int collType, int bucket, uint64_t nBytes) const noexcept;

  // Maximal ranges with one decision each, in order, per collective: what the log and the CLI show.
  // Adjacent equal decisions are merged and keepsNccl() stretches are left out. Sorted by (coll, minBytes).
  std::vector<TableRule> ranges() const;
  bool isNeutral() const { return neutral_; }
  const std::string& reason() const { return reason_; }
  uint64_t digest() const { return digest_; }  // FNV-1a over ranges(); equal tables, equal digests

 private:
  // A bucket either has one decision or, when a rule edge cuts it, splitCount > 0 contiguous sub-ranges
  // splits_[splitBegin, splitBegin + splitCount) that cover it exactly, in order. 32-bit indices so that
  // no rule set, however large, can overflow them.
  struct Cell {
    Decision decision;  // used when splitCount == 0
    uint32_t splitBegin = 0;
    uint32_t splitCount = 0;
  };
  struct Split {
    uint64_t minBytes, maxBytes;
    Decision decision;
  };
  DecisionTable() = default;
  void buildColl(int coll, std::span<const TableRule> rules);
  Cell cells_[kNumCollTypes][SizeBuckets::kCount];
  std::vector<Split> splits_;
  std::string reason_;
  uint64_t digest_ = 0;
  bool neutral_ = true;
};

// Applies a decision to NCCL's cost table, never enabling an entry NCCL disabled (-1.0 or >= 3.6e9).
// algo/proto both set: that entry becomes 0.0 (the strict minimum); one set: the cheapest enabled entry
// of that algorithm/protocol by NCCL's own costs; neither: table untouched. If the wanted entry is
// disabled, nothing changes at all (nChannels included): NCCL's choice stands for that call.
// Returns true when the decision took effect (the wanted entry was forced and/or *nChannels written);
// false when nothing was written. nChannels is written only for d.nChannels in 1..kMaxChannels and only
// when the algo/proto part applied (or there is none). nChannels may be null. An invalid table view
// (null cells, numAlgo or numProto <= 0) changes nothing. Out-of-range algo/proto are checked against
// the view's numAlgo/numProto before any memory is touched.
bool applyDecision(const Decision& d, CostTableView table, int* nChannels) noexcept;

}  // namespace wirewise
