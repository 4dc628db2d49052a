// The advisor's enumeration and ranking; see advise.h.
#include "advise/advise.h"

#include <algorithm>
#include <optional>
#include <set>

namespace wirewise::advise {
namespace {

std::vector<int> tpDegrees(const sim::ClusterSpec& c, const AdviseOptions& o) {
  std::vector<int> out;
  for (int tp : o.tpDegrees.empty() ? std::vector<int>{1, 2, 4, 8} : o.tpDegrees) {
    if (tp >= 1 && tp <= c.gpusPerNode && c.gpusPerNode % tp == 0) out.push_back(tp);
  }
  return out;
}

// The knob settings tried for one strategy kind and tp degree.
std::vector<Strategy> variants(const sim::ClusterSpec& c, StrategyKind kind, int tp, const AdviseOptions& o) {
  Strategy base;
  base.kind = kind;
  base.tp = tp;
  base.dp = c.nRanks() / tp;
  std::vector<Strategy> out;
  switch (kind) {
    case StrategyKind::Ddp:
    case StrategyKind::Zero1:
    case StrategyKind::Zero2:
      for (double cap : o.bucketCapsMb) {
        base.bucketCapMb = cap;
        out.push_back(base);
      }
      break;
    case StrategyKind::Hsdp:
      // Shard over the dp ranks of k whole nodes, k dividing the node count (k = nodes is FULL_SHARD, left out
      // unless there is a single node).
      for (int k = 1; k <= c.nodes; ++k) {
        if (c.nodes % k != 0 || (k == c.nodes && c.nodes > 1)) continue;
        base.shardGroup = k * c.gpusPerNode / tp;
        if (base.shardGroup < 2 && base.dp > 1) continue;  // a group of one shards nothing: DDP by another name
        out.push_back(base);
      }
      break;
    default: out.push_back(base); break;
  }
  return out;
}

}  // namespace

std::vector<FaultCase> plausibleFaults(const sim::ClusterSpec& c) {
  std::vector<FaultCase> out;
  if (c.nodes > 1 && c.nicsPerNode > 0) {
    sim::LinkState s = sim::healthyLinkState(c);
    s.nodes[0].nicMult[0] = 0.25;
    out.push_back({"nic_25", "NIC 0 of node 0 at 25%", std::move(s)});
  }
  if (c.nvlinkGbps > 0 && c.gpusPerNode > 1) {
    sim::LinkState s = sim::healthyLinkState(c);
    s.nodes[0].nvlinkMult[0] = 0.5;
    out.push_back({"nvlink_50", "NVLink of GPU 0, node 0 at 50%", std::move(s)});
  }
  return out;
}

std::vector<sim::LinkState> scheduledLinkStates(const sim::Scenario& s) {
  std::set<int> steps;
  for (const sim::Fault& f : s.faults) {
    steps.insert(f.fromStep);
    if (f.kind == sim::FaultKind::Ramp && f.rampSteps > 0) steps.insert(f.fromStep + f.rampSteps - 1);
  }
  const sim::LinkState healthy = sim::healthyLinkState(s.cluster);
  std::vector<sim::LinkState> out;
  for (int step : steps) {
    sim::LinkState l = sim::linkStateAt(s, step);
    if (l != healthy && std::find(out.begin(), out.end(), l) == out.end()) out.push_back(std::move(l));
  }
  return out;
}

AdviseResult advise(const sim::ClusterSpec& cluster, const std::vector<sim::LinkState>& recorded,
                    const std::string& recordedLabel, const AdviseOptions& o) {
  AdviseResult r;
  r.model = o.model;
  r.params = paramCount(o.model);
  r.training = o.training;
  r.cluster = cluster;
  r.peakTflops = o.peakTflops > 0 ? o.peakTflops : peakTflops(cluster.gpu, o.training.precision);
  r.mfu = o.mfu;
  r.gpuMemoryGb = o.gpuMemoryGb > 0 ? o.gpuMemoryGb : gpuMemoryGb(cluster.gpu);
  r.usableGb = r.gpuMemoryGb * o.usableFraction;
  const ComputeSpec compute{r.peakTflops, r.mfu};
  const sim::DType dtype = commDtype(o.training);

  ClusterCoster coster(cluster);
  const int healthy = coster.addLinkState(sim::healthyLinkState(cluster));
  std::vector<FaultCase> faults = plausibleFaults(cluster);
  std::vector<int> faultIds;
  for (const FaultCase& f : faults) faultIds.push_back(coster.addLinkState(f.links));
  std::vector<int> recordedIds;
  for (const sim::LinkState& l : recorded) recordedIds.push_back(coster.addLinkState(l));

  const std::vector<StrategyKind> kinds =
      o.strategies.empty() ? std::vector<StrategyKind>(std::begin(kAllStrategies), std::end(kAllStrategies))
                           : o.strategies;
  for (StrategyKind kind : kinds) {
    for (int tp : tpDegrees(cluster, o)) {
      std::optional<StrategyResult> best;
      for (const Strategy& s : variants(cluster, kind, tp, o)) {
        const StepPlan plan = buildStepPlan(o.model, o.training, s);
        const double micro = microComputeUs(o.model, o.training, s, compute);
        StrategyResult res;
        res.strategy = s;
        res.microBatches = plan.microBatches;
        res.memory = memoryPerGpu(o.model, o.training, s);
        res.fits = res.memory.total() <= r.usableGb;
        res.nccl = coster.stepTime(plan, s, dtype, micro, healthy, false);
        if (best && best->nccl.stepUs <= res.nccl.stepUs) continue;
        res.wirewise = coster.stepTime(plan, s, dtype, micro, healthy, true);
        for (size_t i = 0; i < faults.size(); ++i) {
          res.whatIf.push_back({faults[i].name, faults[i].label,
                                coster.stepTime(plan, s, dtype, micro, faultIds[i], false).stepUs / 1e3,
                                coster.stepTime(plan, s, dtype, micro, faultIds[i], true).stepUs / 1e3});
        }
        if (!recordedIds.empty()) {
          WhatIf w{"recorded", recordedLabel, 0, 0};
          for (int id : recordedIds) {
            w.ncclMs = std::max(w.ncclMs, coster.stepTime(plan, s, dtype, micro, id, false).stepUs / 1e3);
            w.wirewiseMs = std::max(w.wirewiseMs, coster.stepTime(plan, s, dtype, micro, id, true).stepUs / 1e3);
          }
          res.whatIf.push_back(std::move(w));
        }
        best = std::move(res);
      }
      if (best) r.ranked.push_back(std::move(*best));
    }
  }
  std::stable_sort(r.ranked.begin(), r.ranked.end(), [](const StrategyResult& a, const StrategyResult& b) {
    if (a.fits != b.fits) return a.fits;
    return a.nccl.stepUs < b.nccl.stepUs;
  });
  if (!r.ranked.empty() && r.ranked.front().fits) r.recommended = 0;
  return r;
}

}  // namespace wirewise::advise
