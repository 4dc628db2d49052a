// Reading the adaptation log back and charging collectives to probe verdicts.
#include "sim/driver/exploration.h"

#include <algorithm>
#include <cstdlib>
#include <sstream>

#include <nlohmann/json.hpp>

#include "common/log_events.h"
#include "common/settings.h"

namespace wirewise::sim {
namespace {

using nlohmann::json;

// "0x00ab..." (the log's comm ids), any case.
bool parseComm(const std::string& s, uint64_t* out) {
  if (s.size() < 3 || s[0] != '0' || (s[1] != 'x' && s[1] != 'X')) return false;
  char* end = nullptr;
  const unsigned long long v = std::strtoull(s.c_str() + 2, &end, 16);
  if (end == nullptr || *end != '\0') return false;
  *out = v;
  return true;
}

std::optional<std::string> setting(const logev::PluginStart& p, const char* name) {
  auto it = p.settings.find(name);
  if (it == p.settings.end()) return std::nullopt;
  return it->second;
}

// The coordinator's probe verdict as a window; false when it names no probe this reader knows.
bool probeWindowOf(const logev::CoordinatorTable& t, uint64_t* comm, ProbeWindow* w) {
  if (!parseComm(t.comm, comm)) return false;
  w->boundary = t.boundary;
  w->next = t.next;
  for (const logev::Range& p : t.probes) {
    const int c = parseColl(p.coll);
    if (c < 0 || c >= kNumCollTypes) continue;
    w->probes.push_back({static_cast<CollType>(c), p.minBytes, p.maxBytes});
  }
  return !w->probes.empty();
}

bool covers(const ProbeWindow& w, const CollRecord& c) {
  if (c.seq < w.boundary || (w.next && c.seq >= *w.next)) return false;
  for (const ProbeRange& r : w.probes)
    if (r.coll == c.coll && c.bytes >= r.minBytes && c.bytes <= r.maxBytes) return true;
  return false;
}

}  // namespace

PluginLog readPluginLog(std::istream& in, long pid) {
  return readPluginLog(in, pid != 0 ? std::set<long>{pid} : std::set<long>{});
}

PluginLog readPluginLog(std::istream& in, const std::set<long>& pids) {
  using logev::EventKind;
  const auto quoted = [](std::string_view name) { return "\"" + std::string(name) + "\""; };
  const std::string tableName = quoted(logev::eventName(EventKind::Table)),
                    coordinator = quoted(logev::kSourceCoordinator), adaptName = quoted(logev::eventName(EventKind::Adapt)),
                    startName = quoted(logev::eventName(EventKind::PluginStart)),
                    droppedName = quoted(logev::eventName(EventKind::LogDropped));
  PluginLog log;
  std::string line;
  while (std::getline(in, line)) {
    // The log is mostly per-rank verdict lines: parse only the events read here.
    const bool table = line.find(tableName) != std::string::npos && line.find(coordinator) != std::string::npos;
    const bool adapt = line.find(adaptName) != std::string::npos;
    const bool start = line.find(startName) != std::string::npos;
    const bool dropped = line.find(droppedName) != std::string::npos;
    if (!table && !adapt && !start && !dropped) continue;
    const json ev = json::parse(line, nullptr, /*allow_exceptions=*/false);
    const std::optional<EventKind> kind = logev::lineKindOf(ev);
    if (!kind) {
      ++log.badLines;
      continue;
    }
    try {
      // A writer whose pid cannot be read is kept, as is a line without one (pid 0 is no process).
      int64_t writer = 0;
      try {
        writer = ev.get<logev::Envelope>().pid;
      } catch (const json::exception&) {
      }
      if (!pids.empty() && writer > 0 && pids.count(static_cast<long>(writer)) == 0) continue;
      if (*kind == EventKind::Table) {
        auto src = ev.find(logev::kSourceKey);
        if (src == ev.end() || *src != logev::kSourceCoordinator) continue;
        const auto t = ev.get<logev::CoordinatorTable>();
        uint64_t comm = 0;
        ProbeWindow w;
        if (probeWindowOf(t, &comm, &w))
          log.probeWindows[comm].push_back(std::move(w));
        else if (!t.probes.empty())
          ++log.badLines;
      } else if (*kind == EventKind::Adapt) {
        const auto x = ev.get<logev::Adapt>();
        AdaptEntry a;
        if (!parseComm(x.comm, &a.comm) || x.kind.empty()) {
          ++log.badLines;
          continue;
        }
        a.kind = x.kind;
        a.index = ev.contains(logev::kIndexKey) ? static_cast<int64_t>(x.index) : -1;
        log.adapts.push_back(std::move(a));
      } else if (*kind == EventKind::PluginStart) {
        if (log.sync) continue;
        const auto x = ev.get<logev::PluginStart>();
        log.sync = setting(x, settingName(&Settings::sync));
        log.policy = setting(x, settingName(&Settings::policy));
      } else if (*kind == EventKind::LogDropped) {
        log.linesDropped += ev.get<logev::LogDropped>().count;
      }
    } catch (const json::exception&) {
      ++log.badLines;
    }
  }
  return log;
}

std::map<std::string, uint64_t> adaptCounts(const PluginLog& log) {
  std::map<std::string, uint64_t> counts;
  for (logev::AdaptKind k : logev::kListedAdaptKinds) counts[std::string(logev::adaptKindName(k))] = 0;
  for (const AdaptEntry& a : log.adapts) ++counts[a.kind];
  return counts;
}

Exploration explorationOf(const PluginLog& log, const std::vector<CollRecord>& colls, std::vector<char>* explored) {
  // Per comm, the collectives in seq order; each window then touches only the collectives it spans.
  std::map<uint64_t, std::vector<size_t>> byComm;
  for (size_t i = 0; i < colls.size(); ++i)
    if (log.probeWindows.count(colls[i].comm) != 0) byComm[colls[i].comm].push_back(i);
  std::vector<char> hit(colls.size(), 0);
  Exploration e;
  for (auto& [comm, idx] : byComm) {
    std::stable_sort(idx.begin(), idx.end(), [&](size_t a, size_t b) { return colls[a].seq < colls[b].seq; });
    for (const ProbeWindow& w : log.probeWindows.at(comm)) {
      auto lo = std::lower_bound(idx.begin(), idx.end(), w.boundary,
                                 [&](size_t i, uint64_t s) { return colls[i].seq < s; });
      for (auto it = lo; it != idx.end() && (!w.next || colls[*it].seq < *w.next); ++it) {
        if (hit[*it] || !covers(w, colls[*it])) continue;
        hit[*it] = 1;
        e.us += colls[*it].us;
        ++e.collectives;
      }
    }
  }
  if (explored != nullptr) *explored = std::move(hit);
  return e;
}

double rankExplorationShare(const std::vector<CollRecord>& colls, const std::vector<char>& explored,
                            const std::vector<std::vector<int>>& slotRanks, int nRanks) {
  std::vector<double> all(static_cast<size_t>(std::max(0, nRanks)), 0.0), probed(all.size(), 0.0);
  for (size_t i = 0; i < colls.size(); ++i) {
    const size_t slot = static_cast<size_t>(colls[i].slot);
    if (slot >= slotRanks.size()) continue;
    const bool hit = i < explored.size() && explored[i] != 0;
    for (int r : slotRanks[slot]) {
      if (r < 0 || static_cast<size_t>(r) >= all.size()) continue;
      all[static_cast<size_t>(r)] += colls[i].us;
      if (hit) probed[static_cast<size_t>(r)] += colls[i].us;
    }
  }
  double worst = 0;
  for (size_t r = 0; r < all.size(); ++r)
    if (all[r] > 0) worst = std::max(worst, probed[r] / all[r]);
  return worst;
}

Exploration explorationFromLines(const std::vector<std::string>& lines, const std::vector<CollRecord>& colls) {
  std::stringstream ss;
  for (const std::string& l : lines) ss << l << '\n';
  return explorationOf(readPluginLog(ss, 0), colls);
}

}  // namespace wirewise::sim
