#include "tools/log_summary.h"

#include <fmt/core.h>

#include <algorithm>

#include "adaptive/types.h"
#include "common/units.h"
#include "tools/cli_util.h"
#include "tools/log_history.h"

namespace wirewise::tools {
namespace {

constexpr size_t kMaxMalformedListed = 10;

using nlohmann::json;

// Field readers: a missing key gives the fallback; a key of the wrong type throws json::type_error, which
// makes the whole line malformed.
std::string str(const json& j, const char* key) { return j.contains(key) ? j.at(key).get<std::string>() : ""; }
int64_t i64(const json& j, const char* key, int64_t fallback = 0) {
  return j.contains(key) ? j.at(key).get<int64_t>() : fallback;
}
uint64_t u64(const json& j, const char* key) { return j.contains(key) ? j.at(key).get<uint64_t>() : 0; }
double num(const json& j, const char* key) { return j.contains(key) ? j.at(key).get<double>() : 0.0; }
bool boolean(const json& j, const char* key) { return j.contains(key) && j.at(key).get<bool>(); }
// Absent or null: none. Any other non-number throws, as above.
std::optional<double> optNum(const json& j, const char* key) {
  if (!j.contains(key) || j.at(key).is_null()) return std::nullopt;
  return j.at(key).get<double>();
}
std::optional<uint64_t> optU64(const json& j, const char* key) {
  if (!j.contains(key) || j.at(key).is_null()) return std::nullopt;
  return j.at(key).get<uint64_t>();
}

std::vector<LogRange> rangesOf(const json& e, const char* key) {
  std::vector<LogRange> out;
  if (e.contains(key))
    for (const json& r : e.at(key))
      out.push_back({str(r, "coll"), str(r, "algo"), str(r, "proto"), u64(r, "min_bytes"), u64(r, "max_bytes"),
                     i64(r, "channels")});
  return out;
}

CoordTable coordTableOf(const json& e) {
  return {u64(e, "index"),    u64(e, "boundary"),    optU64(e, "next"), boolean(e, "probe"),
          rangesOf(e, "probes"), rangesOf(e, "ranges"), str(e, "reason"),  str(e, "digest"),
          str(e, "ts")};
}

AdaptEvent adaptOf(const json& e, uint64_t line) {
  AdaptEvent a;
  a.index = u64(e, "index"), a.boundary = u64(e, "boundary"), a.order = line;
  a.kind = str(e, "kind"), a.coll = str(e, "coll"), a.from = str(e, "from"), a.to = str(e, "to");
  a.fromNccl = str(e, "from_nccl"), a.reason = str(e, "reason"), a.ts = str(e, "ts");
  a.minBytes = u64(e, "min_bytes"), a.maxBytes = u64(e, "max_bytes");
  a.beforeUs = optNum(e, "before_us"), a.afterUs = optNum(e, "after_us");
  a.beforeBusBw = optNum(e, "before_busbw_gbs"), a.afterBusBw = optNum(e, "after_busbw_gbs");
  if (e.contains("detector") && e.at("detector").is_object()) {
    const json& d = e.at("detector");
    a.hasDetector = true;
    a.statistic = num(d, "statistic"), a.threshold = num(d, "threshold"), a.shift = str(d, "shift");
  }
  if (e.contains("cause") && e.at("cause").is_object()) a.cause = str(e.at("cause"), "text");
  if (e.contains("candidates"))
    for (const json& c : e.at("candidates")) a.candidates.emplace_back(str(c, "decision"), num(c, "us"));
  // Links are strings today; anything richer a later writer puts there is shown as its JSON text.
  if (e.contains("links"))
    for (const json& l : e.at("links")) a.links.push_back(l.is_string() ? l.get<std::string>() : l.dump());
  return a;
}

CommSummary& commOf(LogSummary* s, const std::string& id) {
  for (auto& c : s->comms)
    if (c.id == id) return c;
  s->comms.push_back(CommSummary{});
  s->comms.back().id = id;
  return s->comms.back();
}

LogProcess& processOf(LogSummary* s, int64_t pid) {
  for (auto& p : s->processes)
    if (p.pid == pid) return p;
  s->processes.push_back(LogProcess{});
  s->processes.back().pid = pid;
  return s->processes.back();
}

struct RowIn {
  std::string coll, algo, proto;
  int64_t bucket, channels;
  uint64_t count, minBytes, maxBytes;
  double p50, p99, busBw;
};

// Every field is read before anything is changed, so a line that throws halfway leaves no trace.
// Returns false for an unknown event type.
bool addEvent(const json& e, LogSummary* s) {
  const std::string ev = e.at("event").get<std::string>();
  const int64_t pid = i64(e, "pid");
  if (ev == "plugin_start") {
    // settings: variable name -> effective value as a string.
    json st = e.contains("settings") ? e.at("settings") : json::object();
    LogProcess in{pid,   str(e, "host"), str(e, "version"), str(st, "WIREWISE_MODE"), str(st, "WIREWISE_CONFIG"),
                  str(st, "WIREWISE_LOG"), false, 0};
    LogProcess& p = processOf(s, pid);
    in.stopped = p.stopped, in.logDropped = p.logDropped;
    p = in;
  } else if (ev == "plugin_stop") {
    processOf(s, pid).stopped = true;
  } else if (ev == "log_dropped") {
    uint64_t n = u64(e, "count");
    processOf(s, pid).logDropped += n;
  } else if (ev == "config_problem") {
    s->problems.push_back({str(e, "file"), str(e, "reason"), i64(e, "line"), boolean(e, "warning")});
  } else if (ev == "comm_init") {
    LogInit in{str(e, "face"), str(e, "abi"), i64(e, "nranks"), i64(e, "nnodes"), i64(e, "rank", -1), pid};
    commOf(s, str(e, "comm")).inits.push_back(std::move(in));
  } else if (ev == "table" && str(e, "source") == "coordinator" && e.contains("index")) {
    CoordTable t = coordTableOf(e);
    commOf(s, str(e, "comm")).coordTables.emplace(t.index, std::move(t));
  } else if (ev == "adapt") {
    AdaptEvent a = adaptOf(e, s->lines);
    CommSummary& c = commOf(s, str(e, "comm"));
    if (c.adaptKeys.insert({a.index, a.kind, a.coll, a.minBytes, a.maxBytes}).second)
      c.adapts.push_back(std::move(a));
  } else if (ev == "table") {
    LogTable t{u64(e, "seq"), pid, str(e, "reason"), str(e, "source"), str(e, "digest"), str(e, "ts"), {}};
    if (e.contains("ranges"))
      for (const json& r : e.at("ranges"))
        t.ranges.push_back({str(r, "coll"), str(r, "algo"), str(r, "proto"), u64(r, "min_bytes"),
                            u64(r, "max_bytes"), i64(r, "channels")});
    commOf(s, str(e, "comm")).tables.push_back(std::move(t));
  } else if (ev == "summary") {
    std::vector<RowIn> rows;
    if (e.contains("rows"))
      for (const json& r : e.at("rows"))
        rows.push_back({str(r, "coll"), str(r, "algo"), str(r, "proto"), i64(r, "bucket"), i64(r, "channels"),
                        u64(r, "count"), u64(r, "min_bytes"), u64(r, "max_bytes"), num(r, "p50_us"),
                        num(r, "p99_us"), num(r, "busbw_gbs")});
    json d = e.contains("drops") ? e.at("drops") : json::object();
    LogDrops drops{u64(d, "pool"), u64(d, "ring"), u64(d, "incomplete"), u64(d, "orphan")};
    CommSummary& c = commOf(s, str(e, "comm"));
    ++c.summaries;
    for (const RowIn& r : rows) {
      ObservedRow& o = c.rows[{collOrder(r.coll), r.bucket, r.algo, r.proto, r.channels}];
      o.coll = r.coll, o.algo = r.algo, o.proto = r.proto, o.bucket = r.bucket, o.channels = r.channels;
      o.count += r.count;
      o.minBytes = std::min(o.minBytes, r.minBytes);
      o.maxBytes = std::max(o.maxBytes, r.maxBytes);
      o.p50Sum += r.p50 * static_cast<double>(r.count);
      o.busBwSum += r.busBw * static_cast<double>(r.count);
      o.p99Max = std::max(o.p99Max, r.p99);
    }
    c.drops.pool += drops.pool;
    c.drops.ring += drops.ring;
    c.drops.incomplete += drops.incomplete;
    c.drops.orphan += drops.orphan;
  } else if (ev == "comm_finalize") {
    LogFinalize f{str(e, "face"), pid, i64(e, "rank", -1), u64(e, "collectives"), u64(e, "applied"), u64(e, "kept"),
                  u64(e, "samples")};
    commOf(s, str(e, "comm")).finalizes.push_back(std::move(f));
  } else if (ev == "rail_shift") {
    LogRailShift r{pid, u64(e, "conn"), u64(e, "resent_since_last"), str(e, "host"), str(e, "peer"), str(e, "reason"),
                   str(e, "ts"), {}};
    if (e.contains("rails"))
      for (const json& x : e.at("rails"))
        r.rails.push_back({str(x, "label"), num(x, "before"), num(x, "after"), num(x, "rate_gbps"), num(x, "rtt_us"),
                           num(x, "baseline_rtt_us"), !x.contains("was_up") || boolean(x, "was_up"),
                           !x.contains("up") || boolean(x, "up"), u64(x, "retransmits")});
    s->railShifts.push_back(std::move(r));
  } else if (ev == "link_health" || ev == "net_paths" || ev == "collectors" || ev == "control" ||
             ev == "control_start" || ev == "verdict" || ev == "wiring_prior") {
    // Known, not summarised here: `wirewise log` prints them as they are.
  } else {
    return false;
  }
  return true;
}

json rangesJson(const std::vector<LogRange>& ranges) {
  json out = json::array();
  for (const auto& r : ranges)
    out.push_back({{"coll", r.coll}, {"min_bytes", r.minBytes}, {"max_bytes", r.maxBytes}, {"algo", r.algo},
                   {"proto", r.proto}, {"channels", r.channels}});
  return out;
}

json optJson(const std::optional<uint64_t>& v) { return v ? json(*v) : json(nullptr); }

const char* changeName(Crossover::Change c) {
  switch (c) {
    case Crossover::Change::Moved:
      return "moved";
    case Crossover::Change::Appeared:
      return "appeared";
    case Crossover::Change::Gone:
      return "gone";
  }
  return "?";
}

// The coordinator's side of one communicator: committed tables as they changed, exploration, adapt events.
json coordinatorJson(const CommSummary& c) {
  json committed = json::array();
  for (const auto& ch : committedHistory(c)) {
    const CommittedTable& t = ch.table;
    json x = json::array(), chans = json::array(), text = json::array();
    for (const auto& k : ch.crossovers) {
      x.push_back({{"coll", k.coll},
                   {"below", k.below},
                   {"above", k.above},
                   {"change", changeName(k.change)},
                   {"old_bytes", k.change == Crossover::Change::Appeared ? json(nullptr) : json(k.oldAt)},
                   {"new_bytes", k.change == Crossover::Change::Gone ? json(nullptr) : json(k.newAt)}});
      text.push_back(crossoverText(k, t));
    }
    for (const auto& k : ch.channels) {
      chans.push_back({{"coll", k.coll}, {"algo", k.algo}, {"proto", k.proto}, {"from", k.from}, {"to", k.to},
                       {"min_bytes", k.minBytes}, {"max_bytes", k.maxBytes}});
      text.push_back(channelText(k));
    }
    committed.push_back({{"index", t.index}, {"boundary", t.boundary}, {"next", optJson(t.next)},
                         {"reason", t.reason}, {"digest", t.digest}, {"from_probe", t.probe},
                         {"changed_colls", ch.colls}, {"ranges", rangesJson(t.ranges)}, {"crossovers", x},
                         {"channel_changes", chans}, {"changes", text}});
  }
  Exploration e = explorationOf(c);
  json probed = json::array();
  for (const auto& r : e.ranges)
    probed.push_back({{"coll", r.coll}, {"min_bytes", r.minBytes}, {"max_bytes", r.maxBytes}, {"count", r.count},
                      {"decisions", r.decisions}});
  json adapt = json::object();
  for (const auto& [kind, n] : adaptCounts(c)) adapt[kind] = n;
  return {{"tables", c.coordTables.size()},
          {"committed", committed},
          {"probe_verdicts", e.verdicts},
          {"probes", e.probes},
          {"first_probe_index", optJson(e.firstIndex)},
          {"last_probe_index", optJson(e.lastIndex)},
          {"probed", probed},
          {"adapt_events", c.adapts.size()},
          {"adapt", adapt}};
}

std::string coordinatorText(const CommSummary& c) {
  if (c.coordTables.empty() && c.adapts.empty()) return "";
  std::string out;
  const auto history = committedHistory(c);
  if (!history.empty())
    out += "  the coordinator's committed tables as they changed (probes left out: see explore):\n";
  for (const auto& ch : history) {
    const CommittedTable& t = ch.table;
    out += fmt::format("  verdict index {}, collective {}: {}{}, digest {}\n", t.index, t.boundary, t.reason,
                       t.probe ? " (probed sizes at their committed choice)" : "", t.digest);
    for (const auto& coll : ch.colls) {
      bool any = false;
      for (const auto& r : t.ranges)
        if (r.coll == coll) {
          out += fmt::format("            {:<14} {:<20} {}\n", r.coll, sizeSpan(r.minBytes, r.maxBytes),
                             decisionText(r.algo, r.proto, r.channels));
          any = true;
        }
      if (!any) out += fmt::format("            {:<14} NCCL's own choice at every size\n", coll);
    }
    for (const auto& k : ch.crossovers) out += fmt::format("          > {}\n", crossoverText(k, t));
    for (const auto& k : ch.channels) out += fmt::format("          > {}\n", channelText(k));
  }
  Exploration e = explorationOf(c);
  if (e.verdicts == 0) {
    out += "  explore no probe verdicts\n";
  } else {
    out += fmt::format("  explore {} probe verdict{} (index {} to {}), {} probe{}\n", e.verdicts,
                       e.verdicts == 1 ? "" : "s", *e.firstIndex, *e.lastIndex, e.probes, e.probes == 1 ? "" : "s");
    for (const auto& r : e.ranges) {
      std::string ds;
      for (const auto& d : r.decisions) ds += (ds.empty() ? "" : ", ") + d;
      out += fmt::format("            {:<14} {:<20} {} probe{}: {}\n", r.coll, sizeSpan(r.minBytes, r.maxBytes),
                         r.count, r.count == 1 ? "" : "s", ds);
    }
  }
  std::string kinds;
  for (const auto& [kind, n] : adaptCounts(c)) kinds += fmt::format("{}{} {}", kinds.empty() ? ": " : ", ", n, kind);
  out += fmt::format("  adapt   {} event{}{}\n", c.adapts.size(), c.adapts.size() == 1 ? "" : "s", kinds);
  return out;
}

}  // namespace

std::string railShiftText(const LogRailShift& r) {
  std::string rails;
  for (const auto& x : r.rails) {
    std::string one = fmt::format("{} {:.0f}%", x.label, x.after * 100);
    if (!x.up) one += " down";
    if (x.up) one += fmt::format(" {:.2f} GB/s", x.rateGbps);
    if (x.rttUs > 0) one += " rtt " + durationText(x.rttUs);
    if (x.baselineRttUs > 0 && x.rttUs >= 2 * x.baselineRttUs)
      one += " (baseline " + durationText(x.baselineRttUs) + ")";
    if (x.retransmits > 0) one += fmt::format(" {} retrans", x.retransmits);
    rails += (rails.empty() ? "" : ", ") + one;
  }
  return fmt::format("rail shift, pid {}, conn {} to {}: {}; now {}{}", r.pid, r.conn, r.peer.empty() ? "?" : r.peer,
                     r.reason.empty() ? "shares moved" : r.reason, rails,
                     r.resent > 0 ? fmt::format("; {} chunks resent", r.resent) : "");
}

int collOrder(const std::string& name) {
  int c = parseColl(name);
  static constexpr int kOrder[kNumCollTypes] = {3, 4, 1, 2, 0};
  return c >= 0 && c < kNumCollTypes ? kOrder[c] : kNumCollTypes;
}

std::vector<ObservedRow> CommSummary::observed() const {
  std::vector<ObservedRow> out;
  for (const auto& [key, row] : rows) out.push_back(row);
  return out;
}

void addLog(std::istream& in, LogSummary* s) {
  std::string line;
  while (std::getline(in, line)) {
    ++s->lines;
    // getline sets eof only when the line ended without a newline: the last line, cut short or just unfinished.
    const bool unterminated = in.eof();
    if (line.find_first_not_of(" \t\r") == std::string::npos) continue;
    json e = json::parse(line, nullptr, /*allow_exceptions=*/false);
    bool ok = e.is_object() && e.contains("event") && e.at("event").is_string();
    if (ok) {
      try {
        if (addEvent(e, s))
          ++s->events;
        else
          ++s->unknown;
      } catch (const json::exception&) {
        ok = false;
      }
    }
    if (!ok) {
      ++s->malformed;
      if (s->malformedLines.size() < kMaxMalformedListed) s->malformedLines.push_back(s->lines);
      if (unterminated) s->cutLines.push_back(s->lines);
    }
  }
}

nlohmann::json summaryJson(const LogSummary& s) {
  json out = {{"lines", s.lines}, {"events", s.events}, {"malformed", s.malformed}, {"unknown", s.unknown}};
  out["processes"] = json::array();
  for (const auto& p : s.processes)
    out["processes"].push_back({{"pid", p.pid}, {"host", p.host}, {"version", p.version}, {"mode", p.mode},
                                {"config", p.config}, {"log", p.log}, {"stopped", p.stopped},
                                {"log_dropped", p.logDropped}});
  out["config_problems"] = json::array();
  for (const auto& p : s.problems)
    out["config_problems"].push_back(
        {{"file", p.file}, {"line", p.line}, {"reason", p.reason}, {"warning", p.warningOnly}});
  out["rail_shifts"] = json::array();
  for (const auto& r : s.railShifts) {
    json rails = json::array();
    for (const auto& x : r.rails)
      rails.push_back({{"label", x.label}, {"before", x.before}, {"after", x.after}, {"was_up", x.wasUp}, {"up", x.up},
                       {"rate_gbps", x.rateGbps}, {"rtt_us", x.rttUs}, {"baseline_rtt_us", x.baselineRttUs},
                       {"retransmits", x.retransmits}});
    out["rail_shifts"].push_back({{"pid", r.pid}, {"host", r.host}, {"conn", r.conn}, {"peer", r.peer},
                                  {"reason", r.reason}, {"ts", r.ts}, {"rails", rails}, {"text", railShiftText(r)}});
  }
  out["comms"] = json::array();
  for (const auto& c : s.comms) {
    json jc = {{"comm", c.id}, {"summaries", c.summaries}};
    jc["inits"] = json::array();
    for (const auto& i : c.inits)
      jc["inits"].push_back({{"face", i.face}, {"abi", i.abi}, {"nranks", i.nRanks}, {"nnodes", i.nNodes},
                             {"rank", i.rank}, {"pid", i.pid}});
    jc["tables"] = json::array();
    for (const auto& t : c.tables) {
      json ranges = json::array();
      for (const auto& r : t.ranges)
        ranges.push_back({{"coll", r.coll}, {"min_bytes", r.minBytes}, {"max_bytes", r.maxBytes}, {"algo", r.algo},
                          {"proto", r.proto}, {"channels", r.channels}});
      jc["tables"].push_back({{"seq", t.seq}, {"pid", t.pid}, {"reason", t.reason}, {"source", t.source},
                              {"digest", t.digest}, {"ranges", ranges}});
    }
    jc["coordinator"] = coordinatorJson(c);
    jc["observed"] = json::array();
    for (const auto& o : c.observed())
      jc["observed"].push_back({{"coll", o.coll}, {"bucket", o.bucket}, {"min_bytes", o.minBytes},
                                {"max_bytes", o.maxBytes}, {"algo", o.algo}, {"proto", o.proto},
                                {"channels", o.channels}, {"count", o.count}, {"p50_us", o.p50Us()},
                                {"p99_max_us", o.p99Max}, {"busbw_gbs", o.busBwGBs()}});
    jc["drops"] = {{"pool", c.drops.pool}, {"ring", c.drops.ring}, {"incomplete", c.drops.incomplete},
                   {"orphan", c.drops.orphan}};
    jc["finalize"] = json::array();
    for (const auto& f : c.finalizes)
      jc["finalize"].push_back({{"face", f.face}, {"pid", f.pid}, {"rank", f.rank}, {"collectives", f.collectives},
                                {"applied", f.applied}, {"kept", f.kept}, {"samples", f.samples}});
    out["comms"].push_back(std::move(jc));
  }
  return out;
}

std::string summaryText(const LogSummary& s) {
  std::string out = fmt::format("{} lines: {} events, {} malformed, {} of unknown type\n", s.lines, s.events,
                                s.malformed, s.unknown);
  for (const auto& p : s.processes)
    out += fmt::format("process {} on {}: wirewise {}, mode {}, config {}{}\n", p.pid, p.host.empty() ? "?" : p.host,
                       p.version.empty() ? "?" : p.version, p.mode.empty() ? "?" : p.mode,
                       p.config.empty() ? "(none)" : p.config,
                       fmt::format("{}, {} log lines dropped", p.stopped ? ", stopped" : ", no plugin_stop", p.logDropped));
  for (const auto& p : s.problems)
    out += fmt::format("config {}: {}:{}: {}\n", p.warningOnly ? "warning" : "problem", p.file, p.line, p.reason);
  for (const auto& r : s.railShifts) out += railShiftText(r) + "\n";
  for (const auto& c : s.comms) {
    out += fmt::format("\ncommunicator {}\n", c.id);
    for (const auto& i : c.inits)
      out += fmt::format("  init    {} face, {}, {} ranks, {} nodes{}, pid {}\n", i.face, i.abi, i.nRanks, i.nNodes,
                         i.rank >= 0 ? fmt::format(", rank {}", i.rank) : "", i.pid);
    for (const auto& t : c.tables) {
      out += fmt::format("  table   seq {}: {} ({}), digest {}, {} ranges\n", t.seq, t.reason, t.source, t.digest,
                         t.ranges.size());
      for (const auto& r : t.ranges)
        out += fmt::format("            {} {} {}\n", r.coll, bytesRangeText(r.minBytes, r.maxBytes),
                           decisionText(r.algo, r.proto, r.channels));
    }
    out += coordinatorText(c);
    auto rows = c.observed();
    if (!rows.empty()) {
      out += fmt::format("  observed over {} summaries (p50: count-weighted mean of interval medians; p99: max):\n",
                         c.summaries);
      out += fmt::format("            {:<14} {:<24} {:<18} {:>10} {:>10} {:>10} {:>11}\n", "coll", "sizes",
                         "algo/proto ch", "count", "p50 us", "p99 us", "busbw GB/s");
      for (const auto& o : rows)
        out += fmt::format("            {:<14} {:<24} {:<18} {:>10} {:>10.1f} {:>10.1f} {:>11.2f}\n", o.coll,
                           bytesRangeText(o.minBytes, o.maxBytes),
                           fmt::format("{}/{} ch={}", o.algo, o.proto, o.channels),
                           o.count, o.p50Us(), o.p99Max, o.busBwGBs());
    }
    out += fmt::format("  drops   {} (pool {}, ring {}, incomplete {}, orphan {})\n", c.drops.total(), c.drops.pool,
                       c.drops.ring, c.drops.incomplete, c.drops.orphan);
    for (const auto& f : c.finalizes) {
      if (f.face == "tuner")
        out += fmt::format("  final   tuner, pid {}: {} collectives, {} applied, {} kept\n", f.pid, f.collectives,
                           f.applied, f.kept);
      else
        out += fmt::format("  final   {}{}, pid {}: {} collectives, {} samples\n", f.face,
                           f.rank >= 0 ? fmt::format(" rank {}", f.rank) : "", f.pid, f.collectives, f.samples);
    }
    if (c.finalizes.empty()) out += "  final   (no comm_finalize: the process ended or the log was cut short)\n";
  }
  return out;
}

}  // namespace wirewise::tools
