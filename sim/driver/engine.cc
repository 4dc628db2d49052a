// runSimulation: the four modes over one noise stream, with the plugin driven for every rank in wirewise mode.
#include <algorithm>
#include <chrono>
#include <cstdarg>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <map>
#include <stdexcept>

#include <unistd.h>

#include "sim/driver/driver.h"
#include "sim/driver/exploration.h"
#include "sim/driver/noise.h"
#include "sim/driver/plan.h"
#include "sim/driver/plugin_env.h"
#include "sim/driver/plugin_host.h"

namespace wirewise::sim {
namespace {

// NCCL's logger stand-in: the plugin's warnings matter to whoever runs the simulator, INFO does not.
void simLogger(ncclDebugLogLevel level, unsigned long /*flags*/, const char* /*file*/, int /*line*/,
               const char* fmt, ...) {
  if (level != NCCL_LOG_WARN) return;
  va_list ap;
  va_start(ap, fmt);
  std::fputs("wirewise simulate: plugin WARN ", stderr);
  std::vfprintf(stderr, fmt, ap);
  std::fputc('\n', stderr);
  va_end(ap);
}

const char* ncclDatatypeString(DType d) {
  switch (d) {
    case DType::F32: return "ncclFloat32";
    case DType::Bf16: return "ncclBfloat16";
    case DType::F16: return "ncclFloat16";
    case DType::F8: return "ncclFloat8e4m3";
  }
  return "ncclFloat32";
}

uint32_t pack(int algo, int proto, int nCh) {
  return (static_cast<uint32_t>(algo & 0xff) << 24) | (static_cast<uint32_t>(proto & 0xff) << 16) |
         static_cast<uint32_t>(nCh & 0xffff);
}

std::string choiceName(uint32_t packed) {
  const int algo = static_cast<int8_t>(packed >> 24), proto = static_cast<int8_t>((packed >> 16) & 0xff);
  return std::string(algoName(algo)) + "/" + std::string(protoName(proto)) + "/" + std::to_string(packed & 0xffff);
}

// One rank's view of what it runs.
struct Pick {
  int algo = -1, proto = -1, nChannels = 0;
  bool ok = false;
  bool operator==(const Pick& o) const { return algo == o.algo && proto == o.proto && nChannels == o.nChannels; }
};

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
};

std::string faultLabel(const Fault& f) {
  static const char* kKinds[] = {"degrade", "contention", "latency", "flap"};
  static const char* kLinks[] = {"nic", "nvlink", "pcie", "net"};
  std::string s = std::string(kKinds[static_cast<int>(f.kind)]) + " " + kLinks[static_cast<int>(f.link)];
  if (f.link != LinkKind::Net) {
    s += " node " + (f.node < 0 ? std::string("*") : std::to_string(f.node));
    s += " #" + (f.index < 0 ? std::string("*") : std::to_string(f.index));
  }
  char b[64] = "";
  if (f.kind == FaultKind::Degrade || f.kind == FaultKind::Flap) std::snprintf(b, sizeof b, " x%g", f.factor);
  if (f.kind == FaultKind::Contention) std::snprintf(b, sizeof b, " %d flows", f.flows);
  if (f.kind == FaultKind::Latency) std::snprintf(b, sizeof b, " +%g us", f.addUs);
  if (f.kind == FaultKind::Flap) s += " every " + std::to_string(f.periodSteps) + " steps";
  return s + b;
}

std::optional<int> adaptedStep(const std::vector<double>& ww, const std::vector<double>& oracle, int onset) {
  constexpr int kWindow = 10;
  const int n = static_cast<int>(ww.size());
  int run = 0;
  for (int s = std::max(0, onset); s < n; ++s) {
    run = ww[s] <= 1.05 * oracle[s] ? run + 1 : 0;
    if (run == kWindow) return s - kWindow + 1;
  }
  return std::nullopt;
}

}  // namespace

uint64_t commIdFor(const std::string& name, int instance) {
  const std::string key = name + "#" + std::to_string(instance);
  uint64_t h = 1469598103934665603ull;
  for (unsigned char c : key) h = (h ^ c) * 1099511628211ull;
  return h;
}

