#include "control/heterogeneity_guard.h"

#include <algorithm>
#include <string>

namespace wirewise::control {
namespace {

constexpr float kExcluded = CostTableView::kExcluded;  // NCCL's "never": costs at or above it are not eligible

bool enabled(float v) { return v >= 0.0f && v < kExcluded; }

// Bucket i's sizes as an inclusive range (the last bucket runs to UINT64_MAX).
std::pair<uint64_t, uint64_t> bytesOf(int bucket) {
  const uint64_t hi = SizeBuckets::upperEdge(bucket);
  return {SizeBuckets::lowerEdge(bucket), hi == UINT64_MAX ? hi : hi - 1};
}

std::string choiceText(std::pair<int, int> c) {
  return std::string(algoName(c.first)) + "/" + std::string(protoName(c.second));
}

std::string bucketText(int coll, int bucket) {  // "allreduce bucket 41 (1048576..1310719 bytes)"
  auto [lo, hi] = bytesOf(bucket);
  return std::string(collName(static_cast<CollType>(coll))) + " bucket " + std::to_string(bucket) + " (" +
         std::to_string(lo) + ".." + (hi == UINT64_MAX ? std::string("inf") : std::to_string(hi)) + " bytes)";
}

}  // namespace

std::pair<int, int> ncclDefaultOf(const float (&cost)[kNumAlgos][kNumProtos]) {
  std::pair<int, int> best{-1, -1};
  float min = kExcluded;
  for (int a = 0; a < kNumAlgos; ++a)
    for (int p = 0; p < kNumProtos; ++p)
      if (enabled(cost[a][p]) && cost[a][p] < min) {
        min = cost[a][p];
        best = {a, p};
      }
  return best;
}

void HeterogeneityGuard::observe(uint64_t memberId, std::span<const adapt::Sight> sights) {
  for (const adapt::Sight& s : sights) {
    if (s.coll < 0 || s.coll >= kNumCollTypes || s.bucket >= SizeBuckets::kCount) continue;
    auto [it, fresh] = buckets_.try_emplace({s.coll, s.bucket});
    Bucket& b = it->second;
    if (!b.members.insert(memberId).second) continue;
    ++b.defaults[ncclDefaultOf(s.cost)];
    for (int a = 0; a < kNumAlgos; ++a)
      for (int p = 0; p < kNumProtos; ++p) {
        const float v = s.cost[a][p];
        if (fresh) b.worst[a][p] = enabled(v) ? v : -1.0f;
        else if (!enabled(v) || !enabled(b.worst[a][p])) b.worst[a][p] = -1.0f;
        else b.worst[a][p] = std::max(b.worst[a][p], v);
      }
  }
}

// The pin is the choice whose worst cost over members is smallest among those every member enables. It is
// kept once chosen unless a member that disables it reports later (then a new pin is chosen and noted).
// Chosen at decision time, not per report, so the order in which members' reports arrive does not matter.
void HeterogeneityGuard::choosePin(int coll, int bucket, Bucket& b) {
  const std::pair<int, int> was = b.pin;
  if (was.first < 0 || !enabled(b.worst[was.first][was.second])) b.pin = ncclDefaultOf(b.worst);
  if (b.noted && b.pin == was) return;  // said already
  std::string defaults;
  for (const auto& [c, n] : b.defaults)
    defaults += (defaults.empty() ? "" : ", ") + choiceText(c) + " on " + std::to_string(n);
  std::string what = " (" + defaults + "): ";
  if (b.pin.first < 0)
    what += "no algorithm/protocol is enabled on every rank, so none can be pinned; NCCL's per-rank choice stands";
  else
    what += "every rank runs " + choiceText(b.pin) +
            (was.first >= 0 ? " (was " + choiceText(was) + ", which a member disables)" : "");
  findings_[{coll, what}].push_back(bucket);
  b.noted = true;
}

std::vector<TableRule> HeterogeneityGuard::pins(std::span<const TableRule> policyRules) {
  std::vector<TableRule> out;
  if (heterogeneousBuckets() == 0) return out;
  const std::vector<TableRule> ranges = DecisionTable::build(policyRules, "")->ranges();
  for (auto& [key, b] : buckets_) {
    if (b.defaults.size() < 2) continue;
    const auto [coll, bucket] = key;
    choosePin(coll, bucket, b);
    if (b.pin.first < 0) continue;
    const auto [lo, hi] = bytesOf(bucket);
    // Safe when the policy's ranges cover [lo, hi] without a gap, each with an algorithm and protocol that
    // every member enables (a gap, or a half-specified decision, leaves the choice to NCCL on each rank).
    uint64_t next = lo;
    bool safe = true, covered = false;
    for (const TableRule& r : ranges) {
      if (r.coll != coll || r.maxBytes < lo || r.minBytes > hi) continue;
      const Decision& d = r.decision;
      if (r.minBytes > next || d.algo < 0 || d.proto < 0 || d.algo >= kNumAlgos || d.proto >= kNumProtos ||
          !enabled(b.worst[d.algo][d.proto])) {
        safe = false;
        break;
      }
      if (r.maxBytes >= hi) {
        covered = true;
        break;
      }
      next = r.maxBytes + 1;
    }
    if (safe && covered) continue;
    TableRule pin;
    pin.coll = coll;
    pin.minBytes = lo;
    pin.maxBytes = hi;
    pin.decision.algo = static_cast<int8_t>(b.pin.first);
    pin.decision.proto = static_cast<int8_t>(b.pin.second);
    out.push_back(pin);
  }
  return out;
}

// One line per (collective, what members default to, what was done): a mixed cluster differs in many
// buckets at once, and a line per bucket would bury the log.
std::vector<std::string> HeterogeneityGuard::takeNotes() {
  std::vector<std::string> out;
  for (const auto& [key, buckets] : findings_) {
    const auto& [coll, what] = key;
    std::string where = bucketText(coll, buckets.front());
    if (buckets.size() > 1) {
      const uint64_t hi = bytesOf(buckets.back()).second;
      where = std::string(collName(static_cast<CollType>(coll))) + " in " + std::to_string(buckets.size()) +
              " size buckets between " + std::to_string(bytesOf(buckets.front()).first) + " and " +
              (hi == UINT64_MAX ? std::string("inf") : std::to_string(hi)) + " bytes";
    }
    out.push_back("ranks' NCCL defaults differ for " + where + what);
  }
  findings_.clear();
  return out;
}

size_t HeterogeneityGuard::heterogeneousBuckets() const {
  return static_cast<size_t>(std::count_if(buckets_.begin(), buckets_.end(),
                                           [](const auto& kv) { return kv.second.defaults.size() > 1; }));
}

}  // namespace wirewise::control
