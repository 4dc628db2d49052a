#include "adaptive/decision_table.h"

#include <algorithm>
#include <functional>
#include <queue>

namespace wirewise {
namespace {

// Sub-ranges at or below this count are scanned linearly; more (only with pathological rule sets) are
// binary-searched, so lookup stays bounded whatever the configuration.
constexpr uint32_t kLinearScanMax = 8;

void fnv(uint64_t& h, uint64_t v, int bytes) {
  for (int i = 0; i < bytes; ++i) {
    h ^= (v >> (8 * i)) & 0xff;
    h *= 0x100000001b3ULL;
  }
}

}  // namespace

std::shared_ptr<const DecisionTable> DecisionTable::build(std::span<const TableRule> rules, std::string reason) {
  std::shared_ptr<DecisionTable> t(new DecisionTable());
  t->reason_ = std::move(reason);
  for (int c = 0; c < kNumCollTypes; ++c) t->buildColl(c, rules);
  uint64_t h = 0xcbf29ce484222325ULL;  // FNV-1a offset basis; the digest of the neutral table
  auto rs = t->ranges();
  for (const TableRule& r : rs) {
    // Serialised field by field, little-endian, so the digest is independent of padding and host.
    fnv(h, static_cast<uint32_t>(r.coll), 4);
    fnv(h, r.minBytes, 8);
    fnv(h, r.maxBytes, 8);
    fnv(h, static_cast<uint8_t>(r.decision.algo), 1);
    fnv(h, static_cast<uint8_t>(r.decision.proto), 1);
    fnv(h, static_cast<uint8_t>(r.decision.nChannels), 1);
    // Only when set, so that every table without chunk sizes keeps the digest it had before they existed.
    if (r.decision.chunkBytes != 0) fnv(h, r.decision.chunkBytes, 4);
  }
  t->digest_ = h;
  t->neutral_ = rs.empty();
  return t;
}

// Sweep over the elementary intervals between all edges (bucket edges and rule edges), bucket by bucket.
// Within one interval every rule either covers all of it or none of it, so its decision is the
// lowest-index rule active at its start: a min-heap of active rule indices, dropping rules that ended
// (lazily). Cells start as "keep NCCL's choice", so a collective no rule names costs nothing; clients
// build every verdict's table (a thousand-member job's round trip waits on it), hence no sort over the
// bucket edges, which are already in order, and no bucket-index arithmetic per interval.
void DecisionTable::buildColl(int coll, std::span<const TableRule> rules) {
  std::vector<uint32_t> byStart;
  std::vector<uint64_t> edges;  // rule edges only: where a rule starts, and one past where it ends
  for (size_t i = 0; i < rules.size(); ++i) {
    const TableRule& r = rules[i];
    if ((r.coll != coll && r.coll != kAny) || r.minBytes > r.maxBytes) continue;
    byStart.push_back(static_cast<uint32_t>(i));
    edges.push_back(r.minBytes);
    if (r.maxBytes != UINT64_MAX) edges.push_back(r.maxBytes + 1);
  }
  if (byStart.empty()) return;
  std::sort(edges.begin(), edges.end());
  edges.erase(std::unique(edges.begin(), edges.end()), edges.end());
  std::stable_sort(byStart.begin(), byStart.end(),
                   [&](uint32_t a, uint32_t b) { return rules[a].minBytes < rules[b].minBytes; });

  std::priority_queue<uint32_t, std::vector<uint32_t>, std::greater<>> active;
  size_t next = 0, edge = 0;
  std::vector<Split> pieces;  // merged pieces of the current bucket, in order
  for (int b = 0; b < SizeBuckets::kCount; ++b) {
    const uint64_t bucketLo = SizeBuckets::lowerEdge(b);
    const uint64_t bucketHi = b == SizeBuckets::kCount - 1 ? UINT64_MAX : SizeBuckets::upperEdge(b) - 1;
    while (edge < edges.size() && edges[edge] <= bucketLo) ++edge;
    pieces.clear();
    for (uint64_t lo = bucketLo;;) {
      const bool cut = edge < edges.size() && edges[edge] <= bucketHi;
      const uint64_t hi = cut ? edges[edge] - 1 : bucketHi;
      while (next < byStart.size() && rules[byStart[next]].minBytes <= lo) active.push(byStart[next++]);
      while (!active.empty() && rules[active.top()].maxBytes < lo) active.pop();
      const Decision d = active.empty() ? Decision{} : rules[active.top()].decision;
      if (!pieces.empty() && pieces.back().decision == d) {
        pieces.back().maxBytes = hi;
      } else {
        pieces.push_back(Split{lo, hi, d, {}});
      }
      if (!cut) break;
      lo = edges[edge++];
    }
    Cell& cell = cells_[collBucket(coll, b)];
    CostAction& action = actions_[collBucket(coll, b)];
    if (pieces.size() == 1) {
      cell = Cell{pieces[0].decision, 0, 0};
      action = CostAction::of(pieces[0].decision);
    } else {
      cell = Cell{Decision{}, static_cast<uint32_t>(splits_.size()), static_cast<uint32_t>(pieces.size())};
      action = CostAction{};
      action.kind = CostAction::kSplit;
      for (Split& piece : pieces) piece.action = CostAction::of(piece.decision);
      splits_.insert(splits_.end(), pieces.begin(), pieces.end());
    }
  }
}

std::shared_ptr<const DecisionTable> DecisionTable::neutral() {
  // Immutable and shared: every comm without a table points here.
  static const std::shared_ptr<const DecisionTable> kNeutral = build({}, "neutral");
  return kNeutral;
}

Decision DecisionTable::lookup(int collType, int bucket, uint64_t nBytes) const noexcept {
  if (collType < 0 || collType >= kNumCollTypes) return Decision{};
  const Cell& cell = cells_[collBucket(collType, bucket)];
  if (cell.splitCount == 0) return cell.decision;
  return findSplit(cell, nBytes).decision;
}

const DecisionTable::Split& DecisionTable::findSplit(const Cell& cell, uint64_t nBytes) const noexcept {
  const Split* first = splits_.data() + cell.splitBegin;
  const Split* last = first + cell.splitCount;  // pieces cover the bucket: the answer is in [first, last)
  if (cell.splitCount <= kLinearScanMax) {
    for (const Split* s = first; s + 1 < last; ++s) {
      if (nBytes <= s->maxBytes) return *s;
    }
    return *(last - 1);
  }
  const Split* s = std::upper_bound(first, last, nBytes, [](uint64_t n, const Split& x) { return n < x.minBytes; });
  return *(s - 1);
}

std::vector<TableRule> DecisionTable::ranges() const {
  std::vector<TableRule> out;
  for (int c = 0; c < kNumCollTypes; ++c) {
    // The current run of equal decisions; written out when the decision changes, unless it keeps NCCL's.
    TableRule run{c, 0, 0, Decision{}};
    auto add = [&](uint64_t lo, uint64_t hi, Decision d) {
      if (d == run.decision) {
        run.maxBytes = hi;
        return;
      }
      if (!run.decision.keepsNccl()) out.push_back(run);
      run = TableRule{c, lo, hi, d};
    };
    for (int b = 0; b < SizeBuckets::kCount; ++b) {
      const Cell& cell = cells_[collBucket(c, b)];
      if (cell.splitCount == 0) {
        uint64_t hi = b == SizeBuckets::kCount - 1 ? UINT64_MAX : SizeBuckets::upperEdge(b) - 1;
        add(SizeBuckets::lowerEdge(b), hi, cell.decision);
        continue;
      }
      for (uint32_t k = 0; k < cell.splitCount; ++k) {
        const Split& s = splits_[cell.splitBegin + k];
        add(s.minBytes, s.maxBytes, s.decision);
      }
    }
    if (!run.decision.keepsNccl()) out.push_back(run);
  }
  return out;
}

}  // namespace wirewise
