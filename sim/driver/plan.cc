#include "sim/driver/plan.h"

#include <limits>
#include <map>
#include <stdexcept>
#include <tuple>

#include "adaptive/buckets.h"
#include "sim/driver/driver.h"

namespace wirewise::sim {
namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();

bool enabledEntry(float v) { return v >= 0.0f && v < CostTableView::kExcluded; }

void buildSlotCandidates(const Scenario& sc, const Instance& inst, Slot& s) {
  for (int a = 0; a < kNumAlgos; ++a) {
    for (int p = 0; p < kNumProtos; ++p) {
      s.firstCand[a][p] = -1;
      s.cap[a][p] = 0;
      if (!enabledEntry(s.table[a][p]) || !truthSupports(sc.cluster, inst.layout, s.coll, a, p)) continue;
      const bool nvls = a == kAlgoNvls || a == kAlgoNvlsTree;
      const int cap = std::max(1, nvls ? inst.channels.nvlsChannels : inst.channels.nChannels);
      s.firstCand[a][p] = static_cast<int>(s.cands.size());
      s.cap[a][p] = cap;
      for (int n = 1; n <= cap; ++n) s.cands.push_back(Cand{static_cast<int8_t>(a), static_cast<int8_t>(p),
                                                            static_cast<int16_t>(n)});
    }
  }
}

// Per (instance, coll, size bucket): the one candidate with the least total true time over the run.
void chooseStatic(Plan& plan, const std::vector<int>& stepsInState) {
  std::map<std::tuple<int, int, int>, std::vector<int>> groups;
  for (int i = 0; i < static_cast<int>(plan.slots.size()); ++i) {
    const Slot& s = plan.slots[i];
    groups[{s.instance, static_cast<int>(s.coll), SizeBuckets::index(s.bytes)}].push_back(i);
  }
  for (const auto& [key, members] : groups) {
    const Slot& first = plan.slots[members[0]];
    double best = kInf;
    Cand bestCand;
    for (const Cand& c : first.cands) {
      double total = 0;
      for (int si : members) {
        const int idx = plan.slots[si].candIndex(c.algo, c.proto, c.nChannels);
        if (idx < 0) {
          total = kInf;  // must run on every slot of the group
          break;
        }
        for (size_t st = 0; st < plan.states.size(); ++st)
          total += stepsInState[st] * plan.slots[si].repeat * plan.times[st][si][idx];
      }
      if (total < best) {
        best = total;
        bestCand = c;
      }
    }
    for (int si : members) {
      Slot& s = plan.slots[si];
      s.staticCand = best < kInf ? s.candIndex(bestCand.algo, bestCand.proto, bestCand.nChannels) : -1;
      if (s.staticCand < 0) s.staticCand = s.defaultCand;
    }
  }
}

}  // namespace

