// The simulator's driver: runs a scenario in four modes on the same noise and reports what each cost.
//
//   nccl-default  NCCL's choice from the cost table it froze at init (no plugin)
//   static-best   per (communicator, collective, size bucket) the one fixed choice that is best over the run
//   oracle        per collective the best choice under the true link state of that step
//   wirewise      the real plugin library, loaded and driven through NCCL's ABI for every simulated rank
//
// Only the wirewise mode touches the plugin; the others are computed from the model. Everything is a pure
// function of (scenario, seed, plugin): the same inputs give the same report. See docs/simulator.md.
#pragma once

#include <array>
#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "sim/model/scenario.h"

namespace wirewise::sim {

enum class SimMode : int { NcclDefault = 0, StaticBest = 1, Oracle = 2, Wirewise = 3 };
inline constexpr int kNumSimModes = 4;
const char* simModeName(SimMode m);  // "nccl-default", ...

struct SimOptions {
  std::string pluginPath;    // the tuner library (NCCL_TUNER_PLUGIN); required
  std::string profilerPath;  // "" = libnccl-profiler-wirewise.so next to pluginPath, else pluginPath
  // WIREWISE_LOG for the run (%h and %p expand as in the plugin). "", "none" or "off": a temporary file,
  // removed after the run (the driver reads the log back for the exploration accounting).
  std::string logPath;
  // WIREWISE_SYNC and WIREWISE_POLICY for the run. Unset: the environment's value if it has one, else
  // "deterministic" and "adaptive" (plugin_env.h).
  std::optional<std::string> sync, policy;
  std::optional<uint64_t> seed;  // overrides the scenario's
  std::optional<int> steps;      // overrides workload.steps (faults keep their steps)
  // Real processes the ranks are spread over, 1..ranks: process p plays global ranks [p*R/N, (p+1)*R/N) and
  // all of them meet at one coordinator over TCP. > 1 forks: call from a single-threaded process.
  int procs = 1;
  // Called now and then with (steps done, steps total); may be empty.
  std::function<void(int, int)> progress;
};

struct ModeResult {
  double commTimeUs = 0;
  std::vector<double> stepCommUs;
  // "comm coll bytes" -> "algo/proto/channels" -> collectives run with it (on member 0 of each instance).
  std::map<std::string, std::map<std::string, uint64_t>> choices;
};

struct FaultOutcome {
  int index = 0;
  int onsetStep = 0;
  int endStep = 0;                  // exclusive; steps of the run when open-ended
  std::optional<int> adaptedStep;   // first step >= onset from which wirewise stays within 5% of oracle, 10 steps
  std::string label;                // "degrade nic node 1 #3 x0.25"
};

// What the probes cost against their incumbents (probe_cost.h has the definitions). Ratios and inflations are
// unset (0) when nothing was explored; the report then gives null.
struct ProbeCost {
  uint64_t collectives = 0;  // exploration collectives priced
  uint64_t steps = 0;        // steps with at least one of them
  double ratioP99 = 0, ratioMax = 0;                  // probe's true time / its incumbent's
  double stepInflationP99 = 0, stepInflationMax = 0;  // step comm time / the same step without the probes
};

// One of the processes that played the ranks (SimOptions::procs), as it reported itself.
struct ProcessOutcome {
  int firstRank = 0, ranks = 0;  // global ranks [firstRank, firstRank + ranks)
  int tunerContexts = 0;         // one per (communicator instance, rank) it played
  uint64_t profilerEvents = 0;
};

struct SimResult {
  std::string scenario;
  uint64_t seed = 0;
  int steps = 0;
  int ranks = 0;
  int procs = 1;
  std::vector<ProcessOutcome> processes;  // index = process; 0 is the caller
  uint64_t collectivesPerRank = 0;  // the most any rank issues
  double computeUs = 0;
  std::array<ModeResult, kNumSimModes> modes;
  std::vector<FaultOutcome> faults;
  std::vector<Fault> faultSpecs;      // as in the scenario, for plots
  uint64_t collectivesChecked = 0;    // collective instances whose ranks were compared
  uint64_t divergences = 0;           // of those, how many had ranks choosing differently
  uint64_t boundaryWaits = 0;         // waits cost no simulated time: always 0
  double boundaryWaitUs = 0;
  // Wirewise collectives run under a probe verdict (exploration.h): their summed span, and how many; and
  // the largest share of one rank's collective time they took (rankExplorationShare: exploration_share).
  double explorationUs = 0;
  uint64_t explorationCollectives = 0;
  double explorationRankShare = 0;
  ProbeCost probeCost;
  std::map<std::string, uint64_t> adaptations;  // the coordinator's "adapt" events by kind
  std::vector<int> tableChangeSteps;  // steps at which wirewise's decisions differ from the step before
  // Provenance.
  double runTimeS = 0;
  std::string pluginPath, profilerPath;
  bool tunerLoaded = false, profilerLoaded = false, sameInstance = false;
  int tunerVersion = 0, profilerVersion = 0, eventMask = 0;
  uint64_t profilerEvents = 0;  // all processes
  // WIREWISE_SYNC / WIREWISE_POLICY: what the plugin reported in force (its plugin_start line; unset when it
  // wrote none), and what the driver asked for and why ("option", "environment", "driver default").
  std::optional<std::string> syncInForce, policyInForce;
  std::string syncRequested, policyRequested, syncFrom, policyFrom;
  std::string logPath;            // the user's --log; "" when the log was temporary
  uint64_t logLinesDropped = 0;   // the plugin's log_dropped counts: the accounting may miss events
  std::string pluginNote;  // why the tuner or profiler did not load, if so; settings not taken; log losses
};

// Runs the scenario. Throws std::runtime_error for an unusable scenario (e.g. a comm that does not exist), a
// procs outside 1..ranks, or a process of the run that fails or dies.
// A plugin that fails to load is not an error: wirewise then equals nccl-default and pluginNote says why.
SimResult runSimulation(const Scenario& scenario, const SimOptions& options);

// The report (shared/scenarios/README.md's contract plus documented extras).
nlohmann::json reportJson(const SimResult& r);
// speedup_vs_default and captured_gain as the contract defines them.
double speedupVsDefault(const SimResult& r);
double capturedGain(const SimResult& r);
// exploration_time_us / wirewise comm time (0 when wirewise took no time).
double explorationShare(const SimResult& r);
// The human table for stdout.
std::string reportTable(const SimResult& r);
// A self-contained SVG: per-step comm time of each mode, fault windows, wirewise's table changes.
std::string plotSvg(const SimResult& r);

// The embedded default scenario (scenarios/2x8-h100-nic-degrade.json at build time).
const char* defaultScenarioJson();

// Deterministic 64-bit id of a communicator instance (FNV-1a of "name#instance"): the commId every rank gets.
uint64_t commIdFor(const std::string& name, int instance);

}  // namespace wirewise::sim
