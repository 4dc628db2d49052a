// The coordinator's committed tables over time, read back from an adaptation log, and what changed from one
// to the next: which collectives' ranges, which algorithm/protocol crossovers moved, which channel counts.
// A size that no range covers keeps NCCL's own choice; it reads as the decision "nccl".
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "tools/log_summary.h"

namespace wirewise::tools {

// [lo, hi] (inclusive, as logged) printed half-open, the way bucket edges are read: "16-32 MiB",
// "0 B-64 KiB", "4 MiB and up" (hi = UINT64_MAX).
std::string sizeSpan(uint64_t lo, uint64_t hi);

// "tree/simple/11" (channels 0 included, as "adapt" events spell decisions); "nccl" for any/any/0.
std::string decisionKey(const LogRange& r);
// What a crossover is between: "ring/ll128"; "nccl" when both algorithm and protocol are NCCL's.
std::string crossoverLabel(const LogRange& r);

// The ranges of `coll` in `table` clipped to [lo, hi], with the sizes no range covers filled in as
// any/any/0 ranges, so that the result covers [lo, hi] exactly, in order.
std::vector<LogRange> cover(const std::vector<LogRange>& table, const std::string& coll, uint64_t lo, uint64_t hi);
// Sorted by collective (allreduce first) then size; adjacent ranges with equal decisions merged.
std::vector<LogRange> normalized(std::vector<LogRange> ranges);
// The collectives `ranges` mention, allreduce first.
std::vector<std::string> collsOf(const std::vector<LogRange>& ranges);

// One table as in force from `boundary` on, committed choices only.
struct CommittedTable {
  bool coordinator = true;  // false: a per-rank "table" event, used when the log has no coordinator tables
  uint64_t index = 0;       // verdict index (coordinator tables)
  uint64_t boundary = 0;    // first collective it applies to (per-rank tables: seq)
  std::optional<uint64_t> next;
  bool probe = false;  // a probe verdict's table, with its probed sizes put back to the committed choice
  std::string reason, digest, source;
  std::vector<LogRange> ranges;  // normalized
  std::string ts;                // when it was logged (the line's `ts`); "" when the line had none
};

// The committed view of every coordinator table, in verdict order. A probe verdict's table shows the probes'
// decisions for the probed sizes; those sizes get the committed choice from the table before, so that a
// choice committed in the same verdict as another bucket's probe is seen when it happens. A probe table that
// does not list its probes cannot be undone and is left out.
std::vector<CommittedTable> committedTables(const CommSummary& c);
// committedTables(c), or when the log has none, the per-rank tables in seq order (repeats left out).
std::vector<CommittedTable> tablesInForce(const CommSummary& c);

// An algorithm/protocol edge between two adjacent ranges that appeared, went away or moved.
struct Crossover {
  enum class Change { Moved, Appeared, Gone };
  std::string coll, below, above;  // crossoverLabel of the sizes below and above the edge
  Change change = Change::Moved;
  uint64_t oldAt = 0, newAt = 0;  // the edge: first byte of the upper range (oldAt: Moved/Gone; newAt: Moved/Appeared)
};

// Sizes whose algorithm and protocol stayed while the channel count changed (0: NCCL's count).
struct ChannelChange {
  std::string coll, algo, proto;
  int64_t from = 0, to = 0;
  uint64_t minBytes = 0, maxBytes = 0;
};

std::vector<Crossover> crossovers(const std::vector<LogRange>& before, const std::vector<LogRange>& after);
std::vector<ChannelChange> channelChanges(const std::vector<LogRange>& before, const std::vector<LogRange>& after);

// A committed table that differs from the one before it (the first one: from NCCL's own choice everywhere).
struct TableChange {
  CommittedTable table;
  std::vector<std::string> colls;  // collectives whose ranges changed, allreduce first
  std::vector<Crossover> crossovers;
  std::vector<ChannelChange> channels;
};

std::vector<TableChange> committedHistory(const CommSummary& c);

// How much the coordinator explored: probe verdicts (tables with "probe": true) and what they probed.
struct ProbedRange {
  std::string coll;
  uint64_t minBytes = 0, maxBytes = 0;
  uint64_t count = 0;                  // probes of this range
  std::vector<std::string> decisions;  // decisionKey of each candidate probed, first probe first, no repeats
};
struct Exploration {
  uint64_t verdicts = 0, probes = 0;
  std::optional<uint64_t> firstIndex, lastIndex;
  std::vector<ProbedRange> ranges;  // allreduce first, then by size
};
Exploration explorationOf(const CommSummary& c);

// "adapt" events per kind: the kinds the schema names in its order (those seen), then any others by name.
std::vector<std::pair<std::string, uint64_t>> adaptCounts(const CommSummary& c);

// "allreduce: ring/ll128 -> ring/simple crossover moved from 4 MiB to 1 MiB (index 12, collective 3840)".
std::string crossoverText(const Crossover& x, const CommittedTable& when);
// "channels 16 -> 11 on allreduce 16-32 MiB".
std::string channelText(const ChannelChange& c);

}  // namespace wirewise::tools
