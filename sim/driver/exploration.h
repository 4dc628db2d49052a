// What the driver reads back from the plugin's adaptation log after a run (docs/simulator.md): the
// coordinator's probe verdicts, its "adapt" decisions, and the settings the plugin ran with; and the
// exploration accounting that charges wirewise collectives to the probes that covered them.
#pragma once

#include <cstdint>
#include <istream>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "adaptive/types.h"
#include "sim/driver/noise.h"

namespace wirewise::sim {

// One bucket range a probe verdict explores (the "probes" of a coordinator "table" event).
struct ProbeRange {
  CollType coll = CollType::AllReduce;
  uint64_t minBytes = 0, maxBytes = 0;  // inclusive
};

// A verdict that carries probes: its collectives [boundary, next) of one communicator.
struct ProbeWindow {
  uint64_t boundary = 0;
  std::optional<uint64_t> next;  // none: no further boundary
  std::vector<ProbeRange> probes;
};

struct AdaptEntry {
  uint64_t comm = 0;
  std::string kind;  // "calibrated", "alarm", "commit", "recover", "revert", "hold", or a newer kind
  int64_t index = -1;
};

struct PluginLog {
  std::map<uint64_t, std::vector<ProbeWindow>> probeWindows;  // by commId, in log order
  std::vector<AdaptEntry> adapts;                               // in log order
  std::optional<std::string> sync, policy;  // in force, from the first plugin_start line's settings
  uint64_t linesDropped = 0;                // the writer's log_dropped counts
  uint64_t badLines = 0;                    // lines of interest that did not parse
};

// Reads an adaptation log. A non-empty pids keeps only those writers' lines (a --log file may be shared; a
// run with several processes has one writer per process).
PluginLog readPluginLog(std::istream& in, const std::set<long>& pids);
// The same for one writer (pid != 0) or every writer (pid 0).
PluginLog readPluginLog(std::istream& in, long pid);

// "adapt" events by kind (the six kinds of the spec always present, newer kinds as they come).
std::map<std::string, uint64_t> adaptCounts(const PluginLog& log);

// One wirewise collective as the driver ran it: its communicator instance, the tuner's per-instance
// getCollInfo sequence number, what it was, and its span (start = last member's arrival, to the common end).
// The rest says where and how it ran, for pricing probes against their incumbents (probe_cost.h).
struct CollRecord {
  uint64_t comm = 0;
  uint64_t seq = 0;
  CollType coll = CollType::AllReduce;
  uint64_t bytes = 0;
  double us = 0;      // true time of the choice under the step's link state x noise.multiplier
  int step = 0;
  int slot = 0;       // the plan's slot (instance, workload entry)
  uint32_t choice = 0;  // packChoice(algo, proto, nChannels) in force
  NoiseDraw noise = {};
};

struct Exploration {
  double us = 0;
  uint64_t collectives = 0;
};

// The collectives that ran under a probe: same comm, boundary <= seq < next of a probe verdict, and
// (coll, bytes) inside one of that verdict's probe ranges. Each collective counts once. explored, if given,
// receives one flag per record (1: counted as exploration).
Exploration explorationOf(const PluginLog& log, const std::vector<CollRecord>& colls,
                          std::vector<char>* explored = nullptr);

// The largest share of any one rank's collective time that ran under a probe: per rank, the spans of its
// explored collectives over the spans of all its collectives (slotRanks[slot]: the ranks of each plan slot;
// explored: explorationOf's flags). Rank by rank, so that concurrent instances (a communicator per node)
// are not added up against one clock. 0 when no rank ran a collective.
double rankExplorationShare(const std::vector<CollRecord>& colls, const std::vector<char>& explored,
                            const std::vector<std::vector<int>>& slotRanks, int nRanks);

// Test helper: explorationOf over a log given as lines (every writer).
Exploration explorationFromLines(const std::vector<std::string>& lines, const std::vector<CollRecord>& colls);

}  // namespace wirewise::sim
