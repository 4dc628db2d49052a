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

// getCollInfo's form of a Decision, compiled once when a table is built so that the hot path neither
// re-derives what a Decision asks of the cost table nor re-checks its channel count on every call.
struct CostAction {
  enum Kind : uint8_t {
    kKeep,         // nothing for getCollInfo to do
    kChannels,     // only a channel count
    kEntry,        // force (algo, proto)
    kAlgoRow,      // algo fixed: the cheapest enabled protocol of it, by NCCL's costs
    kProtoColumn,  // proto fixed: the cheapest enabled algorithm for it
    kRefuse,       // names an algorithm or protocol below 0 (no table should): never applies
    kSplit,        // only in DecisionTable's own array: a cut bucket, whose pieces hold the actions
  };
  Kind kind = kKeep;
  // 0..INT8_MAX for kEntry, kAlgoRow (algo) and kProtoColumn (proto): never negative, so that comparing
  // them with NCCL's numAlgo and numProto also rejects a count of 0 or below.
  int8_t algo = kAny;
  int8_t proto = kAny;
  uint8_t nChannels = 0;  // 1..kMaxChannels, or 0: leave NCCL's
  static CostAction of(const Decision& d) noexcept;
  friend bool operator==(const CostAction&, const CostAction&) = default;
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
  // getCollInfo's lookup: the compiled action for the same cell. The caller has checked collType to be in
  // 0..kNumCollTypes - 1 and passes collBucket(collType, SizeBuckets::index(nBytes)).
  CostAction action(int collBucketIndex, uint64_t nBytes) const noexcept {
    const CostAction a = actions_[collBucketIndex];
    if (a.kind != CostAction::kSplit) [[likely]]
      return a;
    return findSplit(cells_[collBucketIndex], nBytes).action;
  }

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
    CostAction action;
  };
  DecisionTable() = default;
  const Split& findSplit(const Cell& cell, uint64_t nBytes) const noexcept;
  void buildColl(int coll, std::span<const TableRule> rules);
  Cell cells_[kNumCollTypes * SizeBuckets::kCount];  // by collBucket(collective, bucket)
  // getCollInfo's copy, four bytes a cell: CostAction::of(cells_[i].decision), or kSplit for a cut bucket.
  CostAction actions_[kNumCollTypes * SizeBuckets::kCount];
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
// The same for a compiled decision (applyDecision(d, ...) == applyAction(CostAction::of(d), ...)).
bool applyAction(CostAction a, CostTableView table, int* nChannels) noexcept;

}  // namespace wirewise
