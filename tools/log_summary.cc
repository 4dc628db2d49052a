#include "tools/log_summary.h"

#include <fmt/core.h>

#include <algorithm>

#include "adaptive/types.h"
#include "tools/cli_util.h"

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

int collOrder(const std::string& name) {
  int c = parseColl(name);
  // allreduce first, as NCCL users read it; unknown names last.
  static constexpr int kOrder[kNumCollTypes] = {3, 4, 1, 2, 0};
  return c >= 0 && c < kNumCollTypes ? kOrder[c] : kNumCollTypes;
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
  } else {
    return false;
  }
  return true;
}

}  // namespace

std::vector<ObservedRow> CommSummary::observed() const {
  std::vector<ObservedRow> out;
  for (const auto& [key, row] : rows) out.push_back(row);
  return out;
}

void addLog(std::istream& in, LogSummary* s) {
  std::string line;
  while (std::getline(in, line)) {
    ++s->lines;
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
  for (const auto& c : s.comms) {
    out += fmt::format("\ncommunicator {}\n", c.id);
    for (const auto& i : c.inits)
      out += fmt::format("  init    {} face, {}, {} ranks, {} nodes{}, pid {}\n", i.face, i.abi, i.nRanks, i.nNodes,
                         i.rank >= 0 ? fmt::format(", rank {}", i.rank) : "", i.pid);
    for (const auto& t : c.tables) {
      out += fmt::format("  table   seq {}: {} ({}), digest {}, {} ranges\n", t.seq, t.reason, t.source, t.digest,
                         t.ranges.size());
      for (const auto& r : t.ranges)
        out += fmt::format("            {} {} {}\n", r.coll, humanRange(r.minBytes, r.maxBytes),
                           decisionText(r.algo, r.proto, r.channels));
    }
    auto rows = c.observed();
    if (!rows.empty()) {
      out += fmt::format("  observed over {} summaries (p50: count-weighted mean of interval medians; p99: max):\n",
                         c.summaries);
      out += fmt::format("            {:<14} {:<24} {:<18} {:>10} {:>10} {:>10} {:>11}\n", "coll", "sizes",
                         "algo/proto ch", "count", "p50 us", "p99 us", "busbw GB/s");
      for (const auto& o : rows)
        out += fmt::format("            {:<14} {:<24} {:<18} {:>10} {:>10.1f} {:>10.1f} {:>11.2f}\n", o.coll,
                           humanRange(o.minBytes, o.maxBytes), fmt::format("{}/{} ch={}", o.algo, o.proto, o.channels),
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
