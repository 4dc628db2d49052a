// Reading an adaptation log (JSON lines, docs/adaptation-log.md) into per-communicator summaries: what
// initialised, the tables in force over time, what was observed, drops and the finalize counters.
// Tolerant by design: a line that is not a JSON object with a string "event", or whose fields have the
// wrong types, is counted as malformed and skipped; unknown event types are counted and ignored.
#pragma once

#include <cstdint>
#include <istream>
#include <map>
#include <string>
#include <tuple>
#include <vector>

#include <nlohmann/json.hpp>

namespace wirewise::tools {

struct LogInit {
  std::string face, abi;
  int64_t nRanks = 0, nNodes = 0, rank = -1, pid = 0;
};

struct LogRange {
  std::string coll, algo, proto;
  uint64_t minBytes = 0, maxBytes = 0;
  int64_t channels = 0;
};

struct LogTable {
  uint64_t seq = 0;
  int64_t pid = 0;
  std::string reason, source, digest, ts;
  std::vector<LogRange> ranges;
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
};

struct CommSummary {
  std::string id;
  std::vector<LogInit> inits;
  std::vector<LogTable> tables;
  uint64_t summaries = 0;
  LogDrops drops;
  std::vector<LogFinalize> finalizes;
  std::vector<ObservedRow> observed() const;  // sorted by (coll, bucket, algo, proto, channels)
  // key: (coll order, bucket, algo, proto, channels)
  std::map<std::tuple<int, int64_t, std::string, std::string, int64_t>, ObservedRow> rows;
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

struct LogSummary {
  uint64_t lines = 0, events = 0, malformed = 0, unknown = 0;
  std::vector<uint64_t> malformedLines;  // 1-based line numbers, the first few
  std::vector<LogProcess> processes;
  std::vector<LogProblem> problems;
  std::vector<CommSummary> comms;  // in order of first appearance
};

// Adds every line of `in` to *s. Blank lines are skipped silently. Never throws on bad input.
void addLog(std::istream& in, LogSummary* s);

nlohmann::json summaryJson(const LogSummary& s);
std::string summaryText(const LogSummary& s);

}  // namespace wirewise::tools
