// The advisor: every strategy x tensor-parallel degree x knob on one cluster, costed healthy and under faults,
// memory checked, ranked. Pure: the caller brings the cluster and the fault link states (from a scenario, a
// wiring map or an adaptation log; tools/advise_cmd.cc). docs/advise.md.
#pragma once

#include <string>
#include <vector>

#include "advise/memory.h"
#include "advise/model_spec.h"
#include "advise/step_cost.h"
#include "sim/model/scenario.h"
#include "sim/model/truth.h"

namespace wirewise::advise {

struct AdviseOptions {
  ModelSpec model;
  TrainingSpec training;
  double peakTflops = 0;  // 0: peakTflops(cluster.gpu, precision)
  double mfu = 0.4;
  double gpuMemoryGb = 0;       // 0: gpuMemoryGb(cluster.gpu)
  double usableFraction = 0.9;  // of HBM for the accounted memory (the rest: CUDA context, NCCL, fragmentation)
  std::vector<int> tpDegrees;   // empty: 1, 2, 4, 8 where they divide the GPUs of a node
  std::vector<double> bucketCapsMb = {10, 25, 100, 250};  // DDP / ZeRO-1/2 buckets tried (25: PyTorch's default)
  std::vector<StrategyKind> strategies;                   // empty: all
};

// A link state to price every strategy on, besides the healthy one: a plausible fault or a recorded one.
struct FaultCase {
  std::string name;   // "nic_25", "nvlink_50", "recorded" (JSON keys)
  std::string label;  // "NIC 0 of node 0 at 25%"
  sim::LinkState links;
};
// The worst plausible faults of a cluster: a NIC at 25% (multi-node only) and an NVLink bundle at half (with
// NVLink only), both on node 0, GPU/NIC 0.
std::vector<FaultCase> plausibleFaults(const sim::ClusterSpec& c);
// The link states a scenario's fault schedule goes through (one per step at which the set of active faults or a
// ramp level changes); the advisor reports the worst of them as "recorded".
std::vector<sim::LinkState> scheduledLinkStates(const sim::Scenario& s);

struct WhatIf {
  std::string name, label;
  double ncclMs = 0, wirewiseMs = 0;
};

struct StrategyResult {
  Strategy strategy;
  int microBatches = 1;
  MemoryGb memory;
  bool fits = true;
  StepTime nccl, wirewise;  // healthy links
  std::vector<WhatIf> whatIf;
};

struct AdviseResult {
  ModelSpec model;
  double params = 0;
  TrainingSpec training;
  sim::ClusterSpec cluster;
  double peakTflops = 0, mfu = 0, gpuMemoryGb = 0, usableGb = 0;
  std::vector<StrategyResult> ranked;  // fitting first, then by step time with NCCL's default
  int recommended = -1;                // index into ranked of the best fitting strategy, -1 if none fits
};

// recorded: link states from the scenario or an adaptation log (may be empty); each strategy's "recorded"
// what-if is the worst over them.
AdviseResult advise(const sim::ClusterSpec& cluster, const std::vector<sim::LinkState>& recorded,
                    const std::string& recordedLabel, const AdviseOptions& options);

}  // namespace wirewise::advise
