// Reading the adaptation log back and charging collectives to probe verdicts.
#include "sim/driver/exploration.h"

#include <algorithm>
#include <cstdlib>
#include <sstream>

#include <nlohmann/json.hpp>

namespace wirewise::sim {
namespace {

using nlohmann::json;

bool readU64(const json& j, const char* key, uint64_t* out) {
  auto it = j.find(key);
  if (it == j.end() || !it->is_number_integer()) return false;
  if (!it->is_number_unsigned() && it->get<int64_t>() < 0) return false;
  *out = it->get<uint64_t>();
  return true;
}

// "0x00ab..." (common/units.h hexId), any case.
bool readComm(const json& j, uint64_t* out) {
  auto it = j.find("comm");
  if (it == j.end() || !it->is_string()) return false;
  const std::string& s = it->get_ref<const std::string&>();
  if (s.size() < 3 || s[0] != '0' || (s[1] != 'x' && s[1] != 'X')) return false;
  char* end = nullptr;
  const unsigned long long v = std::strtoull(s.c_str() + 2, &end, 16);
  if (end == nullptr || *end != '\0') return false;
  *out = v;
  return true;
}

std::optional<std::string> setting(const json& settings, const char* name) {
  auto it = settings.find(name);
  if (it == settings.end() || !it->is_string()) return std::nullopt;
  return it->get<std::string>();
}

// The coordinator's probe verdict; false when the line is not one (or is malformed).
bool readProbeWindow(const json& ev, uint64_t* comm, ProbeWindow* w) {
  auto probes = ev.find("probes");
  if (probes == ev.end() || !probes->is_array() || probes->empty()) return false;
  if (!readComm(ev, comm) || !readU64(ev, "boundary", &w->boundary)) return false;
  auto next = ev.find("next");
  if (next != ev.end() && !next->is_null()) {
    uint64_t n = 0;
    if (!readU64(ev, "next", &n)) return false;
    w->next = n;
  }
  for (const json& p : *probes) {
    if (!p.is_object() || !p.contains("coll") || !p["coll"].is_string()) continue;
    const int c = parseColl(p["coll"].get<std::string>());
    ProbeRange r;
    if (c < 0 || c >= kNumCollTypes || !readU64(p, "min_bytes", &r.minBytes) || !readU64(p, "max_bytes", &r.maxBytes))
      continue;
    r.coll = static_cast<CollType>(c);
    w->probes.push_back(r);
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
  PluginLog log;
  std::string line;
  while (std::getline(in, line)) {
    // The log is mostly per-rank verdict lines: parse only the events read here.
    const bool table = line.find("\"table\"") != std::string::npos && line.find("\"coordinator\"") != std::string::npos;
    const bool adapt = line.find("\"adapt\"") != std::string::npos;
    const bool start = line.find("\"plugin_start\"") != std::string::npos;
    const bool dropped = line.find("\"log_dropped\"") != std::string::npos;
    if (!table && !adapt && !start && !dropped) continue;
    json ev = json::parse(line, nullptr, /*allow_exceptions=*/false);
    if (!ev.is_object() || !ev.contains("event") || !ev["event"].is_string()) {
      ++log.badLines;
      continue;
    }
    uint64_t writer = 0;
    if (!pids.empty() && readU64(ev, "pid", &writer) && pids.count(static_cast<long>(writer)) == 0) continue;
    const std::string event = ev["event"].get<std::string>();
    if (event == "table") {
      auto src = ev.find("source");
      if (src == ev.end() || *src != "coordinator") continue;
      uint64_t comm = 0;
      ProbeWindow w;
      if (readProbeWindow(ev, &comm, &w)) log.probeWindows[comm].push_back(std::move(w));
      else if (ev.contains("probes") && !(ev["probes"].is_array() && ev["probes"].empty())) ++log.badLines;
    } else if (event == "adapt") {
      AdaptEntry a;
      auto kind = ev.find("kind");
      if (!readComm(ev, &a.comm) || kind == ev.end() || !kind->is_string()) {
        ++log.badLines;
        continue;
      }
      a.kind = kind->get<std::string>();
      uint64_t index = 0;
      if (readU64(ev, "index", &index)) a.index = static_cast<int64_t>(index);
      log.adapts.push_back(std::move(a));
    } else if (event == "plugin_start") {
      auto s = ev.find("settings");
      if (log.sync || s == ev.end() || !s->is_object()) continue;
      log.sync = setting(*s, "WIREWISE_SYNC");
      log.policy = setting(*s, "WIREWISE_POLICY");
    } else if (event == "log_dropped") {
      uint64_t n = 0;
      if (readU64(ev, "count", &n)) log.linesDropped += n;
    }
  }
  return log;
}

std::map<std::string, uint64_t> adaptCounts(const PluginLog& log) {
  std::map<std::string, uint64_t> counts;
  for (const char* k : {"calibrated", "alarm", "commit", "recover", "revert", "hold"}) counts[k] = 0;
  for (const AdaptEntry& a : log.adapts) ++counts[a.kind];
  return counts;
}

Exploration explorationOf(const PluginLog& log, const std::vector<CollRecord>& colls) {
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
  return e;
}

Exploration explorationFromLines(const std::vector<std::string>& lines, const std::vector<CollRecord>& colls) {
  std::stringstream ss;
  for (const std::string& l : lines) ss << l << '\n';
  return explorationOf(readPluginLog(ss, 0), colls);
}

}  // namespace wirewise::sim
