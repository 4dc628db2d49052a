// The driver's internal plan of a run: communicator instances, the (instance, workload entry) slots with NCCL's
// frozen cost table and default choice, and, per distinct link state, the true time of every candidate choice.
// The oracle and static-best modes are read off these tables; the wirewise mode looks its choices up in them.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "adaptive/types.h"
#include "sim/loader/nccl_loader.h"
#include "sim/model/nccl_model.h"
#include "sim/model/scenario.h"
#include "sim/model/truth.h"

namespace wirewise::sim {

struct Instance {
  const CommSpec* spec = nullptr;
  CommLayout layout;
  std::unique_ptr<NcclModel> model;
  loader::CommChannels channels;
  uint64_t commId = 0;
  std::string label;  // "world", or "tp#1" when a name has several instances
};

// One candidate (algorithm, protocol, channels) a mode may run.
struct Cand {
  int8_t algo = -1, proto = -1;
  int16_t nChannels = 0;
};

struct Slot {
  int instance = 0;
  int entry = 0;  // index into workload.step
  CollType coll = CollType::AllReduce;
  size_t bytes = 0;
  DType dtype = DType::F32;
  int repeat = 1;
  float table[kNumAlgos][kNumProtos] = {};  // NCCL's frozen cost table for (coll, bytes)
  loader::Selection deflt;                  // NCCL's own choice (no plugin)
  int defaultCand = -1, staticCand = -1;
  std::vector<Cand> cands;                  // enabled (algo, proto) x channels 1..cap
  int firstCand[kNumAlgos][kNumProtos] = {};  // index of (a, p, 1) in cands, -1 if disabled
  int cap[kNumAlgos][kNumProtos] = {};        // channel cap for (a, p)
  // Index of (a, p, n) in cands, or -1.
  int candIndex(int a, int p, int n) const {
    if (a < 0 || a >= kNumAlgos || p < 0 || p >= kNumProtos || firstCand[a][p] < 0) return -1;
    return n >= 1 && n <= cap[a][p] ? firstCand[a][p] + n - 1 : -1;
  }
};

struct Plan {
  int steps = 0;
  std::vector<Instance> instances;
  std::vector<Slot> slots;
  std::vector<std::vector<int>> entrySlots;  // workload entry -> its slots (one per comm instance)
  std::vector<int> stateOfStep;              // step -> index of its distinct link state
  std::vector<LinkState> states;
  // times[state][slot][cand]: true µs of that candidate under that state (noise-free).
  std::vector<std::vector<std::vector<double>>> times;
  std::vector<std::vector<int>> oracleCand;  // [state][slot]
};

// Builds everything but the noise and the plugin. Throws std::runtime_error on an unusable scenario.
Plan buildPlan(const Scenario& scenario, int steps);

// The true time of an arbitrary choice under a state (table lookup, or the model when it is not a candidate).
double trueTimeUs(const Scenario& scenario, const Plan& plan, int state, int slot, int algo, int proto, int nCh);

}  // namespace wirewise::sim
