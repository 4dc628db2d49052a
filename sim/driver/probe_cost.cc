// Pricing the probes: each against its incumbent, and each step against itself without them.
#include "sim/driver/probe_cost.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <stdexcept>
#include <tuple>

namespace wirewise::sim {
namespace {

// Replays one step's collectives on per-rank clocks that start aligned at 0, as steps.cc's Clocks does: a
// collective starts when its last member arrives (the straggler late by its lateUs) and ends for all together.
// charged(i) is record i's duration. Returns the span to the last rank's end: the step's comm time.
template <typename Charge>
double replayStep(const std::vector<CollRecord>& colls, size_t begin, size_t end, const ProbeCostModel& m,
                  std::vector<double>& t, Charge charged) {
  std::fill(t.begin(), t.end(), 0.0);
  for (size_t i = begin; i < end; ++i) {
    const std::vector<int>& ranks = m.slotRanks.at(static_cast<size_t>(colls[i].slot));
    const NoiseDraw& nd = colls[i].noise;
    double start = 0;
    for (size_t k = 0; k < ranks.size(); ++k)
      start = std::max(start, t[ranks[k]] + (static_cast<int>(k) == nd.lateMember ? nd.lateUs : 0.0));
    const double stop = start + charged(i);
    for (int r : ranks) t[r] = stop;
  }
  return t.empty() ? 0.0 : *std::max_element(t.begin(), t.end());
}

}  // namespace

double nearestRank(std::vector<double>& values, double q) {
  if (values.empty()) return 0.0;
  std::sort(values.begin(), values.end());
  const double rank = std::ceil(q * static_cast<double>(values.size()));
  const size_t idx = static_cast<size_t>(std::clamp(rank, 1.0, static_cast<double>(values.size()))) - 1;
  return values[idx];
}

ProbeCost probeCostOf(const std::vector<CollRecord>& colls, const std::vector<char>& explored,
                      const ProbeCostModel& m) {
  if (explored.size() != colls.size()) throw std::logic_error("probeCostOf: one explored flag per record");
  // Each probed collective's incumbent, charged at its time with this collective's noise.
  std::map<std::tuple<uint64_t, CollType, uint64_t>, uint32_t> lastPlain;  // (comm, coll, bytes) -> choice
  std::vector<double> incumbentUs(colls.size(), 0.0);
  std::vector<double> ratios, inflations;
  for (size_t i = 0; i < colls.size(); ++i) {
    const CollRecord& c = colls[i];
    const auto key = std::make_tuple(c.comm, c.coll, c.bytes);
    if (!explored[i]) {
      lastPlain[key] = c.choice;
      continue;
    }
    auto it = lastPlain.find(key);
    const uint32_t incumbent = it != lastPlain.end() ? it->second : m.defaultChoice.at(static_cast<size_t>(c.slot));
    incumbentUs[i] = incumbent == c.choice ? c.us : m.trueUs(c, incumbent) * c.noise.multiplier;
    if (incumbentUs[i] > 0) ratios.push_back(c.us / incumbentUs[i]);
  }
  // Each step with a probe, replayed as it ran and with its probes at their incumbents' times.
  std::vector<double> t(static_cast<size_t>(m.nRanks), 0.0);
  for (size_t b = 0; b < colls.size();) {
    size_t e = b;
    bool probed = false;
    for (; e < colls.size() && colls[e].step == colls[b].step; ++e)
      if (explored[e]) probed = true;
    if (probed) {
      const double ran = replayStep(colls, b, e, m, t, [&](size_t i) { return colls[i].us; });
      const double without =
          replayStep(colls, b, e, m, t, [&](size_t i) { return explored[i] ? incumbentUs[i] : colls[i].us; });
      if (without > 0) inflations.push_back(ran / without);
    }
    b = e;
  }
  ProbeCost pc;
  pc.collectives = ratios.size();
  pc.steps = inflations.size();
  if (!ratios.empty()) {
    pc.ratioMax = *std::max_element(ratios.begin(), ratios.end());
    pc.ratioP99 = nearestRank(ratios, 0.99);
  }
  if (!inflations.empty()) {
    pc.stepInflationMax = *std::max_element(inflations.begin(), inflations.end());
    pc.stepInflationP99 = nearestRank(inflations, 0.99);
  }
  return pc;
}

}  // namespace wirewise::sim
