#include "tools/log_summary.h"

#include <fmt/core.h>

#include <algorithm>
#include <cstdio>

#include "adaptive/types.h"
#include "common/settings.h"
#include "common/units.h"
#include "tools/cli_util.h"
#include "tools/log_history.h"
#include "tools/log_savings.h"

namespace wirewise::tools {
namespace {

constexpr size_t kMaxMalformedListed = 10;

using nlohmann::json;

CoordTable coordTableOf(const logev::CoordinatorTable& t, const std::string& ts) {
  return {t.index, t.boundary, t.next, t.probe, t.probes, t.ranges, t.reason, t.digest, ts};
}

AdaptEvent adaptOf(const logev::Adapt& e, const std::string& ts, uint64_t line) {
  AdaptEvent a;
  a.index = e.index, a.boundary = e.boundary, a.order = line;
  a.kind = e.kind, a.coll = e.coll, a.from = e.from, a.to = e.to;
  a.fromNccl = e.fromNccl.value_or(""), a.reason = e.reason, a.ts = ts;
  a.minBytes = e.minBytes, a.maxBytes = e.maxBytes;
  a.beforeUs = e.beforeUs, a.afterUs = e.afterUs;
  a.beforeBusBw = e.beforeBusBwGBs, a.afterBusBw = e.afterBusBwGBs;
  if (e.detector) {
    a.hasDetector = true;
    a.statistic = e.detector->statistic, a.threshold = e.detector->threshold, a.shift = e.detector->shift;
  }
  if (e.cause) a.cause = e.cause->text;
  if (e.candidates)
    for (const logev::Candidate& c : *e.candidates) a.candidates.emplace_back(c.decision, c.us);
  a.links = e.links;
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

// The settings plugin_start echoes that the summary shows.
std::string settingOf(const logev::PluginStart& p, const char* name) {
  auto it = p.settings.find(name);
  return it == p.settings.end() ? "" : it->second;
}

// Every event is read into its struct (common/log_events.h) before anything is changed, so a line that
// throws halfway leaves no trace. Returns false for an unknown event type.
bool addEvent(const json& e, logev::EventKind kind, LogSummary* s) {
  using logev::EventKind;
  const logev::Envelope env = e.get<logev::Envelope>();
  const int64_t pid = env.pid;
  const std::optional<int64_t> ms = tsMillis(env.ts);
  if (ms && (!s->firstMs || *ms < *s->firstMs)) s->firstMs = *ms, s->firstTs = env.ts;
  if (ms && (!s->lastMs || *ms > *s->lastMs)) s->lastMs = *ms, s->lastTs = env.ts;
  switch (kind) {
    case EventKind::PluginStart: {
      const auto x = e.get<logev::PluginStart>();
      LogProcess in{pid,
                    x.host,
                    x.version,
                    settingOf(x, settingName(&Settings::mode)),
                    settingOf(x, settingName(&Settings::config)),
                    settingOf(x, settingName(&Settings::logPath)),
                    false,
                    0};
      LogProcess& p = processOf(s, pid);
      in.stopped = p.stopped, in.logDropped = p.logDropped;
      p = in;
      break;
    }
    case EventKind::PluginStop:
      processOf(s, pid).stopped = true;
      break;
    case EventKind::LogDropped: {
      const auto x = e.get<logev::LogDropped>();
      processOf(s, pid).logDropped += x.count;
      break;
    }
    case EventKind::ConfigProblem: {
      const auto x = e.get<logev::ConfigProblem>();
      s->problems.push_back({x.file, x.reason, x.line, x.warning});
      break;
    }
    case EventKind::CommInit: {
      const auto x = e.get<logev::CommInit>();
      commOf(s, x.comm).inits.push_back({x.face, x.abi, x.nRanks, x.nNodes, x.rank.value_or(-1), pid, x.commName.value_or("")});
      break;
    }
    case EventKind::Table:
      if (logev::isCoordinatorTable(e)) {
        const auto x = e.get<logev::CoordinatorTable>();
        CoordTable t = coordTableOf(x, env.ts);
        commOf(s, x.comm).coordTables.emplace(t.index, std::move(t));
      } else {
        const auto x = e.get<logev::RankTable>();
        commOf(s, x.comm).tables.push_back({x.seq, pid, x.reason, x.source, x.digest, env.ts, x.ranges});
      }
      break;
    case EventKind::Adapt: {
      const auto x = e.get<logev::Adapt>();
      AdaptEvent a = adaptOf(x, env.ts, s->lines);
      CommSummary& c = commOf(s, x.comm);
      if (c.adaptKeys.insert({a.index, a.kind, a.coll, a.minBytes, a.maxBytes}).second)
        c.adapts.push_back(std::move(a));
      break;
    }
    case EventKind::Summary: {
      const auto x = e.get<logev::Summary>();
      CommSummary& c = commOf(s, x.comm);
      ++c.summaries;
      for (const logev::SummaryRow& r : x.rows) {
        RowKey key{collOrder(r.coll), r.bucket, r.algo, r.proto, r.channels};
        ObservedRow& o = c.rows[key];
        o.coll = r.coll, o.algo = r.algo, o.proto = r.proto, o.bucket = r.bucket, o.channels = r.channels;
        o.count += r.count;
        o.minBytes = std::min(o.minBytes, r.minBytes);
        o.maxBytes = std::max(o.maxBytes, r.maxBytes);
        o.p50Sum += r.p50Us * static_cast<double>(r.count);
        o.busBwSum += r.busBwGBs * static_cast<double>(r.count);
        o.p99Max = std::max(o.p99Max, r.p99Us);
        c.timedRows.push_back({ms.value_or(-1), c.summaries, std::move(key), r.count, r.p50Us});
        BandwidthSeries& b = c.bandwidth[{collOrder(r.coll), r.bucket}];
        b.coll = r.coll, b.bucket = r.bucket, b.count += r.count;
        b.minBytes = std::min(b.minBytes, r.minBytes);
        b.maxBytes = std::max(b.maxBytes, r.maxBytes);
        if (ms) {
          BandwidthPoint& pt = b.bySecond[*ms / 1000];
          pt.busBwSum += r.busBwGBs * static_cast<double>(r.count);
          pt.count += r.count;
        }
      }
      c.drops.pool += x.drops.pool;
      c.drops.ring += x.drops.ring;
      c.drops.incomplete += x.drops.incomplete;
      c.drops.orphan += x.drops.orphan;
      break;
    }
    case EventKind::CommFinalize: {
      const auto x = e.get<logev::CommFinalize>();
      commOf(s, x.comm).finalizes.push_back({x.face, pid, x.rank.value_or(-1), x.collectives, x.applied.value_or(0),
                                             x.kept.value_or(0), x.samples.value_or(0), x.waitedUs.value_or(0)});
      break;
    }
    case EventKind::RailShift: {
      const auto x = e.get<logev::RailShift>();
      LogRailShift r{pid, x.conn, x.resentSinceLast, x.host.value_or(""), x.peer, x.reason, env.ts, {}};
      for (const logev::RailEntry& y : x.rails)
        r.rails.push_back({y.label, y.before, y.after, y.rateGbps, static_cast<double>(y.rttUs), y.baselineRttUs,
                           y.wasUp, y.up, y.retransmits});
      s->railShifts.push_back(std::move(r));
      break;
    }
    case EventKind::LinkHealth: {
      const auto x = e.get<logev::LinkHealth>();
      if (!ms) break;  // a state without a time cannot be placed
      for (const logev::LinkEntry& l : x.links) {
        LogLinkTrack& t = s->links[{pid, l.kind, l.id}];
        t.pid = pid, t.kind = l.kind, t.id = l.id;
        if (t.states.empty() || t.states.back().second != l.state) t.states.emplace_back(*ms, l.state);
        t.lastSeenMs = std::max(t.lastSeenMs, *ms);
        if (l.reason && !l.reason->empty()) t.reason = *l.reason;
      }
      break;
    }
    case EventKind::Control: {
      const auto x = e.get<logev::Control>();
      if (x.level != "warn") break;
      if (s->controlWarnings.size() < kMaxControlWarnings) s->controlWarnings.push_back({pid, env.ts, x.message});
      ++s->controlWarningCount;
      break;
    }
    case EventKind::Verdict: {
      const auto x = e.get<logev::Verdict>();
      ++commOf(s, x.comm).verdictsReceived;
      break;
    }
    case EventKind::NetPaths:
    case EventKind::CuptiKernels:
    case EventKind::Collectors:
    case EventKind::ControlStart:
    case EventKind::WiringPrior:
      // Known, not summarised here: `wirewise log` prints them as they are.
      break;
    case EventKind::Unknown:
      return false;
  }
  return true;
}

// Days since 1970-01-01 of a proleptic Gregorian date (Howard Hinnant's days_from_civil): timegm without
// the process's time zone or locale.
int64_t daysFromCivil(int64_t y, unsigned m, unsigned d) {
  y -= m <= 2;
  const int64_t era = (y >= 0 ? y : y - 399) / 400;
  const auto yoe = static_cast<unsigned>(y - era * 400);
  const unsigned doy = (153 * (m + (m > 2 ? -3 : 9)) + 2) / 5 + d - 1;
  const unsigned doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
  return era * 146097 + static_cast<int64_t>(doe) - 719468;
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
                         {"changed_colls", ch.colls}, {"ranges", t.ranges}, {"crossovers", x},
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
    out += fmt::format("  verdict index {}, collective {}: {}{}, digest {}{}\n", t.index, t.boundary, t.reason,
                       t.probe ? " (probed sizes at their committed choice)" : "", t.digest,
                       t.ts.empty() ? "" : ", logged " + t.ts);
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

std::optional<int64_t> tsMillis(const std::string& ts) {
  int y = 0, mo = 0, d = 0, h = 0, mi = 0, sec = 0, ms = 0, n = 0;
  if (std::sscanf(ts.c_str(), "%4d-%2d-%2dT%2d:%2d:%2d.%3dZ%n", &y, &mo, &d, &h, &mi, &sec, &ms, &n) != 7 ||
      static_cast<size_t>(n) != ts.size() || mo < 1 || mo > 12 || d < 1 || d > 31 || h < 0 || h > 23 || mi < 0 || mi > 59 ||
      sec < 0 || sec > 60 || ms < 0)
    return std::nullopt;
  const int64_t days = daysFromCivil(y, static_cast<unsigned>(mo), static_cast<unsigned>(d));
  return ((days * 24 + h) * 60 + mi) * 60000 + sec * 1000 + ms;
}

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
    const std::optional<logev::EventKind> kind = logev::lineKindOf(e);
    bool ok = kind.has_value();
    if (ok) {
      try {
        if (addEvent(e, *kind, s))
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
                             {"rank", i.rank}, {"pid", i.pid}, {"comm_name", i.commName}});
    jc["tables"] = json::array();
    for (const auto& t : c.tables) {
      jc["tables"].push_back({{"seq", t.seq}, {"pid", t.pid}, {"reason", t.reason}, {"source", t.source},
                              {"digest", t.digest}, {"ranges", t.ranges}});
    }
    jc["coordinator"] = coordinatorJson(c);
    jc["observed"] = json::array();
    for (const auto& o : c.observed())
      jc["observed"].push_back({{"coll", o.coll}, {"bucket", o.bucket}, {"min_bytes", o.minBytes},
                                {"max_bytes", o.maxBytes}, {"algo", o.algo}, {"proto", o.proto},
                                {"channels", o.channels}, {"count", o.count}, {"p50_us", o.p50Us()},
                                {"p99_max_us", o.p99Max}, {"busbw_gbs", o.busBwGBs()}});
    if (const SavingsEstimate e = estimateSavings(c); e.any() || e.bucketsUnknown > 0)
      jc["savings"] = {{"saved_us_per_rank", e.savedUs}, {"run_us_per_rank", e.runUs},
                       {"estimated_run_us_per_rank", e.estimatedRunUs}, {"buckets_estimated", e.bucketsEstimated},
                       {"buckets_unknown", e.bucketsUnknown}, {"ranks", e.ranks}};
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

namespace {

// One line of a summary section and who wrote it. Lines equal but for their writer fold into one.
struct WriterLine {
  std::string text;    // the line without its writer
  std::string single;  // the line as printed when one writer wrote it
  std::string body;    // lines printed under it either way (a table's ranges)
  int64_t who = 0;
  const char* whoName = "pid";  // "rank" where the writer's rank is known, else "pid"
};

// A writer: its rank where the line carries one, else its pid.
void setWriter(WriterLine* l, int64_t rank, int64_t pid) {
  l->who = rank >= 0 ? rank : pid;
  l->whoName = rank >= 0 ? "rank" : "pid";
}

// "0-15, 17, 20-31": sorted values as runs; past six runs, the rest as "...".
std::string runsText(std::vector<int64_t> v) {
  std::sort(v.begin(), v.end());
  v.erase(std::unique(v.begin(), v.end()), v.end());
  std::string out;
  size_t runs = 0;
  for (size_t i = 0; i < v.size();) {
    size_t j = i;
    while (j + 1 < v.size() && v[j + 1] == v[j] + 1) ++j;
    if (++runs > 6) return out + ", ...";
    if (!out.empty()) out += ", ";
    out += j == i ? fmt::format("{}", v[i]) : fmt::format("{}-{}", v[i], v[j]);
    i = j + 1;
  }
  return out;
}

// Folds lines that are equal but for their writer, in order of first appearance: 1,000 ranks' identical
// inits read as one "... x 1000 ranks 0-999", and a rank whose line differs keeps a line of its own (where
// ranks differ is what matters: a choice that differs across ranks hangs NCCL, NVIDIA/nccl #1136).
std::string foldedText(const std::vector<WriterLine>& lines) {
  std::vector<std::vector<size_t>> groups;
  std::map<std::string, size_t> groupOf;
  for (size_t i = 0; i < lines.size(); ++i) {
    const std::string key = std::string(lines[i].whoName) + "\n" + lines[i].text + "\n" + lines[i].body;
    auto [it, fresh] = groupOf.emplace(key, groups.size());
    if (fresh) groups.emplace_back();
    groups[it->second].push_back(i);
  }
  std::string out;
  for (const auto& g : groups) {
    const WriterLine& first = lines[g.front()];
    if (g.size() == 1) {
      out += first.single + "\n" + first.body;
      continue;
    }
    std::vector<int64_t> who;
    for (size_t i : g) who.push_back(lines[i].who);
    out += fmt::format("{} \u00d7 {} {}s {}\n", first.text, g.size(), first.whoName, runsText(who)) + first.body;
  }
  return out;
}

}  // namespace

std::string summaryText(const LogSummary& s) {
  std::string out = fmt::format("{} lines: {} events, {} malformed, {} of unknown type\n", s.lines, s.events,
                                s.malformed, s.unknown);
  if (s.firstMs && s.lastMs)
    out += fmt::format("wall clock {} to {} ({:.1f} s)\n", s.firstTs, s.lastTs,
                       static_cast<double>(*s.lastMs - *s.firstMs) / 1000);
  std::vector<WriterLine> procs;
  for (const auto& p : s.processes) {
    const std::string host = p.host.empty() ? "?" : p.host;
    const std::string rest = fmt::format(
        "wirewise {}, mode {}, config {}{}", p.version.empty() ? "?" : p.version, p.mode.empty() ? "?" : p.mode,
        p.config.empty() ? "(none)" : p.config,
        fmt::format("{}, {} log lines dropped", p.stopped ? ", stopped" : ", no plugin_stop", p.logDropped));
    procs.push_back({fmt::format("process on {}: {}", host, rest), fmt::format("process {} on {}: {}", p.pid, host, rest),
                     "", p.pid, "pid"});
  }
  out += foldedText(procs);
  for (const auto& p : s.problems)
    out += fmt::format("config {}: {}:{}: {}\n", p.warningOnly ? "warning" : "problem", p.file, p.line, p.reason);
  for (const auto& r : s.railShifts) out += railShiftText(r) + "\n";
  for (const auto& c : s.comms) {
    out += fmt::format("\ncommunicator {}\n", c.id);
    std::vector<WriterLine> inits;
    for (const auto& i : c.inits) {
      WriterLine l;
      l.text = fmt::format("  init    {} face, {}, {} ranks, {} nodes{}", i.face, i.abi, i.nRanks, i.nNodes,
                           i.commName.empty() ? "" : fmt::format(", name '{}'", i.commName));
      l.single = l.text + fmt::format("{}, pid {}", i.rank >= 0 ? fmt::format(", rank {}", i.rank) : "", i.pid);
      setWriter(&l, i.rank, i.pid);
      inits.push_back(std::move(l));
    }
    out += foldedText(inits);
    std::vector<WriterLine> tables;
    std::map<uint64_t, std::set<std::string>> versionsOfSeq;  // seq -> the different tables written for it
    for (const auto& t : c.tables) {
      WriterLine l;
      l.text = fmt::format("  table   seq {}: {} ({}), digest {}, {} ranges", t.seq, t.reason, t.source, t.digest,
                           t.ranges.size());
      l.single = l.text + fmt::format(", pid {}", t.pid);
      for (const auto& r : t.ranges)
        l.body += fmt::format("            {} {} {}\n", r.coll, bytesRangeText(r.minBytes, r.maxBytes),
                              decisionText(r.algo, r.proto, r.channels));
      setWriter(&l, -1, t.pid);
      versionsOfSeq[t.seq].insert(l.text + "\n" + l.body);
      tables.push_back(std::move(l));
    }
    out += foldedText(tables);
    for (const auto& [seq, versions] : versionsOfSeq)
      if (versions.size() > 1)
        out += fmt::format("  differs seq {}: {} different tables across processes (ranks that choose differently "
                           "can hang NCCL)\n",
                           seq, versions.size());
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
    out += savingsText(estimateSavings(c));
    out += fmt::format("  drops   {} (pool {}, ring {}, incomplete {}, orphan {})\n", c.drops.total(), c.drops.pool,
                       c.drops.ring, c.drops.incomplete, c.drops.orphan);
    std::vector<WriterLine> finals;
    for (const auto& f : c.finalizes) {
      WriterLine l;
      const std::string counts = f.face == "tuner" ? fmt::format("{} collectives, {} applied, {} kept", f.collectives,
                                                                 f.applied, f.kept)
                                                   : fmt::format("{} collectives, {} samples", f.collectives, f.samples);
      l.text = fmt::format("  final   {}: {}", f.face, counts);
      l.single = fmt::format("  final   {}{}, pid {}: {}", f.face, f.rank >= 0 ? fmt::format(" rank {}", f.rank) : "",
                             f.pid, counts);
      setWriter(&l, f.rank, f.pid);
      finals.push_back(std::move(l));
    }
    out += foldedText(finals);
    if (c.finalizes.empty()) out += "  final   (no comm_finalize: the process ended or the log was cut short)\n";
  }
  return out;
}

}  // namespace wirewise::tools
