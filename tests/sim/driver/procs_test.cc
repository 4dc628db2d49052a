// SimOptions::procs: the ranks spread over real processes that meet at one coordinator over TCP give the
// same report as one process, and every process really plays its ranks through the plugin.
#include <dirent.h>
#include <signal.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <fstream>
#include <map>
#include <set>
#include <stdexcept>
#include <string>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "sim/driver/driver.h"
#include "tests/sim/driver/test_util.h"

namespace wirewise::sim {
namespace {

using ::testing::HasSubstr;
using testing::loadExample;
using testing::options;

// The default scenario, 120 steps, its NIC degrade moved from step 150 to 40: inside the run, the adaptive
// policy probes, alarms and commits, so the processes must agree on more than calibration.
Scenario shortScenario() {
  Scenario sc = loadExample("2x8-h100-nic-degrade.json");
  sc.faults.at(0).fromStep = 40;
  return sc;
}
constexpr int kSteps = 120;

struct ProcsRun {
  SimResult result;
  double wallS = 0;
  std::map<long, int> verdictsByPid;  // "verdict" events (once per process per change), by writer
  std::map<long, int> tunerInitsByPid;
  std::set<long> coordinatorPids;  // writers of the coordinator's "table" events
};

ProcsRun runWith(int procs) {
  SimOptions o = options(kSteps);
  o.procs = procs;
  o.logPath = ::testing::TempDir() + "ww_procs_" + std::to_string(procs) + ".jsonl";
  std::remove(o.logPath.c_str());
  ProcsRun r;
  const auto t0 = std::chrono::steady_clock::now();
  r.result = runSimulation(shortScenario(), o);
  r.wallS = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  std::ifstream in(o.logPath);
  EXPECT_TRUE(in.good()) << o.logPath;
  std::string line;
  while (std::getline(in, line)) {
    const auto ev = nlohmann::json::parse(line, nullptr, false);
    if (!ev.is_object() || !ev.contains("pid")) {
      ADD_FAILURE() << "a broken log line: " << line;
      continue;
    }
    const long pid = ev["pid"].get<long>();
    if (ev.value("event", "") == "verdict") ++r.verdictsByPid[pid];
    if (ev.value("event", "") == "comm_init" && ev.value("face", "") == "tuner") ++r.tunerInitsByPid[pid];
    if (ev.value("event", "") == "table" && ev.value("source", "") == "coordinator") r.coordinatorPids.insert(pid);
  }
  std::remove(o.logPath.c_str());
  return r;
}

// The report without what may differ between process counts: wall time, the process fields, the log path.
std::string comparable(const SimResult& r) {
  nlohmann::json j = reportJson(r);
  j.erase("run_time_s");
  j.erase("procs");
  j.erase("processes");
  j["plugin"].erase("log");
  return j.dump(1);
}

TEST(Procs, SameReportInOneTwoAndFourProcesses) {
  const ProcsRun one = runWith(1);
  const SimResult& a = one.result;
  ASSERT_TRUE(a.tunerLoaded && a.profilerLoaded) << a.pluginNote;
  EXPECT_EQ(a.procs, 1);
  ASSERT_EQ(a.processes.size(), 1u);
  EXPECT_EQ(a.processes[0].ranks, 16);
  // The run is worth comparing: the policy explored and acted on the fault.
  EXPECT_GT(a.explorationCollectives, 0u);
  EXPECT_GT(a.adaptations.at("commit"), 0u);
  EXPECT_EQ(one.verdictsByPid.size(), 1u);
  std::printf("procs 1: %.2f s\n", one.wallS);
  RecordProperty("wall_s_procs_1", std::to_string(one.wallS));

  for (int procs : {2, 4}) {
    SCOPED_TRACE("procs " + std::to_string(procs));
    const ProcsRun many = runWith(procs);
    const SimResult& b = many.result;
    std::printf("procs %d: %.2f s\n", procs, many.wallS);
    RecordProperty("wall_s_procs_" + std::to_string(procs), std::to_string(many.wallS));
    EXPECT_TRUE(b.pluginNote.empty()) << b.pluginNote;
    EXPECT_EQ(b.divergences, 0u);
    EXPECT_EQ(b.collectivesChecked, a.collectivesChecked);
    EXPECT_EQ(b.modes[3].commTimeUs, a.modes[3].commTimeUs);
    EXPECT_EQ(b.modes[3].stepCommUs, a.modes[3].stepCommUs);
    EXPECT_EQ(b.modes[3].choices, a.modes[3].choices);
    EXPECT_EQ(b.explorationUs, a.explorationUs);
    EXPECT_EQ(b.explorationCollectives, a.explorationCollectives);
    EXPECT_EQ(b.adaptations, a.adaptations);
    EXPECT_EQ(b.tableChangeSteps, a.tableChangeSteps);
    EXPECT_EQ(b.syncInForce, a.syncInForce);
    EXPECT_EQ(b.policyInForce, a.policyInForce);
    EXPECT_EQ(b.profilerEvents, a.profilerEvents);
    EXPECT_EQ(comparable(b), comparable(a));

    // Each process played its block of ranks through its own copy of the plugin...
    EXPECT_EQ(b.procs, procs);
    ASSERT_EQ(b.processes.size(), static_cast<size_t>(procs));
    int contexts = 0;
    for (int p = 0; p < procs; ++p) {
      EXPECT_EQ(b.processes[p].firstRank, p * 16 / procs);
      EXPECT_EQ(b.processes[p].ranks, 16 / procs);
      EXPECT_GT(b.processes[p].tunerContexts, 0);
      EXPECT_GT(b.processes[p].profilerEvents, 0u);
      contexts += b.processes[p].tunerContexts;
    }
    EXPECT_EQ(contexts, a.processes[0].tunerContexts);
    // ...as the log shows: one writer per process took verdicts and initialised tuners, all 32 together
    // (world's 16 ranks and two tp instances of 8), and one of them, the caller, hosted the coordinator.
    EXPECT_EQ(many.verdictsByPid.size(), static_cast<size_t>(procs));
    int inits = 0;
    for (const auto& [pid, n] : many.tunerInitsByPid) inits += n;
    EXPECT_EQ(many.tunerInitsByPid.size(), static_cast<size_t>(procs));
    EXPECT_EQ(inits, 32);
    EXPECT_EQ(many.coordinatorPids, (std::set<long>{static_cast<long>(::getpid())}));
    EXPECT_EQ(many.verdictsByPid.count(static_cast<long>(::getpid())), 1u);
  }
}

TEST(Procs, OutsideOneToRanksIsAnError) {
  const Scenario sc = loadExample("2x8-h200-healthy.json");
  for (int procs : {0, -1, 17}) {
    SimOptions o = options(2);
    o.procs = procs;
    try {
      runSimulation(sc, o);
      ADD_FAILURE() << "procs " << procs << " ran";
    } catch (const std::runtime_error& e) {
      EXPECT_THAT(e.what(), HasSubstr("procs must be between 1 and the scenario's 16 ranks"));
    }
  }
  SimOptions o = options(2);
  o.procs = 16;  // one rank each
  const SimResult r = runSimulation(sc, o);
  EXPECT_EQ(r.processes.size(), 16u);
  EXPECT_EQ(r.divergences, 0u);
  EXPECT_TRUE(r.pluginNote.empty()) << r.pluginNote;
}

std::vector<pid_t> childrenOf(pid_t parent) {
  std::vector<pid_t> out;
  DIR* d = ::opendir("/proc");
  if (d == nullptr) return out;
  while (const dirent* e = ::readdir(d)) {
    const pid_t pid = static_cast<pid_t>(std::atol(e->d_name));
    if (pid <= 0) continue;
    std::ifstream stat("/proc/" + std::string(e->d_name) + "/stat");
    std::string s;
    std::getline(stat, s);
    // pid (comm) state ppid ...: comm may hold spaces, so read after the last ')'.
    const size_t close = s.rfind(')');
    if (close == std::string::npos) continue;
    char state = 0;
    long ppid = 0;
    if (std::sscanf(s.c_str() + close + 1, " %c %ld", &state, &ppid) == 2 && ppid == parent) out.push_back(pid);
  }
  ::closedir(d);
  return out;
}

TEST(Procs, ADeadProcessFailsTheRunWithItsName) {
  const Scenario sc = loadExample("2x8-h100-nic-degrade.json");
  SimOptions o = options(60);
  o.procs = 4;
  pid_t victim = 0;
  o.progress = [&](int done, int) {
    if (done != 5 || victim != 0) return;
    const std::vector<pid_t> kids = childrenOf(::getpid());
    ASSERT_EQ(kids.size(), 3u);
    victim = kids[1];
    ::kill(victim, SIGKILL);
  };
  const auto t0 = std::chrono::steady_clock::now();
  try {
    runSimulation(sc, o);
    ADD_FAILURE() << "the run survived a dead process";
  } catch (const std::runtime_error& e) {
    EXPECT_THAT(e.what(), HasSubstr("(pid " + std::to_string(victim) + ") was killed by signal 9"));
  }
  EXPECT_LT(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count(), 30.0);
  EXPECT_NE(victim, 0);
  // Nothing left behind: the other children were killed and every child reaped.
  EXPECT_TRUE(childrenOf(::getpid()).empty());
}

}  // namespace
}  // namespace wirewise::sim
