#include "tools/log_history.h"

#include <fmt/core.h>

#include <algorithm>
#include <map>
#include <set>
#include <tuple>
#include <utility>

#include "common/log_events.h"
#include "common/units.h"
#include "tools/cli_util.h"

namespace wirewise::tools {
namespace {

LogRange ncclRange(const std::string& coll, uint64_t lo, uint64_t hi) {
  return {coll, std::string(logev::kAny), std::string(logev::kAny), lo, hi, 0};
}

bool sameDecision(const LogRange& a, const LogRange& b) {
  return a.algo == b.algo && a.proto == b.proto && a.channels == b.channels;
}

bool sameRanges(const std::vector<LogRange>& a, const std::vector<LogRange>& b) {
  return std::equal(a.begin(), a.end(), b.begin(), b.end(), [](const LogRange& x, const LogRange& y) {
    return x.coll == y.coll && x.minBytes == y.minBytes && x.maxBytes == y.maxBytes && sameDecision(x, y);
  });
}

std::vector<LogRange> ofColl(const std::vector<LogRange>& table, const std::string& coll) {
  std::vector<LogRange> out;
  for (const auto& r : table)
    if (r.coll == coll) out.push_back(r);
  return out;
}

// `table` less the sizes [lo, hi] of `coll`.
std::vector<LogRange> without(const std::vector<LogRange>& table, const std::string& coll, uint64_t lo, uint64_t hi) {
  std::vector<LogRange> out;
  for (const auto& r : table) {
    if (r.coll != coll || r.maxBytes < lo || r.minBytes > hi) {
      out.push_back(r);
      continue;
    }
    if (r.minBytes < lo) out.push_back({r.coll, r.algo, r.proto, r.minBytes, lo - 1, r.channels});
    if (r.maxBytes > hi) out.push_back({r.coll, r.algo, r.proto, hi + 1, r.maxBytes, r.channels});
  }
  return out;
}

struct Edge {
  std::string below, above;
  uint64_t at;
};

std::vector<Edge> edgesOf(const std::vector<LogRange>& table, const std::string& coll) {
  std::vector<Edge> out;
  auto pieces = cover(table, coll, 0, UINT64_MAX);
  for (size_t i = 1; i < pieces.size(); ++i) {
    std::string below = crossoverLabel(pieces[i - 1]), above = crossoverLabel(pieces[i]);
    if (below != above) out.push_back({below, above, pieces[i].minBytes});
  }
  return out;
}

std::vector<std::string> unionColls(const std::vector<LogRange>& a, const std::vector<LogRange>& b) {
  std::vector<LogRange> both = a;
  both.insert(both.end(), b.begin(), b.end());
  return collsOf(both);
}

std::string channelsText(int64_t n) { return n == 0 ? "NCCL's" : std::to_string(n); }

}  // namespace

std::string sizeSpan(uint64_t lo, uint64_t hi) {
  if (hi == UINT64_MAX) return bytesText(lo) + " and up";
  const std::string a = bytesText(lo), b = bytesText(hi + 1);
  const size_t sa = a.rfind(' '), sb = b.rfind(' ');
  if (sa != std::string::npos && sb != std::string::npos && a.substr(sa) == b.substr(sb))
    return a.substr(0, sa) + "-" + b;
  return a + "-" + b;
}

std::string decisionKey(const LogRange& r) {
  if (r.algo == logev::kAny && r.proto == logev::kAny && r.channels == 0) return std::string(logev::kNcclDecision);
  return logev::formatDecision(r.algo, r.proto, r.channels);
}

std::string crossoverLabel(const LogRange& r) {
  return r.algo == logev::kAny && r.proto == logev::kAny ? std::string(logev::kNcclDecision) : r.algo + "/" + r.proto;
}

std::vector<LogRange> cover(const std::vector<LogRange>& table, const std::string& coll, uint64_t lo, uint64_t hi) {
  std::vector<LogRange> out;
  if (lo > hi) return out;
  std::vector<LogRange> mine;
  for (const auto& r : table)
    if (r.coll == coll && r.minBytes <= r.maxBytes && r.maxBytes >= lo && r.minBytes <= hi)
      mine.push_back({r.coll, r.algo, r.proto, std::max(r.minBytes, lo), std::min(r.maxBytes, hi), r.channels});
  std::stable_sort(mine.begin(), mine.end(),
                   [](const LogRange& a, const LogRange& b) { return a.minBytes < b.minBytes; });
  uint64_t at = lo;
  for (const auto& r : mine) {
    if (r.maxBytes < at) continue;  // overlaps one before it (a malformed table): the first one wins
    const uint64_t start = std::max(r.minBytes, at);
    if (start > at) out.push_back(ncclRange(coll, at, start - 1));
    out.push_back({r.coll, r.algo, r.proto, start, r.maxBytes, r.channels});
    if (r.maxBytes == hi) return out;
    at = r.maxBytes + 1;
  }
  out.push_back(ncclRange(coll, at, hi));
  return out;
}

std::vector<LogRange> normalized(std::vector<LogRange> ranges) {
  std::erase_if(ranges, [](const LogRange& r) { return decisionKey(r) == logev::kNcclDecision; });
  std::stable_sort(ranges.begin(), ranges.end(), [](const LogRange& a, const LogRange& b) {
    return std::make_tuple(collOrder(a.coll), a.coll, a.minBytes) <
           std::make_tuple(collOrder(b.coll), b.coll, b.minBytes);
  });
  std::vector<LogRange> out;
  for (const auto& r : ranges) {
    if (!out.empty()) {
      LogRange& last = out.back();
      if (last.coll == r.coll && sameDecision(last, r) && last.maxBytes != UINT64_MAX &&
          last.maxBytes + 1 == r.minBytes) {
        last.maxBytes = r.maxBytes;
        continue;
      }
    }
    out.push_back(r);
  }
  return out;
}

std::vector<std::string> collsOf(const std::vector<LogRange>& ranges) {
  std::vector<std::string> out;
  for (const auto& r : ranges)
    if (std::find(out.begin(), out.end(), r.coll) == out.end()) out.push_back(r.coll);
  std::stable_sort(out.begin(), out.end(), [](const std::string& a, const std::string& b) {
    return std::make_pair(collOrder(a), a) < std::make_pair(collOrder(b), b);
  });
  return out;
}

std::vector<CommittedTable> committedTables(const CommSummary& c) {
  std::vector<CommittedTable> out;
  std::vector<LogRange> prev;
  for (const auto& [index, t] : c.coordTables) {
    if (t.probe && t.probes.empty()) continue;
    std::vector<LogRange> ranges = t.ranges;
    if (t.probe)
      for (const auto& p : t.probes) {
        ranges = without(ranges, p.coll, p.minBytes, p.maxBytes);
        for (const auto& r : cover(prev, p.coll, p.minBytes, p.maxBytes)) ranges.push_back(r);
      }
    CommittedTable ct{
        true, t.index, t.boundary, t.next, t.probe, t.reason, t.digest, "coordinator", normalized(std::move(ranges)),
        t.ts};
    prev = ct.ranges;
    out.push_back(std::move(ct));
  }
  return out;
}

std::vector<CommittedTable> tablesInForce(const CommSummary& c) {
  std::vector<CommittedTable> out = committedTables(c);
  if (!out.empty()) return out;
  std::vector<LogTable> tables = c.tables;
  std::stable_sort(tables.begin(), tables.end(), [](const LogTable& a, const LogTable& b) { return a.seq < b.seq; });
  std::set<std::pair<uint64_t, std::string>> seen;  // every rank logs the same table at the same seq
  for (const auto& t : tables)
    if (seen.insert({t.seq, t.digest}).second)
      out.push_back({false, 0, t.seq, std::nullopt, false, t.reason, t.digest, t.source, normalized(t.ranges), t.ts});
  return out;
}

std::vector<Crossover> crossovers(const std::vector<LogRange>& before, const std::vector<LogRange>& after) {
  std::vector<Crossover> out;
  for (const auto& coll : unionColls(before, after)) {
    // Per (below, above) pair: the edges only one side has. Paired in size order they moved; the rest
    // appeared or went away.
    std::map<std::pair<std::string, std::string>, std::pair<std::vector<uint64_t>, std::vector<uint64_t>>> byPair;
    for (const auto& e : edgesOf(before, coll)) byPair[{e.below, e.above}].first.push_back(e.at);
    for (const auto& e : edgesOf(after, coll)) byPair[{e.below, e.above}].second.push_back(e.at);
    std::vector<Crossover> mine;
    for (const auto& [pair, at] : byPair) {
      std::vector<uint64_t> gone, added;
      std::set_difference(at.first.begin(), at.first.end(), at.second.begin(), at.second.end(),
                          std::back_inserter(gone));
      std::set_difference(at.second.begin(), at.second.end(), at.first.begin(), at.first.end(),
                          std::back_inserter(added));
      const size_t moved = std::min(gone.size(), added.size());
      for (size_t i = 0; i < moved; ++i)
        mine.push_back({coll, pair.first, pair.second, Crossover::Change::Moved, gone[i], added[i]});
      for (size_t i = moved; i < gone.size(); ++i)
        mine.push_back({coll, pair.first, pair.second, Crossover::Change::Gone, gone[i], 0});
      for (size_t i = moved; i < added.size(); ++i)
        mine.push_back({coll, pair.first, pair.second, Crossover::Change::Appeared, 0, added[i]});
    }
    auto where = [](const Crossover& x) { return x.change == Crossover::Change::Gone ? x.oldAt : x.newAt; };
    std::stable_sort(mine.begin(), mine.end(),
                     [&](const Crossover& a, const Crossover& b) { return where(a) < where(b); });
    out.insert(out.end(), mine.begin(), mine.end());
  }
  return out;
}

std::vector<ChannelChange> channelChanges(const std::vector<LogRange>& before, const std::vector<LogRange>& after) {
  std::vector<ChannelChange> out;
  for (const auto& coll : unionColls(before, after)) {
    const auto pb = cover(before, coll, 0, UINT64_MAX), pa = cover(after, coll, 0, UINT64_MAX);
    std::vector<uint64_t> cuts;
    for (const auto& r : pb) cuts.push_back(r.minBytes);
    for (const auto& r : pa) cuts.push_back(r.minBytes);
    std::sort(cuts.begin(), cuts.end());
    cuts.erase(std::unique(cuts.begin(), cuts.end()), cuts.end());
    size_t ib = 0, ia = 0;
    for (size_t i = 0; i < cuts.size(); ++i) {
      const uint64_t lo = cuts[i], hi = i + 1 < cuts.size() ? cuts[i + 1] - 1 : UINT64_MAX;
      while (pb[ib].maxBytes < lo) ++ib;
      while (pa[ia].maxBytes < lo) ++ia;
      const LogRange &b = pb[ib], &a = pa[ia];
      if (crossoverLabel(a) != crossoverLabel(b) || a.channels == b.channels) continue;
      if (!out.empty()) {
        ChannelChange& last = out.back();
        if (last.coll == coll && last.algo == a.algo && last.proto == a.proto && last.from == b.channels &&
            last.to == a.channels && last.maxBytes + 1 == lo) {
          last.maxBytes = hi;
          continue;
        }
      }
      out.push_back({coll, a.algo, a.proto, b.channels, a.channels, lo, hi});
    }
  }
  return out;
}

std::vector<TableChange> committedHistory(const CommSummary& c) {
  std::vector<TableChange> out;
  std::vector<LogRange> prev;
  for (auto& t : committedTables(c)) {
    if (sameRanges(t.ranges, prev)) continue;
    TableChange ch;
    for (const auto& coll : unionColls(prev, t.ranges))
      if (!sameRanges(ofColl(prev, coll), ofColl(t.ranges, coll))) ch.colls.push_back(coll);
    ch.crossovers = crossovers(prev, t.ranges);
    ch.channels = channelChanges(prev, t.ranges);
    prev = t.ranges;
    ch.table = std::move(t);
    out.push_back(std::move(ch));
  }
  return out;
}

Exploration explorationOf(const CommSummary& c) {
  Exploration out;
  std::map<std::tuple<int, std::string, uint64_t, uint64_t>, ProbedRange> byRange;
  for (const auto& [index, t] : c.coordTables) {
    if (!t.probe) continue;
    ++out.verdicts;
    if (!out.firstIndex) out.firstIndex = index;
    out.lastIndex = index;
    for (const auto& p : t.probes) {
      ++out.probes;
      ProbedRange& r = byRange[{collOrder(p.coll), p.coll, p.minBytes, p.maxBytes}];
      r.coll = p.coll, r.minBytes = p.minBytes, r.maxBytes = p.maxBytes;
      ++r.count;
      std::string d = decisionKey(p);
      if (std::find(r.decisions.begin(), r.decisions.end(), d) == r.decisions.end()) r.decisions.push_back(d);
    }
  }
  for (auto& [key, r] : byRange) out.ranges.push_back(std::move(r));
  return out;
}

std::vector<std::pair<std::string, uint64_t>> adaptCounts(const CommSummary& c) {
  std::map<std::string, uint64_t> n;
  for (const auto& a : c.adapts) ++n[a.kind];
  std::vector<std::pair<std::string, uint64_t>> out;
  for (logev::AdaptKind kind : logev::kListedAdaptKinds)
    if (auto it = n.find(std::string(logev::adaptKindName(kind))); it != n.end()) {
      out.emplace_back(it->first, it->second);
      n.erase(it);
    }
  for (const auto& [k, count] : n) out.emplace_back(k, count);
  return out;
}

std::string crossoverText(const Crossover& x, const CommittedTable& when) {
  std::string what;
  switch (x.change) {
    case Crossover::Change::Moved:
      what = fmt::format("moved from {} to {}", bytesText(x.oldAt), bytesText(x.newAt));
      break;
    case Crossover::Change::Appeared:
      what = fmt::format("appeared at {}", bytesText(x.newAt));
      break;
    case Crossover::Change::Gone:
      what = fmt::format("at {} went away", bytesText(x.oldAt));
      break;
  }
  std::string at = when.coordinator ? fmt::format("index {}, collective {}", when.index, when.boundary)
                                    : fmt::format("collective {}", when.boundary);
  return fmt::format("{}: {} -> {} crossover {} ({})", x.coll, x.below, x.above, what, at);
}

std::string channelText(const ChannelChange& c) {
  return fmt::format("channels {} -> {} on {} {}", channelsText(c.from), channelsText(c.to), c.coll,
                     sizeSpan(c.minBytes, c.maxBytes));
}

}  // namespace wirewise::tools
