#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <map>
#include <optional>
#include <set>
#include <sstream>

#include <unistd.h>

#include <gtest/gtest.h>

#include "sim/driver/driver.h"
#include "tests/sim/driver/test_util.h"

namespace wirewise::sim {
namespace {

using testing::loadExample;
using testing::options;

// Sets (or, with nullptr, unsets) an environment variable for one scope.
class ScopedEnv {
 public:
  ScopedEnv(const char* name, const char* value) : name_(name) {
    if (const char* v = std::getenv(name)) old_ = v;
    if (value != nullptr) ::setenv(name, value, 1);
    else ::unsetenv(name);
  }
  ~ScopedEnv() {
    if (old_) ::setenv(name_.c_str(), old_->c_str(), 1);
    else ::unsetenv(name_.c_str());
  }

 private:
  std::string name_;
  std::optional<std::string> old_;
};

std::optional<std::string> env(const char* name) {
  const char* v = std::getenv(name);
  return v != nullptr ? std::optional<std::string>(v) : std::nullopt;
}

const char* const kExamples[] = {"1x8-h100-nvlink-flap.json", "2x8-h100-nic-degrade.json", "2x8-h200-healthy.json",
                                 "4x8-a100-contention.json"};

class EveryExample : public ::testing::TestWithParam<const char*> {};

TEST_P(EveryExample, RunsWithTheRealPluginAndFillsTheContract) {
  const Scenario sc = loadExample(GetParam());
  constexpr int kSteps = 24;
  const SimResult r = runSimulation(sc, options(kSteps));
  const nlohmann::json j = reportJson(r);

  for (const char* k : {"scenario", "simulated", "ranks", "collectives_per_rank", "modes", "speedup_vs_default",
                        "captured_gain", "faults", "consistency", "boundary_waits", "exploration_time_us",
                        "exploration_share", "adaptations"})
    EXPECT_TRUE(j.contains(k)) << k;
  for (const char* k : {"sync", "policy", "requested"}) EXPECT_TRUE(j["plugin"].contains(k)) << k;
  EXPECT_EQ(j["scenario"], sc.name);
  EXPECT_EQ(j["simulated"], true);
  EXPECT_EQ(j["ranks"], sc.cluster.nRanks());
  for (const char* m : {"nccl-default", "static-best", "oracle", "wirewise"}) {
    ASSERT_TRUE(j["modes"].contains(m)) << m;
    const auto& mode = j["modes"][m];
    ASSERT_EQ(mode["step_comm_time_us"].size(), static_cast<size_t>(kSteps));
    double sum = 0;
    for (double v : mode["step_comm_time_us"]) {
      EXPECT_GT(v, 0.0);
      sum += v;
    }
    EXPECT_NEAR(mode["comm_time_us"].get<double>(), sum, 1e-6 * sum);
  }
  ASSERT_EQ(j["faults"].size(), sc.faults.size());
  for (size_t i = 0; i < sc.faults.size(); ++i) {
    const auto& f = j["faults"][i];
    for (const char* k : {"index", "onset_step", "adapted_step", "latency_steps"}) EXPECT_TRUE(f.contains(k)) << k;
    EXPECT_EQ(f["index"], i);
    EXPECT_EQ(f["onset_step"], sc.faults[i].fromStep);
  }
  EXPECT_TRUE(j["consistency"].contains("collectives_checked"));
  EXPECT_EQ(j["consistency"]["divergences"], 0);
  EXPECT_TRUE(j["boundary_waits"].contains("count"));
  EXPECT_TRUE(j["boundary_waits"].contains("total_us"));

  // collectives_per_rank: every example puts every rank in every comm named by the workload.
  uint64_t perStep = 0;
  for (const StepColl& c : sc.workload.step) perStep += static_cast<uint64_t>(c.repeat);
  EXPECT_EQ(r.collectivesPerRank, perStep * kSteps);

  // The real plugin was loaded through the ABI, once, and heard about every collective.
  EXPECT_TRUE(r.tunerLoaded) << r.pluginNote;
  EXPECT_TRUE(r.profilerLoaded) << r.pluginNote;
  EXPECT_TRUE(r.sameInstance);
  EXPECT_EQ(r.tunerVersion, 5);
  EXPECT_EQ(r.profilerVersion, 5);
  EXPECT_NE(r.eventMask, 0);
  EXPECT_GT(r.profilerEvents, 2 * r.collectivesChecked);
  EXPECT_TRUE(r.pluginNote.empty()) << r.pluginNote;

  // The oracle is never beaten: per step it takes the best choice for every collective under the same noise.
  for (int s = 0; s < kSteps; ++s)
    for (int m = 0; m < kNumSimModes; ++m)
      EXPECT_LE(r.modes[2].stepCommUs[s], r.modes[m].stepCommUs[s] * (1 + 1e-9)) << "step " << s << " mode " << m;
}

INSTANTIATE_TEST_SUITE_P(Scenarios, EveryExample, ::testing::ValuesIn(kExamples));

TEST(Driver, SameSeedGivesTheSameReport) {
  const Scenario sc = loadExample("2x8-h100-nic-degrade.json");
  nlohmann::json a = reportJson(runSimulation(sc, options(20)));
  nlohmann::json b = reportJson(runSimulation(sc, options(20)));
  a.erase("run_time_s");
  b.erase("run_time_s");
  EXPECT_EQ(a.dump(), b.dump());
}

TEST(Driver, DifferentSeedsGiveDifferentNoise) {
  const Scenario sc = loadExample("2x8-h200-healthy.json");
  SimOptions o1 = options(20), o2 = options(20);
  o1.seed = 1;
  o2.seed = 2;
  const SimResult a = runSimulation(sc, o1), b = runSimulation(sc, o2);
  EXPECT_NE(a.modes[0].stepCommUs, b.modes[0].stepCommUs);
  EXPECT_NE(a.modes[0].commTimeUs, b.modes[0].commTimeUs);
}

class NoiseFree : public ::testing::TestWithParam<const char*> {};

TEST_P(NoiseFree, OracleNoWorseThanStaticBestNoWorseThanDefault) {
  Scenario sc = loadExample(GetParam());
  sc.noise = Noise{};
  const SimResult r = runSimulation(sc, options(sc.workload.steps > 200 ? 200 : sc.workload.steps));
  const double def = r.modes[0].commTimeUs, stat = r.modes[1].commTimeUs, ora = r.modes[2].commTimeUs;
  EXPECT_LE(ora, stat * (1 + 1e-9));
  EXPECT_LE(stat, def * (1 + 1e-9));
  EXPECT_GT(ora, 0);
}

INSTANTIATE_TEST_SUITE_P(Scenarios, NoiseFree, ::testing::ValuesIn(kExamples));

TEST(Driver, DivergentPluginIsCaught) {
  const Scenario sc = loadExample("2x8-h100-nic-degrade.json");
  const SimResult r = runSimulation(sc, options(3, WW_FAKE_DIVERGENT));
  EXPECT_TRUE(r.tunerLoaded) << r.pluginNote;
  EXPECT_GT(r.collectivesChecked, 0u);
  // Every collective has ranks asking for 1 and 2 channels.
  EXPECT_EQ(r.divergences, r.collectivesChecked);
  EXPECT_GT(reportJson(r)["consistency"]["divergences"].get<uint64_t>(), 0u);
}

TEST(Driver, MissingPluginFallsBackToNcclAndSharesTheNoise) {
  const Scenario sc = loadExample("1x8-h100-nvlink-flap.json");
  const SimResult r = runSimulation(sc, options(5, "/nonexistent/libnccl-tuner-none.so"));
  EXPECT_FALSE(r.tunerLoaded);
  EXPECT_FALSE(r.pluginNote.empty());
  // NCCL's own choices under the same (jittered) noise: identical to the bit.
  EXPECT_EQ(r.modes[3].stepCommUs, r.modes[0].stepCommUs);
  EXPECT_NE(r.modes[0].stepCommUs[0], r.modes[0].stepCommUs[1]);
  EXPECT_EQ(r.divergences, 0u);
}

TEST(Driver, AdaptedStepFollowsItsDefinition) {
  const Scenario sc = loadExample("1x8-h100-nvlink-flap.json");
  const SimResult r = runSimulation(sc, options(160));
  ASSERT_EQ(r.faults.size(), 1u);
  const auto& ww = r.modes[3].stepCommUs;
  const auto& ora = r.modes[2].stepCommUs;
  auto within = [&](int s) { return ww[s] <= 1.05 * ora[s]; };
  auto windowOk = [&](int s) {
    for (int k = s; k < s + 10; ++k)
      if (k >= r.steps || !within(k)) return false;
    return true;
  };
  std::optional<int> expect;
  for (int s = r.faults[0].onsetStep; s < r.steps && !expect; ++s)
    if (windowOk(s)) expect = s;
  EXPECT_EQ(r.faults[0].adaptedStep, expect);
  const auto j = reportJson(r)["faults"][0];
  if (expect) {
    EXPECT_EQ(j["latency_steps"], *expect - r.faults[0].onsetStep);
  } else {
    EXPECT_TRUE(j["adapted_step"].is_null());
    EXPECT_TRUE(j["latency_steps"].is_null());
  }
}

TEST(Driver, PluginLogShowsEveryRankAndEveryCollective) {
  const Scenario sc = loadExample("2x8-h100-nic-degrade.json");
  SimOptions o = options(5);
  o.logPath = ::testing::TempDir() + "ww_driver_log.jsonl";
  std::remove(o.logPath.c_str());
  const SimResult r = runSimulation(sc, o);
  std::ifstream in(o.logPath);
  ASSERT_TRUE(in.good());
  int tunerInits = 0, profFinal = 0;
  std::string line;
  while (std::getline(in, line)) {
    const auto ev = nlohmann::json::parse(line);
    if (ev["event"] == "comm_init" && ev["face"] == "tuner") ++tunerInits;
    if (ev["event"] == "comm_finalize" && ev["face"] == "profiler") {
      ++profFinal;
      // Each rank's sink saw a Coll event for every collective its comm ran.
      EXPECT_GT(ev["collectives"].get<uint64_t>(), 0u);
    }
  }
  // world (16 ranks) + two tp instances (8 ranks each).
  EXPECT_EQ(tunerInits, 32);
  EXPECT_EQ(profFinal, 32);
  EXPECT_GT(r.profilerEvents, 0u);
}

TEST(Driver, UnknownCommIsAnError) {
  Scenario sc = loadExample("2x8-h200-healthy.json");
  sc.workload.step[0].comm = "nope";
  EXPECT_THROW(runSimulation(sc, options(2)), std::runtime_error);
}

TEST(Driver, EmbeddedDefaultIsTheShippedScenario) {
  std::ifstream in(std::string(WW_SCENARIO_DIR) + "/2x8-h100-nic-degrade.json", std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  EXPECT_EQ(ss.str(), std::string(defaultScenarioJson()));
  std::string error;
  EXPECT_TRUE(parseScenario(defaultScenarioJson(), &error).has_value()) << error;
}

TEST(Report, CapturedGainRules) {
  SimResult r;
  r.modes[0].commTimeUs = 100;
  r.modes[2].commTimeUs = 80;
  r.modes[3].commTimeUs = 90;
  EXPECT_DOUBLE_EQ(capturedGain(r), 0.5);
  EXPECT_DOUBLE_EQ(speedupVsDefault(r), 100.0 / 90.0);
  r.modes[2].commTimeUs = 99.95;  // default equals oracle within 0.1%
  EXPECT_DOUBLE_EQ(capturedGain(r), 1.0);
  r.modes[2].commTimeUs = 99.85;
  EXPECT_NE(capturedGain(r), 1.0);
}

TEST(Report, TableIsLabelledSimulated) {
  const Scenario sc = loadExample("2x8-h200-healthy.json");
  const std::string t = reportTable(runSimulation(sc, options(3)));
  EXPECT_NE(t.find("simulated"), std::string::npos);
  EXPECT_NE(t.find("exploration"), std::string::npos);
  for (const char* m : {"nccl-default", "static-best", "oracle", "wirewise"}) EXPECT_NE(t.find(m), std::string::npos);
}

TEST(Driver, StaticPolicyLeavesNcclsChoices) {
  ScopedEnv config("WIREWISE_CONFIG", nullptr);
  const Scenario sc = loadExample("2x8-h100-nic-degrade.json");
  SimOptions o = options(40);
  o.policy = "static";
  const SimResult r = runSimulation(sc, o);
  EXPECT_EQ(r.policyFrom, "option");
  ASSERT_TRUE(r.policyInForce);
  EXPECT_EQ(*r.policyInForce, "static");
  // No WIREWISE_CONFIG: the neutral table keeps NCCL's choice everywhere, under the same noise.
  EXPECT_EQ(r.modes[3].stepCommUs, r.modes[0].stepCommUs);
  EXPECT_TRUE(r.tableChangeSteps.empty());
  EXPECT_EQ(r.explorationUs, 0.0);
  EXPECT_EQ(r.explorationCollectives, 0u);
  EXPECT_EQ(r.probeCost.collectives, 0u);
  EXPECT_TRUE(reportJson(r)["probe_cost"]["ratio_max"].is_null());
  for (const auto& [kind, n] : r.adaptations) EXPECT_EQ(n, 0u) << kind;
  EXPECT_EQ(r.divergences, 0u);
}

TEST(Driver, SyncAndPolicyComeFromTheOptionThenTheEnvironmentThenTheDefault) {
  ScopedEnv sync("WIREWISE_SYNC", nullptr), policy("WIREWISE_POLICY", nullptr), log("WIREWISE_LOG", "keep-me"),
      coord("WIREWISE_COORDINATOR", nullptr), key("WIREWISE_JOB_KEY", nullptr);
  const Scenario sc = loadExample("2x8-h200-healthy.json");
  SimResult r = runSimulation(sc, options(3));
  EXPECT_EQ(r.syncRequested, "deterministic");
  EXPECT_EQ(r.syncFrom, "driver default");
  EXPECT_EQ(r.policyRequested, "adaptive");
  EXPECT_EQ(r.policyFrom, "driver default");
  ASSERT_TRUE(r.syncInForce && r.policyInForce) << "the plugin's plugin_start line was not read back";
  EXPECT_EQ(*r.syncInForce, "deterministic");
  const auto j = reportJson(r)["plugin"];
  EXPECT_EQ(j["sync"], "deterministic");
  EXPECT_EQ(j["requested"]["WIREWISE_POLICY"]["value"], "adaptive");
  EXPECT_EQ(j["requested"]["WIREWISE_POLICY"]["from"], "driver default");
  EXPECT_TRUE(j["log"].is_null());
  // The run leaves the environment as it found it.
  EXPECT_EQ(env("WIREWISE_SYNC"), std::nullopt);
  EXPECT_EQ(env("WIREWISE_POLICY"), std::nullopt);
  EXPECT_EQ(env("WIREWISE_LOG"), std::optional<std::string>("keep-me"));
  EXPECT_EQ(env("WIREWISE_COORDINATOR"), std::nullopt);
  EXPECT_EQ(env("WIREWISE_JOB_KEY"), std::nullopt);

  ::setenv("WIREWISE_SYNC", "on", 1);
  ::setenv("WIREWISE_POLICY", "static", 1);
  r = runSimulation(sc, options(3));
  EXPECT_EQ(r.syncFrom, "environment");
  EXPECT_EQ(r.policyFrom, "environment");
  ASSERT_TRUE(r.syncInForce && r.policyInForce);
  EXPECT_EQ(*r.syncInForce, "on");
  EXPECT_EQ(*r.policyInForce, "static");

  SimOptions o = options(3);
  o.sync = "deterministic";
  o.policy = "random-test";
  r = runSimulation(sc, o);
  EXPECT_EQ(r.syncFrom, "option");
  EXPECT_EQ(r.policyFrom, "option");
  ASSERT_TRUE(r.syncInForce && r.policyInForce);
  EXPECT_EQ(*r.syncInForce, "deterministic");
  EXPECT_EQ(*r.policyInForce, "random-test");
  EXPECT_EQ(env("WIREWISE_POLICY"), std::optional<std::string>("static"));
  EXPECT_TRUE(r.pluginNote.empty()) << r.pluginNote;

  // A value the plugin does not take is reported, with what it ran instead (its default).
  o.policy = "no-such-policy";
  r = runSimulation(sc, o);
  ASSERT_TRUE(r.policyInForce);
  EXPECT_EQ(*r.policyInForce, "adaptive");
  EXPECT_NE(r.pluginNote.find("WIREWISE_POLICY=no-such-policy not taken (in force: adaptive)"), std::string::npos)
      << r.pluginNote;
}

// End to end: the simulator stamps each channel's KernelCh stop from the truth model, the plugin's sink
// names the channels on the degraded NIC, the reports carry them, and the coordinator's policy says which
// channels were slow and what the chosen count does about them. NIC 3 of node 1 at a quarter from step 40
// (after calibration): 16 channels put channels 3 and 11 on it.
TEST(Driver, SlowChannelsOnADegradedNicAreNamedByThePolicy) {
  Scenario sc = loadExample("2x8-h100-nic-degrade.json");
  sc.faults.resize(1);
  sc.faults[0].fromStep = 40;
  SimOptions o = options(120);
  o.logPath = ::testing::TempDir() + "ww_driver_slow_channels.jsonl";
  std::remove(o.logPath.c_str());
  const SimResult r = runSimulation(sc, o);
  EXPECT_EQ(r.divergences, 0u);
  std::ifstream in(o.logPath);
  ASSERT_TRUE(in.good());
  std::string line, named;
  while (std::getline(in, line)) {
    const auto ev = nlohmann::json::parse(line);
    if (ev["event"] != "adapt") continue;
    const std::string reason = ev.value("reason", "");
    if (reason.find("channels 3 and 11 ran") != std::string::npos) named = reason;
  }
  EXPECT_FALSE(named.empty()) << "no decision named the degraded NIC's channels";
  std::printf("%s\n", named.c_str());
}

TEST(Driver, ExplorationAgreesWithTheCoordinatorsProbes) {
  const Scenario sc = loadExample("2x8-h100-nic-degrade.json");
  SimOptions o = options(200);
  o.logPath = ::testing::TempDir() + "ww_driver_explore.jsonl";
  std::remove(o.logPath.c_str());
  const SimResult r = runSimulation(sc, o);
  EXPECT_EQ(reportJson(r)["plugin"]["log"], o.logPath);

  // Each instance's collectives in order, rebuilt from the scenario: seq s is entry (s mod per-step count).
  std::map<uint64_t, std::vector<std::pair<std::string, uint64_t>>> perStep;
  for (const CommSpec& c : sc.comms) {
    auto& seqs = perStep[commIdFor(c.name, c.instance)];
    for (const StepColl& e : sc.workload.step)
      if (e.comm == c.name)
        for (int k = 0; k < e.repeat; ++k) seqs.emplace_back(std::string(collName(e.coll)), e.bytes);
  }
  std::set<std::pair<uint64_t, uint64_t>> probed;
  std::ifstream in(o.logPath);
  ASSERT_TRUE(in.good());
  std::string line;
  int probeVerdicts = 0;
  while (std::getline(in, line)) {
    const auto ev = nlohmann::json::parse(line);
    if (ev["event"] != "table" || ev.value("source", "") != "coordinator" || !ev.contains("probes")) continue;
    const uint64_t comm = std::stoull(ev["comm"].get<std::string>().substr(2), nullptr, 16);
    ASSERT_EQ(perStep.count(comm), 1u) << "a probe for an unknown communicator: " << line;
    const auto& seqs = perStep[comm];
    const uint64_t total = seqs.size() * static_cast<uint64_t>(r.steps);
    const uint64_t from = ev["boundary"].get<uint64_t>();
    const uint64_t to = ev["next"].is_null() ? total : std::min(ev["next"].get<uint64_t>(), total);
    probeVerdicts += ev["probes"].empty() ? 0 : 1;
    for (uint64_t q = from; q < to; ++q) {
      const auto& [coll, bytes] = seqs[q % seqs.size()];
      for (const auto& p : ev["probes"])
        if (p["coll"] == coll && p["min_bytes"].get<uint64_t>() <= bytes && bytes <= p["max_bytes"].get<uint64_t>())
          probed.insert({comm, q});
    }
  }
  EXPECT_EQ(r.explorationCollectives, probed.size());
  EXPECT_EQ(r.explorationUs > 0, !probed.empty());
  EXPECT_LE(r.explorationUs, r.modes[3].commTimeUs);
  EXPECT_NEAR(reportJson(r)["exploration_over_comm_time"].get<double>(), r.explorationUs / r.modes[3].commTimeUs,
              1e-12);
  // exploration_share is per rank (rankExplorationShare, tested on its own in exploration_test).
  EXPECT_EQ(reportJson(r)["exploration_share"].get<double>(), r.explorationRankShare);
  EXPECT_EQ(r.explorationUs > 0, r.explorationRankShare > 0);
  EXPECT_LT(r.explorationRankShare, 1.0);
  // Every explored collective is priced against its incumbent (probe_cost.h).
  EXPECT_EQ(r.probeCost.collectives, r.explorationCollectives);
  EXPECT_EQ(r.probeCost.steps > 0, r.explorationCollectives > 0);
  EXPECT_LE(r.probeCost.steps, static_cast<uint64_t>(r.steps));
  if (r.probeCost.collectives > 0) {
    EXPECT_GT(r.probeCost.ratioMax, 0.0);
    EXPECT_LE(r.probeCost.ratioP99, r.probeCost.ratioMax);
    EXPECT_LE(r.probeCost.stepInflationP99, r.probeCost.stepInflationMax);
    std::printf("probe cost: ratio p99 %.3f max %.3f, step inflation p99 %.4f max %.4f over %llu steps\n",
                r.probeCost.ratioP99, r.probeCost.ratioMax, r.probeCost.stepInflationP99,
                r.probeCost.stepInflationMax, static_cast<unsigned long long>(r.probeCost.steps));
  }
  // The adaptive policy calibrates by probing; other policies do not probe.
  if (r.policyInForce == std::optional<std::string>("adaptive")) {
    EXPECT_GT(probeVerdicts, 0);
    EXPECT_GT(r.explorationCollectives, 0u);
  }
}

TEST(Driver, ALogFileSharedByRunsCountsEachRunOnce) {
  const Scenario sc = loadExample("2x8-h200-healthy.json");
  SimOptions o = options(60);
  o.logPath = ::testing::TempDir() + "ww_driver_shared_%p.jsonl";
  const std::string file = ::testing::TempDir() + "ww_driver_shared_" + std::to_string(::getpid()) + ".jsonl";
  std::remove(file.c_str());
  const SimResult a = runSimulation(sc, o);
  std::ifstream first(file);
  ASSERT_TRUE(first.good()) << "%p was not expanded as the plugin expands it";
  const SimResult b = runSimulation(sc, o);  // appends to the same file
  EXPECT_EQ(b.explorationCollectives, a.explorationCollectives);
  EXPECT_EQ(b.explorationUs, a.explorationUs);
  EXPECT_EQ(b.adaptations, a.adaptations);
  if (a.policyInForce == std::optional<std::string>("adaptive")) {
    // Calibration happens early: the run has events to double-count if earlier lines were read again.
    EXPECT_GT(a.explorationCollectives, 0u);
    EXPECT_GT(a.adaptations.at("calibrated"), 0u);
  }
  std::remove(file.c_str());
}

}  // namespace
}  // namespace wirewise::sim

namespace wirewise::sim {
namespace {

// End to end: the default scenario's third fault (network latency +20 µs per hop, steps 520-560) is seen
// by no collector (the simulator has none) and changes no bandwidth, so only the shape of the change across
// sizes can name it. The world comm's all-reduce runs at 4 KiB and 25 MiB: an adapt event (alarm, or the
// end of its episode) during that fault must name a latency rise (cause.h), and none may call it a
// bandwidth loss.
TEST(Driver, TheLatencyFaultIsExplainedAsLatency) {
  const Scenario sc = loadExample("2x8-h100-nic-degrade.json");
  ASSERT_EQ(sc.faults.size(), 3u);
  const Fault& f = sc.faults[2];
  ASSERT_EQ(f.kind, FaultKind::Latency);
  int perStep = 0;  // the world comm's collectives per step: its boundaries count them
  for (const StepColl& c : sc.workload.step) perStep += c.comm == "world" ? c.repeat : 0;
  SimOptions o = options(sc.workload.steps);
  o.logPath = ::testing::TempDir() + "ww_driver_latency_cause.jsonl";
  std::remove(o.logPath.c_str());
  const SimResult r = runSimulation(sc, o);
  EXPECT_EQ(r.divergences, 0u);
  std::ifstream in(o.logPath);
  ASSERT_TRUE(in.good());
  std::string line;
  int alarms = 0, latency = 0;
  while (std::getline(in, line)) {
    const auto ev = nlohmann::json::parse(line);
    const std::string kind = ev.value("kind", "");
    if (ev["event"] != "adapt" || ev.value("coll", "") != "allreduce" || kind == "calibrated" || kind == "deferred")
      continue;
    const uint64_t at = ev.value("boundary", uint64_t{0});
    // From the fault's start to two steps after it (report lag and detection delay).
    if (at < static_cast<uint64_t>(f.fromStep) * perStep || at >= static_cast<uint64_t>(f.toStep + 2) * perStep)
      continue;
    ++alarms;
    const std::string reason = ev.value("reason", "");
    std::printf("verdict %s %s: %s\n", ev["index"].dump().c_str(), kind.c_str(), reason.c_str());
    EXPECT_EQ(reason.find("bandwidth loss"), std::string::npos) << reason;
    if (ev.contains("cause") && ev["cause"].value("kind", "") == "latency" &&
        reason.find("a latency rise, not bandwidth") != std::string::npos)
      ++latency;
  }
  EXPECT_GT(alarms, 0) << "no all-reduce adapt event during the latency fault";
  EXPECT_GT(latency, 0) << "no adapt event during the latency fault named a latency rise";
}

}  // namespace
}  // namespace wirewise::sim
