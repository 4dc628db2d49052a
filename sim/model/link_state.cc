// The fault schedule applied to the nominal links: LinkState at a given step.
#include "sim/model/truth.h"

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

namespace {

void applyTo(const Fault& f, std::vector<double>& mult, std::vector<int>& flows, std::vector<double>& add) {
  for (size_t i = 0; i < mult.size(); ++i) {
    if (f.index != kAllIndex && static_cast<size_t>(f.index) != i) continue;
    switch (f.kind) {
      case FaultKind::Degrade:
      case FaultKind::Flap: mult[i] *= f.factor; break;
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
        case LinkKind::Net: applyTo(f, n.nicMult, n.nicFlows, n.nicAddUs); break;
        case LinkKind::Nvlink: applyTo(f, n.nvlinkMult, n.nvlinkFlows, n.nvlinkAddUs); break;
        case LinkKind::Pcie: applyTo(f, n.pcieMult, n.pcieFlows, n.pcieAddUs); break;
      }
    }
  }
  return state;
}

}  // namespace wirewise::sim
