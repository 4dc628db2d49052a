// runSimulation: the run's setup, its processes (SimOptions::procs), and the report from what the step loop
// (steps.cc) measured and the plugin logged.
#include <algorithm>
#include <chrono>
#include <cstdarg>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <map>
#include <optional>
#include <set>
#include <sstream>
#include <stdexcept>

#include <unistd.h>

#include "common/settings.h"
#include "sim/driver/driver.h"
#include "sim/driver/exploration.h"
#include "sim/driver/noise.h"
#include "sim/driver/plan.h"
#include "sim/driver/plugin_env.h"
#include "sim/driver/plugin_host.h"
#include "sim/driver/probe_cost.h"
#include "sim/driver/process_group.h"
#include "sim/driver/steps.h"

namespace wirewise::sim {
namespace {

// This process's index in a run with several (set in a child right after the fork), for the WARNs below.
int gProcess = 0;

// NCCL's logger stand-in: the plugin's warnings matter to whoever runs the simulator, INFO does not.
void simLogger(ncclDebugLogLevel level, unsigned long /*flags*/, const char* /*file*/, int /*line*/,
               const char* fmt, ...) {
  if (level != NCCL_LOG_WARN) return;
  va_list ap;
  va_start(ap, fmt);
  if (gProcess > 0) std::fprintf(stderr, "wirewise simulate: process %d: plugin WARN ", gProcess);
  else std::fputs("wirewise simulate: plugin WARN ", stderr);
  std::vfprintf(stderr, fmt, ap);
  std::fputc('\n', stderr);
  va_end(ap);
}

std::string faultLabel(const Fault& f) {
  std::string s = std::string(faultKindName(f.kind)) + " " + std::string(linkKindName(f.link));
  if (f.link != LinkKind::Net) {
    s += " node " + (f.node < 0 ? std::string("*") : std::to_string(f.node));
    s += " #" + (f.index < 0 ? std::string("*") : std::to_string(f.index));
  }
  char b[64] = "";
  if (f.kind == FaultKind::Degrade || f.kind == FaultKind::Flap || f.kind == FaultKind::Ramp)
    std::snprintf(b, sizeof b, " x%g", f.factor);
  if (f.kind == FaultKind::Contention) std::snprintf(b, sizeof b, " %d flows", f.flows);
  if (f.kind == FaultKind::Latency) std::snprintf(b, sizeof b, " +%g us", f.addUs);
  if (f.kind == FaultKind::Flap) s += " every " + std::to_string(f.periodSteps) + " steps";
  if (f.kind == FaultKind::Ramp) s += " over " + std::to_string(f.rampSteps) + " steps";
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

// One process's plugin host, as process 0's report needs it (a child sends it as JSON in its last frame).
struct HostInfo {
  int contexts = 0;
  uint64_t events = 0;
  bool tunerLoaded = false, profilerLoaded = false, sameInstance = false;
  int tunerVersion = 0, profilerVersion = 0, eventMask = 0;
  std::string tunerWhy, profilerWhy;
};

HostInfo hostInfo(const PluginHost& h) {
  return HostInfo{h.contexts(),      h.eventsEmitted(),   h.tunerLoaded(), h.profilerLoaded(), h.sameInstance(),
                  h.tunerVersion(),  h.profilerVersion(), h.eventMask(),   h.tunerWhy(),       h.profilerWhy()};
}

nlohmann::json toJson(const HostInfo& i) {
  return {{"contexts", i.contexts},         {"events", i.events},
          {"tuner_loaded", i.tunerLoaded},  {"profiler_loaded", i.profilerLoaded},
          {"same_instance", i.sameInstance}, {"tuner_version", i.tunerVersion},
          {"profiler_version", i.profilerVersion}, {"event_mask", i.eventMask},
          {"tuner_why", i.tunerWhy},        {"profiler_why", i.profilerWhy}};
}

HostInfo fromJson(const nlohmann::json& j) {
  HostInfo i;
  i.contexts = j.at("contexts").get<int>();
  i.events = j.at("events").get<uint64_t>();
  i.tunerLoaded = j.at("tuner_loaded").get<bool>();
  i.profilerLoaded = j.at("profiler_loaded").get<bool>();
  i.sameInstance = j.at("same_instance").get<bool>();
  i.tunerVersion = j.at("tuner_version").get<int>();
  i.profilerVersion = j.at("profiler_version").get<int>();
  i.eventMask = j.at("event_mask").get<int>();
  i.tunerWhy = j.at("tuner_why").get<std::string>();
  i.profilerWhy = j.at("profiler_why").get<std::string>();
  return i;
}

// The communicators this process plays a member of, as NCCL creates them; -1 where it plays none.
std::vector<int> addComms(PluginHost& host, const Plan& plan, const std::vector<std::vector<int>>& members) {
  std::vector<int> hostComm;
  for (size_t i = 0; i < plan.instances.size(); ++i) {
    const Instance& in = plan.instances[i];
    hostComm.push_back(members[i].empty() ? -1
                                          : host.addComm(in.commId, in.spec->name, in.layout.nRanks, in.layout.nNodes,
                                                         in.layout.minLocalRanks, in.layout.maxLocalRanks, members[i]));
  }
  return hostComm;
}

// What playSteps needs to run process `index`'s ranks of the scenario through `host`.
StepsIn stepsFor(const Scenario& sc, const Plan& plan, uint64_t seed, int steps, PluginHost& host,
                 const Ownership& owners, ProcessGroup& group, const PluginEnv& env) {
  StepsIn in;
  in.realPace = env.sync().value == "on";
  in.scenario = &sc;
  in.plan = &plan;
  in.seed = seed;
  in.steps = steps;
  in.host = &host;
  in.hostComm = addComms(host, plan, owners.members[group.index()]);
  in.owners = &owners;
  in.group = &group;
  return in;
}

// A child process: its ranks in lock-step with process 0, then its host's state in a last frame. It never
// returns: whatever happens, it leaves through exitChild.
[[noreturn]] void runChild(const Scenario& sc, const SimOptions& opt, const Plan& plan, uint64_t seed, int steps,
                           const Ownership& owners, const PluginEnv& env, ProcessGroup& group) {
  int rc = 0;
  try {
    gProcess = group.index();
    env.useProcessLog(group.index());
    // Process 0 loads the plugin first, so that it hosts the coordinator and outlives every member.
    group.receive('G');
    PluginHost host(opt.pluginPath, opt.profilerPath, &simLogger);
    playSteps(stepsFor(sc, plan, seed, steps, host, owners, group, env));
    const HostInfo info = hostInfo(host);
    // Finalize flushes this process's log before process 0 reads it.
    host.finalizeAll();
    group.send('R', toJson(info).dump());
  } catch (const std::exception& e) {
    try {
      group.send('E', e.what());
    } catch (...) {
    }
    rc = 2;
  } catch (...) {
    rc = 2;
  }
  ProcessGroup::exitChild(rc);
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
  const int procs = opt.procs;
  if (procs < 1 || procs > nRanks)
    throw std::runtime_error("procs must be between 1 and the scenario's " + std::to_string(nRanks) + " ranks, not " +
                             std::to_string(procs));
  const Ownership owners(plan, nRanks, procs);

  // The plugin reads its settings once, when its runtime starts (at the first init below). env outlives host:
  // the previous environment comes back only after the libraries are unloaded. It is set before the fork, so
  // that every process meets the same coordinator (port and key) and process 0 cleans up after all.
  PluginEnv env(opt.logPath, opt.sync, opt.policy, procs);
  ProcessGroup group(procs);
  if (!group.parent()) runChild(sc, opt, plan, seed, steps, owners, env, group);
  // Declared out here so that, on an error, the children are killed (catch below) before it finalizes.
  std::optional<PluginHost> hostSlot;
  StepsOut out;
  std::vector<HostInfo> infos;
  try {
    PluginHost& host = hostSlot.emplace(opt.pluginPath, opt.profilerPath, &simLogger);
    StepsIn in = stepsFor(sc, plan, seed, steps, host, owners, group, env);  // group.index() is 0 here
    in.progress = opt.progress;
    if (procs > 1) group.broadcast('G', "");
    out = playSteps(in);

    // Read the hosts' state before finalize unloads the libraries. The children finalize first: process 0
    // hosts the coordinator, which must see every member through to the end.
    infos.push_back(hostInfo(host));
    if (procs > 1) {
      group.stopWatchdog();
      for (const std::string& payload : group.gather('R')) {
        const auto j = nlohmann::json::parse(payload, nullptr, /*allow_exceptions=*/false);
        if (!j.is_object()) throw std::runtime_error("a simulator process sent an unreadable report");
        try {
          infos.push_back(fromJson(j));
        } catch (const nlohmann::json::exception& e) {
          throw std::runtime_error(std::string("a simulator process sent an incomplete report: ") + e.what());
        }
      }
      group.finish();
    }
  } catch (...) {
    group.abort();
    throw;
  }
  PluginHost& host = *hostSlot;
  host.finalizeAll();
  env.mergeProcessLogs();

  SimResult res;
  res.scenario = sc.name;
  res.seed = seed;
  res.steps = steps;
  res.ranks = nRanks;
  res.procs = procs;
  res.computeUs = sc.workload.computeUs;
  res.faultSpecs = sc.faults;
  for (int m = 0; m < kNumSimModes; ++m) {
    res.modes[m].stepCommUs = std::move(out.stepCommUs[m]);
    for (double v : res.modes[m].stepCommUs) res.modes[m].commTimeUs += v;
  }
  res.tableChangeSteps = std::move(out.tableChangeSteps);
  res.collectivesChecked = out.collectivesChecked;
  res.divergences = out.divergences;

  // The plugin as every process that played a rank found it (each loaded its own copy).
  res.pluginPath = opt.pluginPath;
  res.profilerPath = host.profilerPath();
  const HostInfo* ref = &infos[0];
  for (const HostInfo& i : infos)
    if (ref->contexts == 0 && i.contexts > 0) ref = &i;
  res.tunerLoaded = ref->tunerLoaded;
  res.profilerLoaded = ref->profilerLoaded;
  res.sameInstance = ref->sameInstance;
  res.tunerVersion = ref->tunerVersion;
  res.profilerVersion = ref->profilerVersion;
  res.eventMask = ref->eventMask;
  std::string tunerWhy = ref->tunerWhy, profilerWhy = ref->profilerWhy;
  for (int p = 0; p < procs; ++p) {
    const HostInfo& i = infos[p];
    res.processes.push_back({owners.firstRank[p], owners.firstRank[p + 1] - owners.firstRank[p], i.contexts, i.events});
    res.profilerEvents += i.events;
    if (i.contexts == 0) continue;
    const std::string who = procs > 1 ? "process " + std::to_string(p) + ": " : "";
    if (res.tunerLoaded && !i.tunerLoaded) tunerWhy = who + i.tunerWhy;
    if (res.profilerLoaded && !i.profilerLoaded) profilerWhy = who + i.profilerWhy;
    res.tunerLoaded = res.tunerLoaded && i.tunerLoaded;
    res.profilerLoaded = res.profilerLoaded && i.profilerLoaded;
    res.sameInstance = res.sameInstance && i.sameInstance;
  }

  // Finalize flushed the log (plugin_stop is its last line). Only this run's lines count: a --log file may
  // hold earlier runs or other processes.
  std::set<long> pids;
  for (int p = 0; p < procs; ++p) pids.insert(static_cast<long>(group.pid(p)));
  PluginLog log;
  {
    std::ifstream logIn(env.logPath(), std::ios::binary);
    if (logIn) {
      logIn.seekg(static_cast<std::streamoff>(env.logStart()));
      log = readPluginLog(logIn, pids);
    }
  }
  std::vector<char> explored;
  const Exploration expl = explorationOf(log, out.records, &explored);
  res.explorationUs = expl.us;
  res.explorationCollectives = expl.collectives;
  {
    ProbeCostModel pm;
    pm.nRanks = nRanks;
    for (const Slot& s : plan.slots) {
      pm.slotRanks.push_back(plan.instances[s.instance].spec->ranks);
      pm.defaultChoice.push_back(packChoice(s.deflt.algo, s.deflt.proto, s.deflt.nChannels));
    }
    pm.trueUs = [&](const CollRecord& c, uint32_t choice) {
      int algo = 0, proto = 0, nCh = 0;
      unpackChoice(choice, &algo, &proto, &nCh);
      return trueTimeUs(sc, plan, plan.stateOfStep[c.step], c.slot, algo, proto, nCh);
    };
    res.probeCost = probeCostOf(out.records, explored, pm);
    res.explorationRankShare = rankExplorationShare(out.records, explored, pm.slotRanks, nRanks);
  }
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
    res.modes[0].choices[key][choiceName(packChoice(s.deflt.algo, s.deflt.proto, s.deflt.nChannels))] += n;
    const Cand& sc_ = s.staticCand >= 0 ? s.cands[s.staticCand] : Cand{};
    const uint32_t sp = s.staticCand >= 0 ? packChoice(sc_.algo, sc_.proto, sc_.nChannels)
                                          : packChoice(s.deflt.algo, s.deflt.proto, s.deflt.nChannels);
    res.modes[1].choices[key][choiceName(sp)] += n;
    for (const auto& [p, c] : out.oracleHist[si]) res.modes[2].choices[key][choiceName(p)] += c;
    for (const auto& [p, c] : out.wwHist[si]) res.modes[3].choices[key][choiceName(p)] += c;
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
  if (out.failed > 0)
    res.pluginNote += std::to_string(out.failed) + " collectives left NCCL no algorithm (charged NCCL's choice); ";
  if (res.tunerLoaded && res.syncInForce && *res.syncInForce != res.syncRequested)
    res.pluginNote += std::string(settingName(&Settings::sync)) + "=" + res.syncRequested + " not taken (in force: " + *res.syncInForce + "); ";
  if (res.tunerLoaded && res.policyInForce && *res.policyInForce != res.policyRequested)
    res.pluginNote += std::string(settingName(&Settings::policy)) + "=" + res.policyRequested + " not taken (in force: " + *res.policyInForce + "); ";
  if (log.linesDropped > 0)
    res.pluginNote += "the adaptation log dropped " + std::to_string(log.linesDropped) +
                      " lines (exploration and adaptations may be undercounted); ";
  if (log.badLines > 0)
    res.pluginNote += std::to_string(log.badLines) + " adaptation-log lines could not be read; ";
  res.runTimeS = std::chrono::duration<double>(std::chrono::steady_clock::now() - wall0).count();
  return res;
}

}  // namespace wirewise::sim