SimResult runSimulation(const Scenario& sc, const SimOptions& opt) {
  const auto wall0 = std::chrono::steady_clock::now();
  const int steps = opt.steps ? *opt.steps : sc.workload.steps;
  if (steps <= 0) throw std::runtime_error("steps must be positive");
  if (opt.pluginPath.empty()) throw std::runtime_error("no plugin library given");
  const uint64_t seed = opt.seed ? *opt.seed : sc.seed;
  Plan plan = buildPlan(sc, steps);
  const int nRanks = sc.cluster.nRanks();
  const size_t nSlots = plan.slots.size();

  // The plugin reads its settings once, when its runtime starts (at the first init below). env outlives host:
  // the previous environment comes back only after the libraries are unloaded.
  PluginEnv env(opt.logPath, opt.sync, opt.policy);
  PluginHost host(opt.pluginPath, opt.profilerPath, &simLogger);
  std::vector<int> hostComm;
  for (const Instance& in : plan.instances)
    hostComm.push_back(host.addComm(in.commId, in.spec->name, in.layout.nRanks, in.layout.nNodes,
                                    in.layout.minLocalRanks, in.layout.maxLocalRanks));

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

  SimResult res;
  res.scenario = sc.name;
  res.seed = seed;
  res.steps = steps;
  res.ranks = nRanks;
  res.computeUs = sc.workload.computeUs;
  res.faultSpecs = sc.faults;
  for (auto& m : res.modes) m.stepCommUs.assign(steps, 0.0);

  std::array<Clocks, kNumSimModes> clocks;
  for (auto& c : clocks) c.t.assign(nRanks, 0.0);
  NoiseSource noise(sc.noise, seed);
  std::vector<std::map<uint32_t, uint64_t>> oracleHist(nSlots), wwHist(nSlots);
  std::vector<uint32_t> lastWw(nSlots, 0xffffffffu);
  std::vector<int> lastWwState(nSlots, -1);
  std::vector<double> lastWwTime(nSlots, 0);
  std::vector<Pick> picks;
  std::vector<double> arrivals;
  // Every wirewise collective with the tuner's per-instance sequence number, for the exploration accounting.
  std::vector<uint64_t> instSeq(plan.instances.size(), 0);
  std::vector<CollRecord> records;
  {
    uint64_t perStep = 0;
    for (const Slot& s : plan.slots) perStep += static_cast<uint64_t>(s.repeat);
    records.reserve(perStep * static_cast<uint64_t>(steps));
  }
  uint64_t failed = 0;
  float tbl[kNumAlgos][kNumProtos];
  constexpr uint64_t kBaseNs = 1000000000ull;  // the virtual GPU clock starts at 1 s: 0 means "no timestamp"

  for (int step = 0; step < steps; ++step) {
    const int st = plan.stateOfStep[step];
    for (Clocks& c : clocks) {
      c.stepStart = c.max() + sc.workload.computeUs;
      std::fill(c.t.begin(), c.t.end(), c.stepStart);
    }
    bool changed = false;
    for (size_t e = 0; e < sc.workload.step.size(); ++e) {
      for (int rep = 0; rep < sc.workload.step[e].repeat; ++rep) {
        for (int si : plan.entrySlots[e]) {
          const Slot& s = plan.slots[si];
          const Instance& in = plan.instances[s.instance];
          const std::vector<int>& ranks = in.spec->ranks;
          const int nm = static_cast<int>(ranks.size());
          const NoiseDraw nd = noise.draw(nm);

          // wirewise: every rank asks its own tuner context, exactly as NCCL would.
          picks.resize(nm);
          for (int k = 0; k < nm; ++k) {
            std::memcpy(tbl, s.table, sizeof tbl);
            const int pluginCh = host.getCollInfo(hostComm[s.instance], k, s.coll, s.bytes, tbl);
            loader::Selection sel = loader::selectAlgo(tbl, pluginCh, 1, in.channels);
            if (sel.ok && pluginCh == 0) sel = loader::selectAlgo(tbl, 0, defCh[si][sel.algo][sel.proto], in.channels);
            picks[k] = Pick{sel.algo, sel.proto, sel.nChannels, sel.ok};
          }
          ++res.collectivesChecked;
          for (int k = 1; k < nm; ++k) {
            if (!(picks[k] == picks[0])) {
              ++res.divergences;
              break;
            }
          }
          // Member 0's choice sets the time (NCCL itself would hang on a divergence; the checker counts it).
          Pick ww = picks[0];
          if (!ww.ok) {
            ++failed;  // NCCL would fail this collective; charge NCCL's own choice
            ww = Pick{s.deflt.algo, s.deflt.proto, s.deflt.nChannels, true};
          }
          const uint32_t packed = pack(ww.algo, ww.proto, ww.nChannels);
          if (packed != lastWw[si] || st != lastWwState[si]) {
            if (lastWw[si] != 0xffffffffu && packed != lastWw[si]) changed = true;
            lastWw[si] = packed;
            lastWwState[si] = st;
            lastWwTime[si] = trueTimeUs(sc, plan, st, si, ww.algo, ww.proto, ww.nChannels);
          }
          ++wwHist[si][packed];
          ++oracleHist[si][pack(s.cands[plan.oracleCand[st][si]].algo, s.cands[plan.oracleCand[st][si]].proto,
                                s.cands[plan.oracleCand[st][si]].nChannels)];

          clocks[0].run(ranks, nd, tDef[st][si], nullptr);
          clocks[1].run(ranks, nd, tStat[st][si], nullptr);
          clocks[2].run(ranks, nd, tOra[st][si], nullptr);
          arrivals.resize(nm);
          const double end = clocks[3].run(ranks, nd, lastWwTime[si], arrivals.data());
          records.push_back({in.commId, instSeq[s.instance]++, s.coll, s.bytes, lastWwTime[si] * nd.multiplier});

          // The profiler sees each rank's kernel from its own arrival to the common end.
          CollEmit ev;
          ev.coll = s.coll;
          const size_t elems = s.bytes / std::max<size_t>(1, dtypeSize(s.dtype));
          const bool perRankCount = s.coll == CollType::AllGather || s.coll == CollType::ReduceScatter;
          ev.count = perRankCount ? elems / static_cast<size_t>(nm) : elems;
          ev.datatype = ncclDatatypeString(s.dtype);
          ev.network = in.layout.nNodes > 1;
          ev.bytes = s.bytes;
          ev.stopNs = kBaseNs + static_cast<uint64_t>(end * 1000.0);
          for (int k = 0; k < nm; ++k) {
            const Pick& pk = picks[k].ok ? picks[k] : ww;
            ev.algo = pk.algo;
            ev.proto = pk.proto;
            ev.nChannels = pk.nChannels;
            ev.startNs = kBaseNs + static_cast<uint64_t>(arrivals[k] * 1000.0);
            host.emitCollective(hostComm[s.instance], k, ev);
          }
        }
      }
    }
    for (int m = 0; m < kNumSimModes; ++m) {
      res.modes[m].stepCommUs[step] = clocks[m].max() - clocks[m].stepStart;
      res.modes[m].commTimeUs += res.modes[m].stepCommUs[step];
    }
    if (changed) res.tableChangeSteps.push_back(step);
    if (opt.progress) opt.progress(step + 1, steps);
  }
  // Read the host's state before finalize unloads the libraries.
  res.pluginPath = opt.pluginPath;
  res.profilerPath = host.profilerPath();
  res.tunerLoaded = host.tunerLoaded();
  res.profilerLoaded = host.profilerLoaded();
  res.sameInstance = host.sameInstance();
  res.tunerVersion = host.tunerVersion();
  res.profilerVersion = host.profilerVersion();
  res.eventMask = host.eventMask();
  res.profilerEvents = host.eventsEmitted();
  const std::string tunerWhy = host.tunerWhy(), profilerWhy = host.profilerWhy();
  host.finalizeAll();

  // Finalize flushed the log (plugin_stop is its last line). Only this run's lines count: a --log file may
  // hold earlier runs or other processes.
  PluginLog log;
  {
    std::ifstream in(env.logPath(), std::ios::binary);
    if (in) {
      in.seekg(static_cast<std::streamoff>(env.logStart()));
      log = readPluginLog(in, static_cast<long>(::getpid()));
    }
  }
  const Exploration expl = explorationOf(log, records);
  res.explorationUs = expl.us;
  res.explorationCollectives = expl.collectives;
  res.adaptations = adaptCounts(log);
  res.syncInForce = log.sync;
  res.policyInForce = log.policy;
  res.syncRequested = env.sync().value;
  res.syncFrom = env.sync().from;
  res.policyRequested = env.policy().value;
  res.policyFrom = env.policy().from;
  res.logPath = env.temporaryLog() ? "" : env.logPath();
  res.logLinesDropped = log.linesDropped;

  // Choices per mode, keyed by "comm coll bytes".
  for (size_t si = 0; si < nSlots; ++si) {
    const Slot& s = plan.slots[si];
    const std::string key = plan.instances[s.instance].label + " " + std::string(collName(s.coll)) + " " +
                            std::to_string(s.bytes);
    const uint64_t n = static_cast<uint64_t>(steps) * static_cast<uint64_t>(s.repeat);
    res.modes[0].choices[key][choiceName(pack(s.deflt.algo, s.deflt.proto, s.deflt.nChannels))] += n;
    const Cand& sc_ = s.staticCand >= 0 ? s.cands[s.staticCand] : Cand{};
    const uint32_t sp = s.staticCand >= 0 ? pack(sc_.algo, sc_.proto, sc_.nChannels)
                                          : pack(s.deflt.algo, s.deflt.proto, s.deflt.nChannels);
    res.modes[1].choices[key][choiceName(sp)] += n;
    for (const auto& [p, c] : oracleHist[si]) res.modes[2].choices[key][choiceName(p)] += c;
    for (const auto& [p, c] : wwHist[si]) res.modes[3].choices[key][choiceName(p)] += c;
  }

  // The most collectives any rank issues.
  std::vector<uint64_t> perRank(nRanks, 0);
  for (const Slot& s : plan.slots)
    for (int r : plan.instances[s.instance].spec->ranks) perRank[r] += static_cast<uint64_t>(s.repeat) * steps;
  res.collectivesPerRank = perRank.empty() ? 0 : *std::max_element(perRank.begin(), perRank.end());

  for (size_t i = 0; i < sc.faults.size(); ++i) {
    const Fault& f = sc.faults[i];
    FaultOutcome o;
    o.index = static_cast<int>(i);
    o.onsetStep = f.fromStep;
    o.endStep = f.toStep < 0 ? steps : f.toStep;
    o.label = faultLabel(f);
    if (f.fromStep < steps) o.adaptedStep = adaptedStep(res.modes[3].stepCommUs, res.modes[2].stepCommUs, f.fromStep);
    res.faults.push_back(o);
  }

  if (!res.tunerLoaded) res.pluginNote += "no tuner: " + tunerWhy + "; ";
  if (!res.profilerLoaded) res.pluginNote += "no profiler: " + profilerWhy + "; ";
  if (res.tunerLoaded && res.profilerLoaded && !res.sameInstance)
    res.pluginNote += "tuner and profiler resolved to different library instances; ";
  if (failed > 0)
    res.pluginNote += std::to_string(failed) + " collectives left NCCL no algorithm (charged NCCL's choice); ";
  if (res.tunerLoaded && res.syncInForce && *res.syncInForce != res.syncRequested)
    res.pluginNote += "WIREWISE_SYNC=" + res.syncRequested + " not taken (in force: " + *res.syncInForce + "); ";
  if (res.tunerLoaded && res.policyInForce && *res.policyInForce != res.policyRequested)
    res.pluginNote += "WIREWISE_POLICY=" + res.policyRequested + " not taken (in force: " + *res.policyInForce + "); ";
  if (log.linesDropped > 0)
    res.pluginNote += "the adaptation log dropped " + std::to_string(log.linesDropped) +
                      " lines (exploration and adaptations may be undercounted); ";
  if (log.badLines > 0)
    res.pluginNote += std::to_string(log.badLines) + " adaptation-log lines could not be read; ";
  res.runTimeS = std::chrono::duration<double>(std::chrono::steady_clock::now() - wall0).count();
  return res;
}

}  // namespace wirewise::sim
