// The driver's step loop (internal to sim/driver): every collective of the run in program order, timed in all
// four modes on one noise stream, with the plugin asked for the wirewise mode's choice. With several
// processes (SimOptions::procs) every process runs this loop in lock-step: per workload entry and repeat, each
// asks its own ranks' tuners, process 0 gathers every member's pick, compares them and sends back the choice
// in force, and each process then advances the same clocks and emits its own ranks' profiler events.
#pragma once

#include <array>
#include <cstdint>
#include <functional>
#include <map>
#include <vector>

#include "sim/driver/driver.h"
#include "sim/driver/exploration.h"
#include "sim/driver/plan.h"
#include "sim/driver/plugin_host.h"
#include "sim/driver/process_group.h"

namespace wirewise::sim {

// Which process plays which rank: process p plays global ranks [p*R/N, (p+1)*R/N).
struct Ownership {
  Ownership(const Plan& plan, int nRanks, int procs);
  int procs = 1;
  std::vector<int> firstRank;  // [process], plus R at the end
  // [process][instance]: the members (ranks in the comm, ascending) that process plays.
  std::vector<std::vector<std::vector<int>>> members;
};

struct StepsOut {
  std::array<std::vector<double>, kNumSimModes> stepCommUs;
  std::vector<std::map<uint32_t, uint64_t>> oracleHist, wwHist;  // [slot]: packed choice -> collectives
  std::vector<CollRecord> records;  // every wirewise collective, for the exploration accounting
  std::vector<int> tableChangeSteps;
  // Process 0 only (the others never see every member's pick):
  uint64_t collectivesChecked = 0, divergences = 0, failed = 0;
};

struct StepsIn {
  const Scenario* scenario = nullptr;
  const Plan* plan = nullptr;
  uint64_t seed = 0;
  int steps = 0;
  PluginHost* host = nullptr;
  std::vector<int> hostComm;  // [instance]: the host's comm index, -1 where this process plays no member
  const Ownership* owners = nullptr;
  ProcessGroup* group = nullptr;
  std::function<void(int, int)> progress;  // may be empty
  // Production mode (WIREWISE_SYNC=on): wall time follows the wirewise mode's simulated time, so that the
  // protocol's own timing (report waits, boundaries spaced by collective rates, round trips) plays out as
  // in a job on the simulated cluster. Otherwise the run goes as fast as the machine allows.
  bool realPace = false;
};

StepsOut playSteps(const StepsIn& in);

// (algo, proto, nChannels) in one word, as the choices histograms and the process channels carry it.
uint32_t packChoice(int algo, int proto, int nChannels);
void unpackChoice(uint32_t packed, int* algo, int* proto, int* nChannels);
std::string choiceName(uint32_t packed);

}  // namespace wirewise::sim
