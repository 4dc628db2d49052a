// Reading an adaptation log (JSON lines, docs/adaptation-log.md) into per-communicator summaries: what
// initialised, the tables in force over time, what was observed, drops and the finalize counters, and the
// coordinator's adaptive decisions ("table" events with source "coordinator", "adapt" events).
// Tolerant by design: a line that is not a JSON object with a string "event", or whose fields have the
// wrong types, is counted as malformed and skipped; unknown event types are counted and ignored.
#pragma once

#include <cstdint>
#include <istream>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <tuple>
#include <vector>

#include <nlohmann/json.hpp>

#include "common/log_events.h"

namespace wirewise::tools {

struct LogInit {
  std::string face, abi;
  int64_t nRanks = 0, nNodes = 0, rank = -1, pid = 0;
  std::string commName;  // "" when NCCL gave none
};

// A table range as the log writes it ({coll, algo, proto, min_bytes, max_bytes, channels}).
using LogRange = logev::Range;

struct LogTable {
  uint64_t seq = 0;
  int64_t pid = 0;
  std::string reason, source, digest, ts;
  std::vector<LogRange> ranges;
};

// A "table" event with source "coordinator" and an "index": the whole table of one verdict, written once per
// communicator by the process that hosts the coordinator.
struct CoordTable {
  uint64_t index = 0, boundary = 0;
  std::optional<uint64_t> next;  // none: no further boundary
  bool probe = false;            // the verdict explores: `probes` run a candidate instead of the committed choice
  std::vector<LogRange> probes, ranges;
  std::string reason, digest, ts;
};

// One "adapt" event: a decision about one bucket range, with its evidence.
struct AdaptEvent {
  uint64_t index = 0, boundary = 0;
  uint64_t order = 0;  // position in the input (line number over all files): ties on `index` keep log order
  std::string kind, coll, from, to, fromNccl, reason, ts;
  uint64_t minBytes = 0, maxBytes = 0;
  std::optional<double> beforeUs, afterUs, beforeBusBw, afterBusBw;
  bool hasDetector = false;
  double statistic = 0, threshold = 0;
  std::string shift;
  std::string cause;  // the policy's latency-or-bandwidth reading ("cause.text"), empty when it named none
  std::vector<std::pair<std::string, double>> candidates;  // (decision, us), best first
  std::vector<std::string> links;
};

// Summary rows of one (coll, bucket, algo, proto, channels) added up over intervals and ranks.
struct ObservedRow {
  std::string coll, algo, proto;
  int64_t bucket = 0, channels = 0;
  uint64_t minBytes = UINT64_MAX, maxBytes = 0, count = 0;
  double p50Sum = 0, busBwSum = 0;  // each interval's value times its count
  double p99Max = 0;
  double p50Us() const { return count ? p50Sum / static_cast<double>(count) : 0; }
  double busBwGBs() const { return count ? busBwSum / static_cast<double>(count) : 0; }
};

struct LogDrops {
  uint64_t pool = 0, ring = 0, incomplete = 0, orphan = 0;
  uint64_t total() const { return pool + ring + incomplete + orphan; }
};

struct LogFinalize {
  std::string face;
  int64_t pid = 0, rank = -1;
  uint64_t collectives = 0, applied = 0, kept = 0, samples = 0;
  uint64_t waitedUs = 0;  // tuner face with agreement: getCollInfo's waits for verdicts
};

// Bus bandwidth of one (coll, bucket) over wall-clock time, from the "summary" events: the intervals of every
// rank that end in the same second add into one point, weighted by their counts.
struct BandwidthPoint {
  double busBwSum = 0;  // each interval's value times its count
  uint64_t count = 0;
  double busBwGBs() const { return count ? busBwSum / static_cast<double>(count) : 0; }
};
struct BandwidthSeries {
  std::string coll;
  int64_t bucket = 0;
  uint64_t minBytes = UINT64_MAX, maxBytes = 0, count = 0;
  std::map<int64_t, BandwidthPoint> bySecond;  // key: Unix time of the summary's `ts`, in seconds
};

// (coll order, bucket, algo, proto, channels): an observed choice in one size bucket.
using RowKey = std::tuple<int, int64_t, std::string, std::string, int64_t>;

// One row of one "summary" event, as written (the time-saved estimate, log_savings.h, needs each interval).
struct TimedRow {
  int64_t ms = -1;       // the summary's `ts`, Unix ms; -1 when unreadable
  uint64_t summary = 0;  // which summary event (its position among the comm's): rows of one interval and rank
  RowKey key;            // its entry in CommSummary::rows
  uint64_t count = 0;
  double p50Us = 0;
};

struct CommSummary {
  std::string id;
  std::vector<LogInit> inits;
  std::vector<LogTable> tables;  // per-rank "table" events
  // By verdict index. A repeated index (the same log given twice) keeps the first.
  std::map<uint64_t, CoordTable> coordTables;
  std::vector<AdaptEvent> adapts;  // in input order; exact repeats left out
  // (index, kind, coll, min_bytes, max_bytes) of every event in `adapts`: what makes a repeat.
  std::set<std::tuple<uint64_t, std::string, std::string, uint64_t, uint64_t>> adaptKeys;
  uint64_t summaries = 0;
  LogDrops drops;
  std::vector<LogFinalize> finalizes;
  uint64_t verdictsReceived = 0;  // "verdict" events: per process, the verdicts that changed something
  std::map<std::pair<int, int64_t>, BandwidthSeries> bandwidth;  // key: (collOrder, bucket)
  std::vector<ObservedRow> observed() const;  // sorted by (coll, bucket, algo, proto, channels)
  std::map<RowKey, ObservedRow> rows;
  std::vector<TimedRow> timedRows;  // in input order
};

struct LogProcess {
  int64_t pid = 0;
  std::string host, version, mode, config, log;
  bool stopped = false;
  uint64_t logDropped = 0;
};

struct LogProblem {
  std::string file, reason;
  int64_t line = 0;
  bool warningOnly = false;
};

// One rail of a "rail_shift" event (the net plugin's per-connection rail shares).
struct LogRailShare {
  std::string label;
  double before = 0, after = 0, rateGbps = 0, rttUs = 0, baselineRttUs = 0;
  bool wasUp = true, up = true;
  uint64_t retransmits = 0;
};

// A "rail_shift" event: a send connection of the net plugin moved its bytes between rails.
struct LogRailShift {
  int64_t pid = 0;
  uint64_t conn = 0, resent = 0;
  std::string host, peer, reason, ts;
  std::vector<LogRailShare> rails;
};

// `rail_shift` in one line: "rail shift, pid 7, conn 2 to 10.0.0.2: eth1 50% -> 9% (...); eth0 91% 1.20 GB/s ...".
std::string railShiftText(const LogRailShift& r);

// One link's state over wall-clock time, from the "link_health" events of one process: the first state seen
// and every change after it, so that a day of one-second passes costs a handful of entries.
struct LogLinkTrack {
  int64_t pid = 0;
  std::string kind, id;
  std::vector<std::pair<int64_t, std::string>> states;  // (Unix ms, state), in log order
  int64_t lastSeenMs = 0;
  std::string reason;  // the last reason a rail gave, if any
};

// A "control" line at level warn: what the control plane had trouble with.
struct LogControlWarning {
  int64_t pid = 0;
  std::string ts, message;
};

struct LogSummary {
  uint64_t lines = 0, events = 0, malformed = 0, unknown = 0;
  std::vector<uint64_t> malformedLines;  // 1-based line numbers, the first few
  std::vector<uint64_t> cutLines;        // malformed last lines without a newline (a log cut short), every one
  std::vector<LogProcess> processes;
  std::vector<LogProblem> problems;
  std::vector<CommSummary> comms;  // in order of first appearance
  std::vector<LogRailShift> railShifts;  // in input order
  std::map<std::tuple<int64_t, std::string, std::string>, LogLinkTrack> links;  // key: (pid, kind, id)
  std::vector<LogControlWarning> controlWarnings;  // the first kMaxControlWarnings, in input order
  uint64_t controlWarningCount = 0;
  std::optional<int64_t> firstMs, lastMs;  // the earliest and latest `ts` seen, Unix ms
  std::string firstTs, lastTs;             // the same as the log spells them
};

inline constexpr size_t kMaxControlWarnings = 50;

// "2026-01-31T12:34:56.789Z" as Unix milliseconds; nullopt when `ts` is not in the log's format.
std::optional<int64_t> tsMillis(const std::string& ts);

// Adds every line of `in` to *s. Blank lines are skipped silently. Never throws on bad input. A malformed
// last line without a newline is also listed in cutLines: the writer was still busy, or died mid-line.
void addLog(std::istream& in, LogSummary* s);

// Position of a collective name in listings: allreduce first, as NCCL users read it; unknown names last.
int collOrder(const std::string& name);

nlohmann::json summaryJson(const LogSummary& s);
std::string summaryText(const LogSummary& s);

}  // namespace wirewise::tools
