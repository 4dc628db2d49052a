// playSteps: the four modes over one noise stream, the plugin asked for every rank this process plays.
#include "sim/driver/steps.h"

#include <algorithm>
#include <chrono>
#include <cstring>
#include <stdexcept>
#include <string>
#include <thread>

#include "sim/driver/noise.h"

namespace wirewise::sim {
namespace {

const char* ncclDatatypeString(DType d) {
  switch (d) {
    case DType::F32: return "ncclFloat32";
    case DType::Bf16: return "ncclBfloat16";
    case DType::F16: return "ncclFloat16";
    case DType::F8: return "ncclFloat8e4m3";
  }
  return "ncclFloat32";
}

// One rank's view of what it runs.
struct Pick {
  int algo = -1, proto = -1, nChannels = 0;
  bool ok = false;
  bool operator==(const Pick& o) const { return algo == o.algo && proto == o.proto && nChannels == o.nChannels; }
};

// A pick on the process channels: its packed choice, or kNoPick when NCCL would have had none.
constexpr uint32_t kNoPick = 0xffffffffu;
uint32_t encodePick(const Pick& p) { return p.ok ? packChoice(p.algo, p.proto, p.nChannels) : kNoPick; }
Pick decodePick(uint32_t v) {
  if (v == kNoPick) return Pick{};
  Pick p;
  unpackChoice(v, &p.algo, &p.proto, &p.nChannels);
  p.ok = true;
  return p;
}
void putWord(std::string* s, uint32_t v) { s->append(reinterpret_cast<const char*>(&v), sizeof v); }
uint32_t wordAt(const std::string& s, size_t i) {
  uint32_t v = 0;
  std::memcpy(&v, s.data() + i * sizeof v, sizeof v);
  return v;
}

// Per-rank clocks of one mode (µs). A collective starts when its last member arrives and ends together.
struct Clocks {
  std::vector<double> t;
  double stepStart = 0;
  // Advances the members; arrivals (if non-null) receive each member's arrival time.
  double run(const std::vector<int>& ranks, const NoiseDraw& nd, double trueUs, double* arrivals) {
    double start = 0;
    for (size_t k = 0; k < ranks.size(); ++k) {
      const double a = t[ranks[k]] + (static_cast<int>(k) == nd.lateMember ? nd.lateUs : 0.0);
      if (arrivals != nullptr) arrivals[k] = a;
      start = std::max(start, a);
    }
    const double end = start + trueUs * nd.multiplier;
    for (int r : ranks) t[r] = end;
    return end;
  }
  double max() const { return *std::max_element(t.begin(), t.end()); }
  double min() const { return *std::min_element(t.begin(), t.end()); }
};

// Each channel's share of the collective's time in the truth model (1 for the slowest channel, which sets
// the time): the same latency and ramp, and the channel's own bandwidth time. The profiler's KernelCh
// stops follow it, so a channel on a degraded NIC finishes late, as on hardware.
std::vector<double> channelFractions(const TruthBreakdown& b, size_t nBytes) {
  std::vector<double> out;
  if (!(b.totalUs > 0) || b.channelGBps.empty()) return out;
  const double chBytes = static_cast<double>(nBytes) / static_cast<double>(b.channelGBps.size());
  for (double r : b.channelGBps) {
    const double bw = r > 0 ? chBytes / (r * 1e3) : b.bandwidthUs;
    out.push_back(std::min(1.0, (b.latencyUs + b.rampUs + bw) / b.totalUs));
  }
  return out;
}

}  // namespace

uint32_t packChoice(int algo, int proto, int nCh) {
  return (static_cast<uint32_t>(algo & 0xff) << 24) | (static_cast<uint32_t>(proto & 0xff) << 16) |
         static_cast<uint32_t>(nCh & 0xffff);
}

void unpackChoice(uint32_t packed, int* algo, int* proto, int* nChannels) {
  *algo = static_cast<int8_t>(packed >> 24);
  *proto = static_cast<int8_t>((packed >> 16) & 0xff);
  *nChannels = static_cast<int>(packed & 0xffff);
}

std::string choiceName(uint32_t packed) {
  int algo = 0, proto = 0, nCh = 0;
  unpackChoice(packed, &algo, &proto, &nCh);
  return std::string(algoName(algo)) + "/" + std::string(protoName(proto)) + "/" + std::to_string(nCh);
}

Ownership::Ownership(const Plan& plan, int nRanks, int n) : procs(n) {
  std::vector<int> owner(static_cast<size_t>(nRanks));
  for (int p = 0; p <= n; ++p)
    firstRank.push_back(static_cast<int>(static_cast<int64_t>(p) * nRanks / n));
  for (int p = 0; p < n; ++p)
    for (int r = firstRank[p]; r < firstRank[p + 1]; ++r) owner[r] = p;
  members.assign(static_cast<size_t>(n), std::vector<std::vector<int>>(plan.instances.size()));
  for (size_t i = 0; i < plan.instances.size(); ++i) {
    const std::vector<int>& ranks = plan.instances[i].spec->ranks;
    for (int k = 0; k < static_cast<int>(ranks.size()); ++k) members[owner[ranks[k]]][i].push_back(k);
  }
}

StepsOut playSteps(const StepsIn& in) {
  const Scenario& sc = *in.scenario;
  const Plan& plan = *in.plan;
  PluginHost& host = *in.host;
  ProcessGroup& group = *in.group;
  const int me = group.index();
  const bool multi = group.size() > 1;
  const int steps = in.steps;
  const int nRanks = sc.cluster.nRanks();
  const size_t nSlots = plan.slots.size();

  // Noise-free true time of each mode's fixed choices per (state, slot).
  std::vector<std::vector<double>> tDef(plan.states.size()), tStat(plan.states.size()), tOra(plan.states.size());
  for (size_t k = 0; k < plan.states.size(); ++k) {
    for (size_t si = 0; si < nSlots; ++si) {
      const Slot& s = plan.slots[si];
      const int ks = static_cast<int>(k), sii = static_cast<int>(si);
      tDef[k].push_back(trueTimeUs(sc, plan, ks, sii, s.deflt.algo, s.deflt.proto, s.deflt.nChannels));
      tStat[k].push_back(s.staticCand >= 0 ? plan.times[k][si][s.staticCand] : tDef[k].back());
      tOra[k].push_back(plan.times[k][si][plan.oracleCand[k][si]]);
    }
  }
  // NCCL's channel count for each (algo, proto) of a slot, for when the plugin leaves nChannels at 0.
  std::vector<std::array<std::array<int, kNumProtos>, kNumAlgos>> defCh(nSlots);
  for (size_t si = 0; si < nSlots; ++si)
    for (int a = 0; a < kNumAlgos; ++a)
      for (int p = 0; p < kNumProtos; ++p)
        defCh[si][a][p] = plan.instances[plan.slots[si].instance].model->defaultChannels(a, p, plan.slots[si].bytes);

  StepsOut out;
  for (auto& v : out.stepCommUs) v.assign(steps, 0.0);
  out.oracleHist.resize(nSlots);
  out.wwHist.resize(nSlots);
  std::array<Clocks, kNumSimModes> clocks;
  for (auto& c : clocks) c.t.assign(nRanks, 0.0);
  NoiseSource noise(sc.noise, in.seed);
  std::vector<uint32_t> lastWw(nSlots, 0xffffffffu);
  std::vector<int> lastWwState(nSlots, -1);
  std::vector<double> lastWwTime(nSlots, 0);
  std::vector<std::vector<double>> lastWwFrac(nSlots);  // per channel, see channelFractions
  std::vector<double> arrivals;
  // Per collective of the current entry and repeat (one per comm instance): its noise, every member's pick
  // (this process's own, and in process 0 the others' once gathered), and the choice in force.
  std::vector<NoiseDraw> draws;
  std::vector<std::vector<Pick>> picks;
  std::vector<Pick> inForce;
  std::string msg;
  // The tuner's per-instance sequence number of each collective, for the exploration accounting.
  std::vector<uint64_t> instSeq(plan.instances.size(), 0);
  {
    uint64_t perStep = 0;
    for (const Slot& s : plan.slots) perStep += static_cast<uint64_t>(s.repeat);
    out.records.reserve(perStep * static_cast<uint64_t>(steps));
  }
  float tbl[kNumAlgos][kNumProtos];
  constexpr uint64_t kBaseNs = 1000000000ull;  // the virtual GPU clock starts at 1 s: 0 means "no timestamp"

  const auto wall0 = std::chrono::steady_clock::now();
  Clocks& wwClock = clocks[static_cast<int>(SimMode::Wirewise)];
  for (int step = 0; step < steps; ++step) {
    const int st = plan.stateOfStep[step];
    for (Clocks& c : clocks) {
      c.stepStart = c.max() + sc.workload.computeUs;
      std::fill(c.t.begin(), c.t.end(), c.stepStart);
    }
    bool changed = false;
    for (size_t e = 0; e < sc.workload.step.size(); ++e) {
      const std::vector<int>& slots = plan.entrySlots[e];
      const size_t ns = slots.size();
      for (int rep = 0; rep < sc.workload.step[e].repeat; ++rep) {
        if (in.realPace)  // the job's pace: these collectives start when the simulated cluster gets to them
          std::this_thread::sleep_until(wall0 + std::chrono::microseconds(static_cast<int64_t>(wwClock.min())));
        // wirewise: every rank asks its own tuner context, exactly as NCCL would. The instances of one entry
        // have disjoint ranks, so asking all of them before any runs keeps each rank's call order.
        draws.resize(ns);
        picks.resize(ns);
        for (size_t j = 0; j < ns; ++j) {
          const Slot& s = plan.slots[slots[j]];
          const Instance& inst = plan.instances[s.instance];
          const int nm = static_cast<int>(inst.spec->ranks.size());
          draws[j] = noise.draw(nm);
          picks[j].assign(nm, Pick{});
          for (int k : in.owners->members[me][s.instance]) {
            std::memcpy(tbl, s.table, sizeof tbl);
            const int pluginCh = host.getCollInfo(in.hostComm[s.instance], k, s.coll, s.bytes, tbl);
            loader::Selection sel = loader::selectAlgo(tbl, pluginCh, 1, inst.channels);
            if (sel.ok && pluginCh == 0)
              sel = loader::selectAlgo(tbl, 0, defCh[slots[j]][sel.algo][sel.proto], inst.channels);
            picks[j][k] = Pick{sel.algo, sel.proto, sel.nChannels, sel.ok};
          }
        }
        if (multi && me != 0) {
          msg.clear();
          for (size_t j = 0; j < ns; ++j)
            for (int k : in.owners->members[me][plan.slots[slots[j]].instance]) putWord(&msg, encodePick(picks[j][k]));
          group.send('P', msg);
        } else if (multi) {
          const std::vector<std::string> got = group.gather('P');
          for (int p = 1; p < group.size(); ++p) {
            const std::string& m = got[p - 1];
            size_t w = 0;
            for (size_t j = 0; j < ns; ++j) {
              for (int k : in.owners->members[p][plan.slots[slots[j]].instance]) {
                if ((w + 1) * sizeof(uint32_t) > m.size())
                  throw std::runtime_error("simulator process " + std::to_string(p) + " sent too few picks");
                picks[j][k] = decodePick(wordAt(m, w++));
              }
            }
          }
        }
        inForce.resize(ns);
        if (me == 0) {
          for (size_t j = 0; j < ns; ++j) {
            const Slot& s = plan.slots[slots[j]];
            ++out.collectivesChecked;
            for (size_t k = 1; k < picks[j].size(); ++k) {
              if (!(picks[j][k] == picks[j][0])) {
                ++out.divergences;
                break;
              }
            }
            // Member 0's choice sets the time (NCCL itself would hang on a divergence; the checker counts it).
            inForce[j] = picks[j][0];
            if (!inForce[j].ok) {
              ++out.failed;  // NCCL would fail this collective; charge NCCL's own choice
              inForce[j] = Pick{s.deflt.algo, s.deflt.proto, s.deflt.nChannels, true};
            }
          }
        }
        if (multi && me == 0) {
          msg.clear();
          for (size_t j = 0; j < ns; ++j) putWord(&msg, encodePick(inForce[j]));
          group.broadcast('W', msg);
        } else if (multi) {
          msg = group.receive('W');
          if (msg.size() != ns * sizeof(uint32_t)) throw std::runtime_error("process 0 sent a malformed choice");
          for (size_t j = 0; j < ns; ++j) inForce[j] = decodePick(wordAt(msg, j));
        }

        for (size_t j = 0; j < ns; ++j) {
          const int si = slots[j];
          const Slot& s = plan.slots[si];
          const Instance& inst = plan.instances[s.instance];
          const std::vector<int>& ranks = inst.spec->ranks;
          const int nm = static_cast<int>(ranks.size());
          const NoiseDraw& nd = draws[j];
          const Pick& ww = inForce[j];
          const uint32_t packed = packChoice(ww.algo, ww.proto, ww.nChannels);
          if (packed != lastWw[si] || st != lastWwState[si]) {
            if (lastWw[si] != 0xffffffffu && packed != lastWw[si]) changed = true;
            lastWw[si] = packed;
            lastWwState[si] = st;
            lastWwTime[si] = trueTimeUs(sc, plan, st, si, ww.algo, ww.proto, ww.nChannels);
            TruthQuery q{s.coll, s.bytes, s.dtype, ww.algo, ww.proto, std::max(1, ww.nChannels)};
            lastWwFrac[si] = channelFractions(truthBreakdown(sc.cluster, inst.layout, plan.states[st], q), s.bytes);
          }
          ++out.wwHist[si][packed];
          const Cand& oc = s.cands[plan.oracleCand[st][si]];
          ++out.oracleHist[si][packChoice(oc.algo, oc.proto, oc.nChannels)];

          clocks[0].run(ranks, nd, tDef[st][si], nullptr);
          clocks[1].run(ranks, nd, tStat[st][si], nullptr);
          clocks[2].run(ranks, nd, tOra[st][si], nullptr);
          arrivals.resize(nm);
          const double end = clocks[3].run(ranks, nd, lastWwTime[si], arrivals.data());
          out.records.push_back(
              {inst.commId, instSeq[s.instance]++, s.coll, s.bytes, lastWwTime[si] * nd.multiplier, step, si, packed, nd});

          // The profiler sees each rank's kernel from its own arrival to the common end.
          CollEmit ev;
          ev.coll = s.coll;
          const size_t elems = s.bytes / std::max<size_t>(1, dtypeSize(s.dtype));
          const bool perRankCount = s.coll == CollType::AllGather || s.coll == CollType::ReduceScatter;
          ev.count = perRankCount ? elems / static_cast<size_t>(nm) : elems;
          ev.datatype = ncclDatatypeString(s.dtype);
          ev.network = inst.layout.nNodes > 1;
          ev.bytes = s.bytes;
          ev.stopNs = kBaseNs + static_cast<uint64_t>(end * 1000.0);
          const double spanStartUs = std::max(0.0, end - lastWwTime[si] * nd.multiplier);
          ev.spanStartNs = kBaseNs + static_cast<uint64_t>(spanStartUs * 1000.0);
          ev.channelFrac = lastWwFrac[si].data();
          ev.fracCount = static_cast<int>(lastWwFrac[si].size());
          for (int k : in.owners->members[me][s.instance]) {
            const Pick& pk = picks[j][k].ok ? picks[j][k] : ww;
            ev.algo = pk.algo;
            ev.proto = pk.proto;
            ev.nChannels = pk.nChannels;
            ev.startNs = kBaseNs + static_cast<uint64_t>(arrivals[k] * 1000.0);
            host.emitCollective(in.hostComm[s.instance], k, ev);
          }
        }
      }
    }
    for (int m = 0; m < kNumSimModes; ++m) out.stepCommUs[m][step] = clocks[m].max() - clocks[m].stepStart;
    if (changed) out.tableChangeSteps.push_back(step);
    if (in.progress) in.progress(step + 1, steps);
  }
  return out;
}

}  // namespace wirewise::sim
