// libFuzzer target for the scenario parser that `wirewise simulate FILE` and `wirewise advise --scenario` use
// (built only with clang; not a ctest). Beyond "does not crash": the parser never throws, a rejection always
// says where ("path: reason"), and every scenario it accepts holds what the simulator relies on (ranks in
// range and distinct, known communicators, byte counts whole elements, faults on existing links with
// to_step > from_step). Small accepted scenarios then go through the driver's plan (NCCL's model and the
// truth model for every workload entry and link state), which may refuse them only with std::runtime_error.
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <set>
#include <stdexcept>
#include <string>
#include <string_view>

#include "sim/driver/plan.h"
#include "sim/model/scenario.h"

namespace {

using namespace wirewise::sim;

void check(bool ok) {
  if (!ok) __builtin_trap();
}

void checkAccepted(const Scenario& s) {
  const ClusterSpec& c = s.cluster;
  check(!s.name.empty());
  check(c.nodes >= 1 && c.gpusPerNode >= 1 && c.nRanks() <= 65536 && c.nicsPerNode >= 1);
  check(c.nvlinkGbps >= 0 && c.pcieGbps > 0 && c.nicGbps > 0 && c.netLatencyUs >= 0);
  check(!c.nvls || c.nvlinkGbps > 0);
  check(!s.comms.empty());
  std::set<std::string> names;
  for (const CommSpec& cs : s.comms) {
    check(!cs.name.empty() && !cs.ranks.empty());
    std::set<int> seen;
    for (int r : cs.ranks) check(r >= 0 && r < c.nRanks() && seen.insert(r).second);
    names.insert(cs.name);
  }
  check(s.workload.steps >= 1 && !s.workload.step.empty() && s.workload.computeUs >= 0);
  for (const StepColl& st : s.workload.step) {
    check(names.count(st.comm) == 1 && st.bytes >= 1 && st.bytes % dtypeSize(st.dtype) == 0 && st.repeat >= 1);
    check(!s.commInstances(st.comm).empty());
  }
  for (const Fault& f : s.faults) {
    const int indices = f.link == LinkKind::Nic || f.link == LinkKind::Net ? c.nicsPerNode : c.gpusPerNode;
    check(f.node == kAllIndex || (f.node >= 0 && f.node < c.nodes));
    check(f.index == kAllIndex || (f.index >= 0 && f.index < indices));
    check(f.fromStep >= 0 && f.fromStep <= s.workload.steps && (f.toStep == kUntilEnd || f.toStep > f.fromStep));
    if (f.kind == FaultKind::Degrade || f.kind == FaultKind::Flap || f.kind == FaultKind::Ramp)
      check(f.factor > 0 && f.factor <= 1);
    if (f.kind == FaultKind::Flap) check(f.periodSteps >= 1);
    if (f.kind == FaultKind::Ramp) check(f.rampSteps >= 1 && f.rampLevels >= 1 && f.rampLevels <= f.rampSteps);
    if (f.kind == FaultKind::Contention) check(f.flows >= 1);
    if (f.kind == FaultKind::Latency) check(f.addUs > 0);
  }
  check(s.noise.jitter >= 0 && s.noise.stragglerProb >= 0 && s.noise.stragglerProb <= 1 && s.noise.stragglerUs >= 0);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view text(reinterpret_cast<const char*>(data), size);
  std::string error;
  std::optional<Scenario> s = parseScenario(text, &error);  // noexcept in practice: a throw ends the run
  if (!s) {
    check(!error.empty() && error.find(": ") != std::string::npos);
    return 0;
  }
  checkAccepted(*s);
  // The plan for small scenarios only (its cost grows with ranks, slots and distinct link states: each state
  // times every candidate of every slot), over at most 32 steps: every fault that starts by then is in it.
  if (s->cluster.nRanks() <= 64 && s->comms.size() <= 4 && s->workload.step.size() <= 6 && s->faults.size() <= 6) {
    try {
      Plan plan = buildPlan(*s, std::min(s->workload.steps, 32));
      check(plan.instances.size() == s->comms.size() && plan.entrySlots.size() == s->workload.step.size());
    } catch (const std::runtime_error&) {
    }
  }
  return 0;
}
