// The report: JSON per shared/scenarios/README.md (plus documented extras) and the stdout table.
#include <cmath>
#include <cstdio>
#include <string>

#include "common/settings.h"
#include "sim/driver/driver.h"

namespace wirewise::sim {

const char* simModeName(SimMode m) {
  switch (m) {
    case SimMode::NcclDefault: return "nccl-default";
    case SimMode::StaticBest: return "static-best";
    case SimMode::Oracle: return "oracle";
    case SimMode::Wirewise: return "wirewise";
  }
  return "?";
}

namespace {

double modeTime(const SimResult& r, SimMode m) { return r.modes[static_cast<int>(m)].commTimeUs; }

nlohmann::json optInt(const std::optional<int>& v) { return v ? nlohmann::json(*v) : nlohmann::json(nullptr); }
nlohmann::json optStr(const std::optional<std::string>& v) {
  return v ? nlohmann::json(*v) : nlohmann::json(nullptr);
}

}  // namespace

double speedupVsDefault(const SimResult& r) {
  const double w = modeTime(r, SimMode::Wirewise);
  return w > 0 ? modeTime(r, SimMode::NcclDefault) / w : 0.0;
}

double capturedGain(const SimResult& r) {
  const double d = modeTime(r, SimMode::NcclDefault);
  const double o = modeTime(r, SimMode::Oracle);
  const double w = modeTime(r, SimMode::Wirewise);
  // Nothing to capture: the contract's 1.0 rule.
  if (std::fabs(d - o) <= 0.001 * d) return 1.0;
  return (d - w) / (d - o);
}

double explorationShare(const SimResult& r) { return r.explorationRankShare; }

double explorationOverCommTime(const SimResult& r) {
  const double w = modeTime(r, SimMode::Wirewise);
  return w > 0 ? r.explorationUs / w : 0.0;
}

nlohmann::json reportJson(const SimResult& r) {
  nlohmann::json j;
  j["scenario"] = r.scenario;
  j["simulated"] = true;
  j["ranks"] = r.ranks;
  j["procs"] = r.procs;
  j["collectives_per_rank"] = r.collectivesPerRank;
  nlohmann::json modes = nlohmann::json::object();
  nlohmann::json choices = nlohmann::json::object();
  for (int m = 0; m < kNumSimModes; ++m) {
    const ModeResult& mr = r.modes[m];
    const char* name = simModeName(static_cast<SimMode>(m));
    modes[name] = {{"comm_time_us", mr.commTimeUs}, {"step_comm_time_us", mr.stepCommUs}};
    choices[name] = mr.choices;
  }
  j["modes"] = modes;
  j["speedup_vs_default"] = speedupVsDefault(r);
  j["captured_gain"] = capturedGain(r);
  nlohmann::json faults = nlohmann::json::array();
  for (const FaultOutcome& f : r.faults) {
    std::optional<int> latency;
    if (f.adaptedStep) latency = *f.adaptedStep - f.onsetStep;
    faults.push_back({{"index", f.index},
                      {"onset_step", f.onsetStep},
                      {"adapted_step", optInt(f.adaptedStep)},
                      {"latency_steps", optInt(latency)},
                      {"end_step", f.endStep},
                      {"label", f.label}});
  }
  j["faults"] = faults;
  j["consistency"] = {{"collectives_checked", r.collectivesChecked}, {"divergences", r.divergences}};
  j["boundary_waits"] = {{"count", r.boundaryWaits}, {"total_us", r.boundaryWaitUs}};
  j["exploration_time_us"] = r.explorationUs;
  // Extras (docs/simulator.md).
  j["exploration_share"] = explorationShare(r);
  j["exploration_over_comm_time"] = explorationOverCommTime(r);
  j["exploration_collectives"] = r.explorationCollectives;
  const ProbeCost& pc = r.probeCost;
  const auto orNull = [](bool have, double v) { return have ? nlohmann::json(v) : nlohmann::json(nullptr); };
  j["probe_cost"] = {{"collectives", pc.collectives},
                     {"ratio_p99", orNull(pc.collectives > 0, pc.ratioP99)},
                     {"ratio_max", orNull(pc.collectives > 0, pc.ratioMax)},
                     {"steps", pc.steps},
                     {"step_inflation_p99", orNull(pc.steps > 0, pc.stepInflationP99)},
                     {"step_inflation_max", orNull(pc.steps > 0, pc.stepInflationMax)}};
  j["adaptations"] = r.adaptations;
  j["seed"] = r.seed;
  j["steps"] = r.steps;
  j["compute_us_per_step"] = r.computeUs;
  j["run_time_s"] = r.runTimeS;
  nlohmann::json procs = nlohmann::json::array();
  for (const ProcessOutcome& p : r.processes)
    procs.push_back({{"first_rank", p.firstRank},
                     {"ranks", p.ranks},
                     {"tuner_contexts", p.tunerContexts},
                     {"profiler_events", p.profilerEvents}});
  j["processes"] = procs;
  j["plugin"] = {{"path", r.pluginPath},
                 {"profiler_path", r.profilerPath},
                 {"tuner_loaded", r.tunerLoaded},
                 {"profiler_loaded", r.profilerLoaded},
                 {"same_instance", r.sameInstance},
                 {"tuner_version", r.tunerVersion},
                 {"profiler_version", r.profilerVersion},
                 {"event_mask", r.eventMask},
                 {"profiler_events", r.profilerEvents},
                 {"sync", optStr(r.syncInForce)},
                 {"policy", optStr(r.policyInForce)},
                 {"requested", {{settingName(&Settings::sync), {{"value", r.syncRequested}, {"from", r.syncFrom}}},
                                {settingName(&Settings::policy), {{"value", r.policyRequested}, {"from", r.policyFrom}}}}},
                 {"log", r.logPath.empty() ? nlohmann::json(nullptr) : nlohmann::json(r.logPath)},
                 {"log_lines_dropped", r.logLinesDropped},
                 {"note", r.pluginNote}};
  j["choices"] = choices;
  j["table_change_steps"] = r.tableChangeSteps;
  return j;
}

std::string reportTable(const SimResult& r) {
  std::string out;
  char buf[512];
  const std::string procs = r.procs > 1 ? " in " + std::to_string(r.procs) + " processes" : "";
  std::snprintf(buf, sizeof buf, "%s  [simulated: seed %llu, %d steps, %d ranks%s, %llu collectives per rank]\n",
                r.scenario.c_str(), static_cast<unsigned long long>(r.seed), r.steps, r.ranks, procs.c_str(),
                static_cast<unsigned long long>(r.collectivesPerRank));
  out += buf;
  out += "  mode            comm time (s)   vs default\n";
  const double d = modeTime(r, SimMode::NcclDefault);
  for (int m = 0; m < kNumSimModes; ++m) {
    const double t = r.modes[m].commTimeUs;
    std::snprintf(buf, sizeof buf, "  %-14s %14.3f   %+9.2f%%\n", simModeName(static_cast<SimMode>(m)), t * 1e-6,
                  d > 0 ? (t - d) / d * 100.0 : 0.0);
    out += buf;
  }
  std::snprintf(buf, sizeof buf, "  speedup vs default %.4fx, captured gain %.3f\n", speedupVsDefault(r),
                capturedGain(r));
  out += buf;
  if (r.faults.empty()) out += "  faults: none\n";
  for (const FaultOutcome& f : r.faults) {
    std::string adapted = f.onsetStep >= r.steps ? "after the last step" : "never within 5% of oracle";
    if (f.adaptedStep) adapted = "adapted at step " + std::to_string(*f.adaptedStep) + " (" +
                                 std::to_string(*f.adaptedStep - f.onsetStep) + " steps)";
    std::snprintf(buf, sizeof buf, "  fault #%d %-36s steps %d-%d: %s\n", f.index, f.label.c_str(), f.onsetStep,
                  f.endStep, adapted.c_str());
    out += buf;
  }
  std::snprintf(buf, sizeof buf, "  consistency: %llu collectives checked, %llu divergences\n",
                static_cast<unsigned long long>(r.collectivesChecked), static_cast<unsigned long long>(r.divergences));
  out += buf;
  std::snprintf(buf, sizeof buf,
                "  exploration: %.2f%% of a rank's collective time at most (%.3f s over all instances, %llu "
                "collectives)\n",
                explorationShare(r) * 100.0, r.explorationUs * 1e-6,
                static_cast<unsigned long long>(r.explorationCollectives));
  out += buf;
  if (r.probeCost.collectives > 0) {
    const ProbeCost& pc = r.probeCost;
    std::snprintf(buf, sizeof buf,
                  "  probe cost vs incumbent: time ratio p99 %.3f max %.3f; step inflation p99 %.3f max %.3f"
                  " (%llu steps)\n",
                  pc.ratioP99, pc.ratioMax, pc.stepInflationP99, pc.stepInflationMax,
                  static_cast<unsigned long long>(pc.steps));
    out += buf;
  }
  std::string adapt;
  for (const auto& [kind, n] : r.adaptations)
    if (n > 0) adapt += (adapt.empty() ? "" : ", ") + std::to_string(n) + " " + kind;
  const std::string sync = r.syncInForce ? *r.syncInForce : "?", policy = r.policyInForce ? *r.policyInForce : "?";
  out += "  plugin: sync " + sync + ", policy " + policy + "; adaptations: " + (adapt.empty() ? "none" : adapt) + "\n";
  if (!r.pluginNote.empty()) out += "  plugin note: " + r.pluginNote + "\n";
  return out;
}

}  // namespace wirewise::sim
