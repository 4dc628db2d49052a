// The fault schedule applied to the nominal links: LinkState at a given step.
#include "sim/model/truth.h"

#include <algorithm>
#include <cstdint>

namespace wirewise::sim {

LinkState healthyLinkState(const ClusterSpec& c) {
  NodeLinkState n;
  const size_t nics = static_cast<size_t>(c.nicsPerNode), gpus = static_cast<size_t>(c.gpusPerNode);
  n.nicMult.assign(nics, 1.0);
  n.nicFlows.assign(nics, 0);
  n.nicAddUs.assign(nics, 0.0);
  n.nvlinkMult.assign(gpus, 1.0);
  n.nvlinkFlows.assign(gpus, 0);
  n.nvlinkAddUs.assign(gpus, 0.0);
  n.pcieMult.assign(gpus, 1.0);
  n.pcieFlows.assign(gpus, 0);
  n.pcieAddUs.assign(gpus, 0.0);
  LinkState s;
  s.nodes.assign(static_cast<size_t>(c.nodes), n);
  return s;
}

bool faultActiveAt(const Fault& f, int step) {
  if (step < f.fromStep) return false;
  if (f.toStep != kUntilEnd && step >= f.toStep) return false;
  if (f.kind == FaultKind::Flap && f.periodSteps > 0) return ((step - f.fromStep) / f.periodSteps) % 2 == 0;
  return true;
}

double faultFactorAt(const Fault& f, int step) {
  if (f.kind != FaultKind::Ramp || f.rampSteps <= 0) return f.factor;
  // Level ceil((k + 1) L / R) of L at step from + k (truth.h); integer arithmetic, so every level is exact.
  const int64_t r = f.rampSteps;
  const int64_t levels = std::min<int64_t>(r, f.rampLevels > 0 ? f.rampLevels : kDefaultRampLevels);
  const int64_t k = std::max<int64_t>(0, int64_t{step} - f.fromStep);
  const int64_t level = std::min(levels, ((k + 1) * levels + r - 1) / r);
  return 1.0 - (1.0 - f.factor) * static_cast<double>(level) / static_cast<double>(levels);
}

namespace {

void applyTo(const Fault& f, int step, std::vector<double>& mult, std::vector<int>& flows,
             std::vector<double>& add) {
  for (size_t i = 0; i < mult.size(); ++i) {
    if (f.index != kAllIndex && static_cast<size_t>(f.index) != i) continue;
    switch (f.kind) {
      case FaultKind::Degrade:
      case FaultKind::Flap:
      case FaultKind::Ramp: mult[i] *= faultFactorAt(f, step); break;
      case FaultKind::Contention: flows[i] += f.flows; break;
      case FaultKind::Latency: add[i] += f.addUs; break;
    }
  }
}

}  // namespace

LinkState linkStateAt(const Scenario& s, int step) {
  LinkState state = healthyLinkState(s.cluster);
  for (const Fault& f : s.faults) {
    if (!faultActiveAt(f, step)) continue;
    for (size_t node = 0; node < state.nodes.size(); ++node) {
      if (f.node != kAllIndex && static_cast<size_t>(f.node) != node) continue;
      NodeLinkState& n = state.nodes[node];
      switch (f.link) {
        case LinkKind::Nic:
        case LinkKind::Net: applyTo(f, step, n.nicMult, n.nicFlows, n.nicAddUs); break;
        case LinkKind::Nvlink: applyTo(f, step, n.nvlinkMult, n.nvlinkFlows, n.nvlinkAddUs); break;
        case LinkKind::Pcie: applyTo(f, step, n.pcieMult, n.pcieFlows, n.pcieAddUs); break;
      }
    }
  }
  return state;
}

}  // namespace wirewise::sim