Plan buildPlan(const Scenario& sc, int steps) {
  Plan plan;
  plan.steps = steps;
  std::map<std::string, int> perName;
  for (const CommSpec& c : sc.comms) ++perName[c.name];
  plan.instances.reserve(sc.comms.size());
  for (const CommSpec& c : sc.comms) {
    Instance inst;
    inst.spec = &c;
    inst.layout = makeCommLayout(sc.cluster, c.ranks);
    inst.model = std::make_unique<NcclModel>(sc.cluster, inst.layout);
    inst.channels.nChannels = inst.model->commChannels();
    inst.channels.nvlsChannels = inst.model->nvlsChannels();
    inst.channels.nNodes = inst.layout.nNodes;
    inst.commId = commIdFor(c.name, c.instance);
    inst.label = perName[c.name] > 1 ? c.name + "#" + std::to_string(c.instance) : c.name;
    plan.instances.push_back(std::move(inst));
  }

  const auto& entries = sc.workload.step;
  plan.entrySlots.resize(entries.size());
  for (size_t e = 0; e < entries.size(); ++e) {
    const StepColl& sc_e = entries[e];
    bool any = false;
    for (size_t i = 0; i < sc.comms.size(); ++i) {
      if (sc.comms[i].name != sc_e.comm) continue;
      any = true;
      const Instance& inst = plan.instances[i];
      Slot s;
      s.instance = static_cast<int>(i);
      s.entry = static_cast<int>(e);
      s.coll = sc_e.coll;
      s.bytes = sc_e.bytes;
      s.dtype = sc_e.dtype;
      s.repeat = sc_e.repeat;
      inst.model->costTableUs(s.coll, s.bytes, s.table, s.dtype);
      const loader::Selection pick = loader::selectAlgo(s.table, 0, 0, inst.channels);
      if (!pick.ok)
        throw std::runtime_error("workload.step[" + std::to_string(e) + "]: NCCL's model enables no algorithm for " +
                                 std::string(collName(s.coll)) + " on comm " + inst.label);
      s.deflt = loader::selectAlgo(s.table, 0, inst.model->defaultChannels(pick.algo, pick.proto, s.bytes),
                                   inst.channels);
      buildSlotCandidates(sc, inst, s);
      s.defaultCand = s.candIndex(s.deflt.algo, s.deflt.proto, s.deflt.nChannels);
      plan.entrySlots[e].push_back(static_cast<int>(plan.slots.size()));
      plan.slots.push_back(std::move(s));
    }
    if (!any) throw std::runtime_error("workload.step[" + std::to_string(e) + "].comm: no communicator named '" +
                                       sc_e.comm + "'");
  }

  // Distinct link states over the run; faults change them rarely, so a handful usually covers every step.
  plan.stateOfStep.resize(steps);
  for (int st = 0; st < steps; ++st) {
    LinkState ls = linkStateAt(sc, st);
    int found = -1;
    for (size_t k = 0; k < plan.states.size() && found < 0; ++k)
      if (plan.states[k] == ls) found = static_cast<int>(k);
    if (found < 0) {
      found = static_cast<int>(plan.states.size());
      plan.states.push_back(std::move(ls));
    }
    plan.stateOfStep[st] = found;
  }
  std::vector<int> stepsInState(plan.states.size(), 0);
  for (int st : plan.stateOfStep) ++stepsInState[st];

  plan.times.resize(plan.states.size());
  plan.oracleCand.resize(plan.states.size());
  for (size_t k = 0; k < plan.states.size(); ++k) {
    plan.times[k].resize(plan.slots.size());
    plan.oracleCand[k].assign(plan.slots.size(), -1);
    for (size_t si = 0; si < plan.slots.size(); ++si) {
      const Slot& s = plan.slots[si];
      const Instance& inst = plan.instances[s.instance];
      auto& t = plan.times[k][si];
      t.resize(s.cands.size());
      double best = kInf;
      for (size_t c = 0; c < s.cands.size(); ++c) {
        TruthQuery q{s.coll, s.bytes, s.dtype, s.cands[c].algo, s.cands[c].proto, s.cands[c].nChannels};
        const double v = truthTimeUs(sc.cluster, inst.layout, plan.states[k], q);
        t[c] = v < 0 ? kInf : v;
        if (t[c] < best) {
          best = t[c];
          plan.oracleCand[k][si] = static_cast<int>(c);
        }
      }
      if (plan.oracleCand[k][si] < 0)
        throw std::runtime_error("comm " + inst.label + ": the truth model can run no enabled choice for " +
                                 std::string(collName(s.coll)));
    }
  }
  chooseStatic(plan, stepsInState);
  return plan;
}

double trueTimeUs(const Scenario& sc, const Plan& plan, int state, int slot, int algo, int proto, int nCh) {
  const Slot& s = plan.slots[slot];
  const int idx = s.candIndex(algo, proto, nCh);
  if (idx >= 0) return plan.times[state][slot][idx];
  TruthQuery q{s.coll, s.bytes, s.dtype, algo, proto, std::max(1, nCh)};
  const double v = truthTimeUs(sc.cluster, plan.instances[s.instance].layout, plan.states[state], q);
  if (v < 0)
    throw std::runtime_error("comm " + plan.instances[s.instance].label + ": the truth model cannot run " +
                             std::string(algoName(algo)) + "/" + std::string(protoName(proto)) + " for " +
                             std::string(collName(s.coll)) + ", which NCCL's table enables");
  return v;
}

}  // namespace wirewise::sim
