// What exploring cost, against what wirewise would have run without the probe (docs/simulator.md, Report:
// probe_cost). A probed collective's incumbent is wirewise's choice at the most recent collective of the same
// (communicator instance, coll, nBytes) that was not exploration, or NCCL's default choice when there was none
// yet. Its ratio is its true time over the incumbent's true time under the same link state and the same noise;
// a step's inflation is its wirewise comm time over the same step replayed with every probed collective
// charged at its incumbent's time (same arrivals, same stragglers, the same clock rules as steps.cc).
#pragma once

#include <cstdint>
#include <functional>
#include <vector>

#include "sim/driver/driver.h"
#include "sim/driver/exploration.h"

namespace wirewise::sim {

// What pricing needs beside the records.
struct ProbeCostModel {
  int nRanks = 0;
  std::vector<std::vector<int>> slotRanks;  // [slot]: the global ranks of its instance, in member order
  std::vector<uint32_t> defaultChoice;      // [slot]: NCCL's own choice, packChoice(algo, proto, nChannels)
  // Noise-free true µs of a packed choice for the record's slot under the link state of the record's step.
  std::function<double(const CollRecord&, uint32_t choice)> trueUs;
};

// colls: every wirewise collective in program order (steps ascending, each step in the order it ran);
// explored: one flag per record, as explorationOf gives them. Percentiles are nearest-rank.
ProbeCost probeCostOf(const std::vector<CollRecord>& colls, const std::vector<char>& explored,
                      const ProbeCostModel& model);

// The nearest-rank q-quantile (0 < q <= 1) of values, which it sorts; 0 when empty.
double nearestRank(std::vector<double>& values, double q);

}  // namespace wirewise::sim
