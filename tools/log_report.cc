#include "tools/log_report.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cmath>
#include <iterator>
#include <map>
#include <optional>

#include "common/text.h"
#include "common/units.h"
#include "tools/log_history.h"

namespace wirewise::tools {
namespace {

using Out = std::string;

template <class... Args>
void put(Out& out, fmt::format_string<Args...> f, Args&&... args) {
  fmt::format_to(std::back_inserter(out), f, std::forward<Args>(args)...);
}

// Charts are drawn in a 960-unit-wide viewBox and scale with the page; below 640 CSS pixels they stop
// shrinking and scroll sideways in their own box, so that their text stays legible on a phone.
constexpr double kWidth = 960, kLeft = 78, kRight = 12;
constexpr double kPlotWidth = kWidth - kLeft - kRight;
constexpr size_t kMaxEventRows = 300, kMaxSeries = 8, kMaxLinkTracks = 40, kMaxRailShiftRows = 100;
constexpr int64_t kMaxPoints = 480;  // per bandwidth series

constexpr std::string_view kStyle = R"(
body{font:14px/1.45 system-ui,-apple-system,"Segoe UI",sans-serif;color:#1d2329;margin:0 auto;max-width:1100px;padding:8px 14px 40px}
h1{font-size:22px;margin:12px 0 4px}h2{font-size:18px;margin:28px 0 6px;border-top:2px solid #d5dbe1;padding-top:12px}
h3{font-size:15px;margin:18px 0 4px}p{margin:4px 0}.muted{color:#5b6670}
.chart{overflow-x:auto}.chart svg{display:block;width:100%;min-width:640px;height:auto}
.scroll{overflow-x:auto}table{border-collapse:collapse;font-size:13px}
th,td{padding:3px 8px;border-bottom:1px solid #e2e6ea;text-align:left;vertical-align:top}
th{background:#f3f5f7}td.num{text-align:right;font-variant-numeric:tabular-nums}td.why{min-width:18em}
.legend{display:flex;flex-wrap:wrap;gap:4px 14px;margin:4px 0;font-size:13px}
.sw{display:inline-block;width:12px;height:12px;margin-right:5px;vertical-align:-1px;border:1px solid #0003}
.facts{display:flex;flex-wrap:wrap;gap:4px 18px}.facts b{font-variant-numeric:tabular-nums}
nav{display:flex;flex-wrap:wrap;gap:2px 14px}code{font-size:12.5px}
)";

std::string esc(std::string_view t) { return markupEscape(t); }

// ---- colours --------------------------------------------------------------------------------------------

// The algorithm picks the hue and the protocol the lightness, so that ring/ll and ring/simple read as
// relatives; NCCL's own choice is grey.
std::string decisionColor(const LogRange& r) {
  if (decisionKey(r) == logev::kNcclDecision) return "#cfd4d9";
  static const std::map<std::string, int, std::less<>> kHue = {
      {"ring", 212}, {"tree", 135}, {"collnet_direct", 28}, {"collnet_chain", 48},
      {"nvls", 275}, {"nvls_tree", 320}, {"pat", 2}};
  auto h = kHue.find(r.algo);
  const int hue = h != kHue.end() ? h->second : static_cast<int>(std::hash<std::string>{}(r.algo) % 360);
  const int light = r.proto == "ll" ? 74 : r.proto == "ll128" ? 58 : r.proto == "simple" ? 40 : 62;
  return fmt::format("hsl({},58%,{}%)", hue, light);
}

const char* stateColor(const std::string& state) {
  if (state == "up") return "#3b9a4b";
  if (state == "degraded") return "#e39a1c";
  if (state == "down") return "#d23c32";
  return "#9aa3ab";
}

constexpr const char* kSeriesColors[kMaxSeries] = {"#1f6fb5", "#d1572b", "#2e9b5a", "#8a4fbf",
                                                   "#c2931b", "#1b9aaa", "#b8336a", "#5a6470"};

// ---- axes -----------------------------------------------------------------------------------------------

// "1.5M", "40k", "900": collective counts on an axis.
std::string countLabel(double v) {
  if (v >= 1e6) return fmt::format("{:.3g}M", v / 1e6);
  if (v >= 1e4) return fmt::format("{:.3g}k", v / 1e3);
  return fmt::format("{:.0f}", v);
}

// "0.4 s", "90 s", "2.5 min", "1.2 h": elapsed time on an axis.
std::string elapsedLabel(double s) {
  if (s < 10) return fmt::format("{:.1f} s", s);
  if (s < 120) return fmt::format("{:.0f} s", s);
  if (s < 7200) return fmt::format("{:.3g} min", s / 60);
  return fmt::format("{:.3g} h", s / 3600);
}

// Five evenly spaced ticks along the x axis of a plot that starts at y = top and is `height` high.
template <class Label>
void xAxis(Out& out, double top, double height, double span, Label label, const char* title) {
  const double y = top + height;
  put(out, R"(<line x1="{}" y1="{:.1f}" x2="{}" y2="{:.1f}" stroke="#5b6670"/>)", kLeft, y, kWidth - kRight, y);
  for (int i = 0; i <= 4; ++i) {
    const double x = kLeft + kPlotWidth * i / 4;
    put(out, R"(<line x1="{:.1f}" y1="{:.1f}" x2="{:.1f}" y2="{:.1f}" stroke="#5b6670"/>)", x, y, x, y + 4);
    put(out, R"(<text x="{:.1f}" y="{:.1f}" text-anchor="{}" font-size="12">{}</text>)", x, y + 17,
        i == 0 ? "start" : i == 4 ? "end" : "middle", esc(label(span * i / 4)));
  }
  put(out, R"(<text x="{:.1f}" y="{:.1f}" text-anchor="middle" font-size="12" fill="#5b6670">{}</text>)",
      kLeft + kPlotWidth / 2, y + 33, esc(title));
}

// ---- the tables in force --------------------------------------------------------------------------------

struct Segment {
  uint64_t from = 0, to = 0;  // collectives [from, to)
  const CommittedTable* table = nullptr;
};

// Consecutive tables that decide `coll` alike become one segment: a verdict that changed another
// collective, or nothing, draws no edge here. The last table stays in force to the end: the coordinator
// logs a table when it changes, and members keep theirs until a verdict replaces it.
std::vector<Segment> segmentsOf(const std::vector<CommittedTable>& tables, const std::string& coll, uint64_t end) {
  std::vector<Segment> out;
  std::vector<std::string> last;
  for (size_t i = 0; i < tables.size(); ++i) {
    const CommittedTable& t = tables[i];
    const uint64_t to = i + 1 < tables.size() ? std::max(t.boundary, tables[i + 1].boundary)
                                              : std::max({t.boundary, t.next.value_or(0), end});
    std::vector<std::string> keys;
    for (const LogRange& r : cover(t.ranges, coll, 0, UINT64_MAX))
      keys.push_back(fmt::format("{}-{}:{}", r.minBytes, r.maxBytes, decisionKey(r)));
    if (!out.empty() && keys == last && !t.probe && !out.back().table->probe) {
      out.back().to = to;
      continue;
    }
    out.push_back({t.boundary, to, &t});
    last = std::move(keys);
  }
  return out;
}

// Sizes on a log2 axis from 1 KiB to twice the largest size the log mentions (at least 2 MiB, at most 16 GiB).
struct SizeAxis {
  double lo = 10, hi = 20;  // log2 of bytes
  double top = 0, height = 0;
  double y(double bytes) const {
    const double l = std::clamp(std::log2(std::max(bytes, 1.0)), lo, hi);
    return top + height * (1 - (l - lo) / (hi - lo));
  }
};

SizeAxis sizeAxisOf(const CommSummary& c, const std::vector<CommittedTable>& tables) {
  uint64_t biggest = 1 << 20;
  for (const CommittedTable& t : tables)
    for (const LogRange& r : t.ranges)
      if (r.maxBytes != UINT64_MAX) biggest = std::max(biggest, r.maxBytes);
  for (const auto& [key, b] : c.bandwidth) biggest = std::max(biggest, b.maxBytes);
  SizeAxis a;
  a.hi = std::min(34.0, std::ceil(std::log2(static_cast<double>(biggest) + 1)) + 1);  // a doubling of headroom
  return a;
}

void sizeTicks(Out& out, const SizeAxis& a) {
  const int step = a.hi - a.lo > 16 ? 4 : 2;
  for (int l = static_cast<int>(a.lo); l <= static_cast<int>(a.hi); l += step) {
    const double y = a.y(std::ldexp(1.0, l));
    put(out, R"(<line x1="{}" y1="{:.1f}" x2="{}" y2="{:.1f}" stroke="#00000018"/>)", kLeft, y, kWidth - kRight, y);
    put(out, R"(<text x="{}" y="{:.1f}" text-anchor="end" font-size="11">{}</text>)", kLeft - 5, y + 4,
        esc(bytesText(uint64_t{1} << l)));
  }
}

// An adapt event's marker: the detector fired; the table moved to a choice; anything else (hold, revert,
// deferred, kinds a later schema adds).
enum class Marker { Alarm, Switch, Other };

Marker markerOf(const std::string& kind) {
  if (kind == "alarm") return Marker::Alarm;
  if (kind == "commit" || kind == "recover" || kind == "calibrated") return Marker::Switch;
  return Marker::Other;
}

void marker(Out& out, const AdaptEvent& a, double x, double y) {
  std::string tip = fmt::format("{} at collective {} (verdict {}): {}", a.kind, a.boundary, a.index, a.reason);
  if (!a.links.empty()) tip += "\nunhealthy links: " + fmt::format("{}", fmt::join(a.links, "; "));
  const std::string title = fmt::format("<title>{}</title>", esc(tip));
  const Marker shape = markerOf(a.kind);
  if (!a.links.empty())  // a fault: a link was unhealthy when the policy decided
    put(out, R"(<circle class="fault" cx="{:.1f}" cy="{:.1f}" r="9" fill="none" stroke="#d23c32" stroke-width="2">{}</circle>)",
        x, y, title);
  if (shape == Marker::Alarm)
    put(out, R"(<path class="alarm" d="M{:.1f} {:.1f}l6 10h-12z" fill="#d23c32" stroke="#fff">{}</path>)", x, y - 6,
        title);
  else if (shape == Marker::Switch)
    put(out, R"(<circle class="commit" cx="{:.1f}" cy="{:.1f}" r="5" fill="#14532d" stroke="#fff">{}</circle>)", x,
        y, title);
  else
    put(out, R"(<rect class="note" x="{:.1f}" y="{:.1f}" width="8" height="8" fill="#5b6670" stroke="#fff">{}</rect>)",
        x - 4, y - 4, title);
}

void timeline(Out& out, const CommSummary& c, const std::vector<CommittedTable>& tables, size_t n) {
  std::vector<LogRange> all;
  for (const CommittedTable& t : tables) all.insert(all.end(), t.ranges.begin(), t.ranges.end());
  for (const AdaptEvent& a : c.adapts) all.push_back({a.coll, "", "", a.minBytes, a.maxBytes, 0});
  const std::vector<std::string> colls = collsOf(normalized(all));
  uint64_t end = 0;
  for (const CommittedTable& t : tables) end = std::max({end, t.boundary, t.next.value_or(0)});
  for (const LogFinalize& f : c.finalizes) end = std::max(end, f.collectives);
  for (const AdaptEvent& a : c.adapts) end = std::max(end, a.boundary);
  end = std::max<uint64_t>(end, 1);
  const auto x = [&](uint64_t seq) { return kLeft + kPlotWidth * static_cast<double>(std::min(seq, end)) / static_cast<double>(end); };

  constexpr double kLane = 170, kGap = 58, kTop = 24;
  const double height = kTop + static_cast<double>(colls.size()) * (kLane + kGap);
  put(out, R"(<div class="chart"><svg class="timeline" viewBox="0 0 {} {:.0f}" role="img" aria-label="tables in force">)",
      kWidth, height);
  put(out, R"~(<defs><pattern id="probe{}" width="6" height="6" patternUnits="userSpaceOnUse" patternTransform="rotate(45)">)~"
           R"(<rect width="6" height="6" fill="#fff8"/><line x1="0" y1="0" x2="0" y2="6" stroke="#1d2329" stroke-width="2"/></pattern></defs>)",
      n);
  SizeAxis axis = sizeAxisOf(c, tables);
  for (size_t li = 0; li < colls.size(); ++li) {
    const std::string& coll = colls[li];
    axis.top = kTop + static_cast<double>(li) * (kLane + kGap);
    axis.height = kLane;
    put(out, R"(<text x="{}" y="{:.1f}" font-size="13" font-weight="600">{}</text>)", kLeft, axis.top - 8, esc(coll));
    for (const Segment& s : segmentsOf(tables, coll, end)) {
      for (const LogRange& r : cover(s.table->ranges, coll, 0, UINT64_MAX)) {
        const double y0 = axis.y(static_cast<double>(r.maxBytes) + 1), y1 = axis.y(static_cast<double>(r.minBytes));
        if (y1 - y0 < 0.5) continue;  // entirely below 1 KiB or above the axis
        put(out, R"(<rect class="range" x="{:.1f}" y="{:.1f}" width="{:.1f}" height="{:.1f}" fill="{}"><title>{}</title></rect>)",
            x(s.from), y0, std::max(x(s.to) - x(s.from), 1.0), y1 - y0, decisionColor(r),
            esc(fmt::format("{} {}: {} for collectives {}-{} (verdict {}{})", coll, sizeSpan(r.minBytes, r.maxBytes),
                            decisionKey(r), s.from, s.to, s.table->index,
                            s.table->ts.empty() ? "" : ", logged " + s.table->ts)));
      }
      if (!s.table->probe) continue;
      auto ct = c.coordTables.find(s.table->index);
      if (ct == c.coordTables.end()) continue;
      for (const LogRange& p : ct->second.probes) {
        if (p.coll != coll) continue;
        const double y0 = axis.y(static_cast<double>(p.maxBytes) + 1), y1 = axis.y(static_cast<double>(p.minBytes));
        put(out, R"~(<rect class="probe" x="{:.1f}" y="{:.1f}" width="{:.1f}" height="{:.1f}" fill="url(#probe{})"><title>{}</title></rect>)~",
            x(s.from), y0, std::max(x(s.to) - x(s.from), 2.0), std::max(y1 - y0, 2.0), n,
            esc(fmt::format("probe {} {}: {} for collectives {}-{} (verdict {})", coll,
                            sizeSpan(p.minBytes, p.maxBytes), decisionKey(p), s.from, s.to, s.table->index)));
      }
    }
    sizeTicks(out, axis);
    for (const AdaptEvent& a : c.adapts)
      if (a.coll == coll)
        marker(out, a, x(a.boundary),
               (axis.y(static_cast<double>(a.minBytes)) + axis.y(static_cast<double>(a.maxBytes) + 1)) / 2);
    xAxis(out, axis.top, kLane, static_cast<double>(end), countLabel, "collectives of this communicator");
  }
  put(out, "</svg></div>\n");

  // The legend in HTML, so that it wraps on a narrow screen.
  std::map<std::string, std::string> seen;  // decision -> colour
  for (const CommittedTable& t : tables)
    for (const std::string& coll : colls)
      for (const LogRange& r : cover(t.ranges, coll, 0, UINT64_MAX)) {
        LogRange k = r;
        k.channels = 0;
        seen.emplace(crossoverLabel(k), decisionColor(k));
      }
  put(out, R"(<div class="legend">)");
  for (const auto& [label, color] : seen)
    put(out, R"(<span><i class="sw" style="background:{}"></i>{}</span>)", color, esc(label));
  put(out, R"~(<span><i class="sw" style="background:repeating-linear-gradient(45deg,#1d2329 0 2px,#fff 2px 5px)"></i>probed</span>)~"
           R"(<span>▲ alarm</span><span>● commit, recover, calibrated</span><span>■ hold, revert, deferred</span>)"
           R"(<span style="color:#d23c32">◯ a link was unhealthy</span></div>)");
}

// ---- explanations ---------------------------------------------------------------------------------------

void eventTable(Out& out, const CommSummary& c) {
  std::vector<const AdaptEvent*> rows;
  for (const AdaptEvent& a : c.adapts) rows.push_back(&a);
  std::stable_sort(rows.begin(), rows.end(), [](const AdaptEvent* a, const AdaptEvent* b) { return a->index < b->index; });
  if (rows.empty()) {
    put(out, "<p class=\"muted\">The policy took no decision in this log.</p>\n");
    return;
  }
  put(out, "<div class=\"scroll\"><table class=\"events\"><tr><th>verdict</th><th>from collective</th><th>kind</th>"
           "<th>sizes</th><th>change</th><th>why</th></tr>\n");
  for (size_t i = 0; i < rows.size() && i < kMaxEventRows; ++i) {
    const AdaptEvent& a = *rows[i];
    std::string why = a.reason;
    if (!a.cause.empty()) why += " (" + a.cause + ")";
    if (!a.links.empty()) why += fmt::format(" Unhealthy links: {}.", fmt::join(a.links, "; "));
    put(out, R"(<tr class="{}"><td class="num">{}</td><td class="num">{}</td><td>{}</td><td>{} {}</td><td>{} → {}</td><td class="why">{}</td></tr>)"
             "\n",
        esc(a.kind), a.index, a.boundary, esc(a.kind), esc(a.coll), esc(sizeSpan(a.minBytes, a.maxBytes)),
        esc(a.from), esc(a.to), esc(why));
  }
  put(out, "</table></div>\n");
  if (rows.size() > kMaxEventRows)
    put(out, "<p class=\"muted\">{} more decisions: <code>wirewise log explain</code> lists every one.</p>\n",
        rows.size() - kMaxEventRows);
}

// ---- bandwidth over time --------------------------------------------------------------------------------

// The sizes a series measured (both ends as observed, inclusive): "16 MiB", "1.5 KiB-4 KiB".
std::string observedSizes(const BandwidthSeries& b) {
  if (b.minBytes >= b.maxBytes) return bytesText(b.maxBytes);
  return roughBytesText(static_cast<double>(b.minBytes)) + "-" + roughBytesText(static_cast<double>(b.maxBytes));
}

void bandwidthChart(Out& out, const CommSummary& c) {
  std::vector<const BandwidthSeries*> series;
  for (const auto& [key, b] : c.bandwidth)
    if (!b.bySecond.empty()) series.push_back(&b);
  if (series.empty()) {
    put(out, "<p class=\"muted\">No measured collectives with a time stamp (the profiler face's summaries).</p>\n");
    return;
  }
  // The busiest buckets, shown in size order.
  std::stable_sort(series.begin(), series.end(), [](auto* a, auto* b) { return a->count > b->count; });
  const size_t hidden = series.size() > kMaxSeries ? series.size() - kMaxSeries : 0;
  series.resize(std::min(series.size(), kMaxSeries));
  std::sort(series.begin(), series.end(), [](auto* a, auto* b) {
    return std::pair(collOrder(a->coll), a->bucket) < std::pair(collOrder(b->coll), b->bucket);
  });
  int64_t t0 = INT64_MAX, t1 = INT64_MIN;
  for (const BandwidthSeries* b : series) {
    t0 = std::min(t0, b->bySecond.begin()->first);
    t1 = std::max(t1, b->bySecond.rbegin()->first);
  }
  // A day of 10-second summaries is 8,640 points per series: merged into at most kMaxPoints bins, weighted
  // by count, so that the page stays small and the line readable.
  const int64_t bin = std::max<int64_t>(1, (t1 - t0 + kMaxPoints) / kMaxPoints);
  std::vector<std::map<int64_t, BandwidthPoint>> binned(series.size());
  double top = 0;
  for (size_t i = 0; i < series.size(); ++i) {
    for (const auto& [sec, p] : series[i]->bySecond) {
      BandwidthPoint& q = binned[i][t0 + (sec - t0) / bin * bin];
      q.busBwSum += p.busBwSum, q.count += p.count;
    }
    for (const auto& [sec, p] : binned[i]) top = std::max(top, p.busBwGBs());
  }
  const double span = std::max<double>(static_cast<double>(t1 - t0), 1), yMax = top > 0 ? top * 1.1 : 1;
  constexpr double kTop = 14, kHeight = 240;
  put(out, R"(<div class="chart"><svg class="bandwidth" viewBox="0 0 {} {}" role="img" aria-label="bus bandwidth over time">)",
      kWidth, kTop + kHeight + 42);
  for (int i = 0; i <= 4; ++i) {
    const double y = kTop + kHeight * (1 - i / 4.0);
    put(out, R"(<line x1="{}" y1="{:.1f}" x2="{}" y2="{:.1f}" stroke="#00000018"/>)", kLeft, y, kWidth - kRight, y);
    put(out, R"(<text x="{}" y="{:.1f}" text-anchor="end" font-size="11">{:.3g} GB/s</text>)", kLeft - 5, y + 4,
        yMax * i / 4);
  }
  const auto px = [&](int64_t sec) { return kLeft + kPlotWidth * static_cast<double>(sec - t0) / span; };
  const auto py = [&](double v) { return kTop + kHeight * (1 - v / yMax); };
  for (size_t i = 0; i < series.size(); ++i) {
    const BandwidthSeries& b = *series[i];
    const std::string name = fmt::format("{} {}", b.coll, observedSizes(b));
    std::string points;
    for (const auto& [sec, p] : binned[i])
      fmt::format_to(std::back_inserter(points), "{:.1f},{:.1f} ", px(sec), py(p.busBwGBs()));
    put(out, R"(<polyline class="series" points="{}" fill="none" stroke="{}" stroke-width="2"><title>{}</title></polyline>)",
        points, kSeriesColors[i], esc(name));
    for (const auto& [sec, p] : binned[i])
      put(out, R"(<circle cx="{:.1f}" cy="{:.1f}" r="2.5" fill="{}"><title>{}: {:.3g} GB/s at +{} s ({} collectives)</title></circle>)",
          px(sec), py(p.busBwGBs()), kSeriesColors[i], esc(name), p.busBwGBs(), sec - t0, p.count);
  }
  xAxis(out, kTop, kHeight, span, elapsedLabel, "time since the first measurement");
  put(out, "</svg></div>\n<div class=\"legend\">");
  for (size_t i = 0; i < series.size(); ++i)
    put(out, R"(<span><i class="sw" style="background:{}"></i>{} {} ({} collectives)</span>)", kSeriesColors[i],
        esc(series[i]->coll), esc(observedSizes(*series[i])), series[i]->count);
  put(out, "</div>\n");
  if (hidden > 0) put(out, "<p class=\"muted\">{} quieter size buckets not drawn.</p>\n", hidden);
}

// ---- one communicator -----------------------------------------------------------------------------------

void commSection(Out& out, const CommSummary& c, size_t n) {
  std::string name;
  int64_t ranks = 0, nodes = 0;
  for (const LogInit& i : c.inits) {
    if (name.empty()) name = i.commName;
    ranks = std::max(ranks, i.nRanks), nodes = std::max(nodes, i.nNodes);
  }
  uint64_t calls = 0, applied = 0, waited = 0, waitedMax = 0, tuners = 0;
  for (const LogFinalize& f : c.finalizes)
    if (f.face == "tuner") {
      ++tuners;
      calls = std::max(calls, f.collectives), applied = std::max(applied, f.applied);
      waited += f.waitedUs, waitedMax = std::max(waitedMax, f.waitedUs);
    }
  const Exploration x = explorationOf(c);
  put(out, R"(<section class="comm" id="comm-{}"><h2>Communicator {}{}</h2>)", esc(c.id), esc(c.id),
      name.empty() ? "" : " · " + esc(name));
  put(out, R"(<div class="facts"><span>ranks <b>{}</b></span><span>nodes <b>{}</b></span>)"
           R"(<span>tuner calls <b>{}</b></span><span>changed by the table <b>{}</b></span>)"
           R"(<span>verdicts <b>{}</b></span><span>of them probing <b>{}</b></span><span>decisions <b>{}</b></span></div>)"
           "\n",
      ranks, nodes, calls, applied, x.verdicts, x.probes, c.adapts.size());

  put(out, "<h3>Tables in force</h3>\n");
  const std::vector<CommittedTable> tables = tablesInForce(c);
  if (tables.empty()) put(out, "<p class=\"muted\">No table was logged: NCCL's own choices stood throughout.</p>\n");
  else timeline(out, c, tables, n);

  put(out, "<h3>Decisions and why</h3>\n");
  eventTable(out, c);

  put(out, "<h3>Bus bandwidth per size bucket</h3>\n");
  bandwidthChart(out, c);

  put(out, "<h3>Control plane</h3>\n");
  if (tuners == 0) {
    put(out, "<p class=\"muted\">No tuner finalized this communicator in the log (still running, or cut short).</p>\n");
  } else {
    put(out, "<p class=\"waits\">Verdicts that changed the table, logged over all processes: <b>{}</b>. "
             "Time <code>getCollInfo</code> waited at boundaries for a verdict: <b>{}</b> over {} tuner(s), "
             "at most <b>{}</b> in one.</p>\n",
        c.verdictsReceived, esc(durationText(static_cast<double>(waited))), tuners,
        esc(durationText(static_cast<double>(waitedMax))));
  }
  put(out, "</section>\n");
}

// ---- the job's links ------------------------------------------------------------------------------------

std::string hostOf(const LogSummary& s, int64_t pid) {
  for (const LogProcess& p : s.processes)
    if (p.pid == pid && !p.host.empty()) return p.host;
  return fmt::format("pid {}", pid);
}

void linkSection(Out& out, const LogSummary& s) {
  put(out, "<section id=\"links\"><h2>Link health</h2>\n");
  std::vector<const LogLinkTrack*> tracks;
  for (const auto& [key, t] : s.links) tracks.push_back(&t);
  const auto troubled = [](const LogLinkTrack* t) {
    return std::any_of(t->states.begin(), t->states.end(), [](const auto& st) { return st.second != "up"; });
  };
  std::stable_sort(tracks.begin(), tracks.end(), [&](auto* a, auto* b) { return troubled(a) > troubled(b); });
  if (tracks.empty() || !s.firstMs) {
    put(out, "<p class=\"muted\">No link collector reported (<code>link_health</code> events).</p>\n");
  } else {
    const size_t hidden = tracks.size() > kMaxLinkTracks ? tracks.size() - kMaxLinkTracks : 0;
    tracks.resize(std::min(tracks.size(), kMaxLinkTracks));
    const double t0 = static_cast<double>(*s.firstMs), span = std::max<double>(static_cast<double>(*s.lastMs) - t0, 1);
    constexpr double kRow = 18, kTop = 6;
    const double height = kTop + static_cast<double>(tracks.size()) * kRow;
    put(out, R"(<div class="chart"><svg class="links" viewBox="0 0 {} {:.0f}" role="img" aria-label="link health over time">)",
        kWidth, height + 42);
    const double left = 200, width = kWidth - left - kRight;
    const auto px = [&](int64_t ms) { return left + width * (static_cast<double>(ms) - t0) / span; };
    for (size_t i = 0; i < tracks.size(); ++i) {
      const LogLinkTrack& t = *tracks[i];
      const double y = kTop + static_cast<double>(i) * kRow;
      put(out, R"(<text x="{}" y="{:.1f}" text-anchor="end" font-size="11">{}</text>)", left - 6, y + 12,
          esc(fmt::format("{} {} {}", hostOf(s, t.pid), t.kind, t.id)));
      for (size_t k = 0; k < t.states.size(); ++k) {
        const int64_t from = t.states[k].first, to = k + 1 < t.states.size() ? t.states[k + 1].first : t.lastSeenMs;
        put(out, R"(<rect class="state {}" x="{:.1f}" y="{:.1f}" width="{:.1f}" height="{}" fill="{}"><title>{}</title></rect>)",
            esc(t.states[k].second), px(from), y + 2, std::max(px(to) - px(from), 2.0), kRow - 5,
            stateColor(t.states[k].second),
            esc(fmt::format("{} {}: {} from +{:.1f} s{}", t.kind, t.id, t.states[k].second,
                            (static_cast<double>(from) - t0) / 1000, t.reason.empty() ? "" : " (" + t.reason + ")")));
      }
    }
    put(out, R"(<line x1="{}" y1="{:.1f}" x2="{}" y2="{:.1f}" stroke="#5b6670"/>)", left, height, kWidth - kRight, height);
    for (int i = 0; i <= 4; ++i)
      put(out, R"(<text x="{:.1f}" y="{:.1f}" text-anchor="{}" font-size="12">{}</text>)", left + width * i / 4,
          height + 17, i == 0 ? "start" : i == 4 ? "end" : "middle", esc(elapsedLabel(span / 1000 * i / 4)));
    put(out, "</svg></div>\n<div class=\"legend\">");
    for (const char* st : {"up", "degraded", "down"})
      put(out, R"(<span><i class="sw" style="background:{}"></i>{}</span>)", stateColor(st), st);
    put(out, "</div>\n");
    if (hidden > 0) put(out, "<p class=\"muted\">{} more links, up throughout, not drawn.</p>\n", hidden);
  }
  if (!s.railShifts.empty()) {
    put(out, "<h3>Rail shifts of the net plugin</h3>\n<div class=\"scroll\"><table class=\"rails\"><tr><th>time</th>"
             "<th>host</th><th>connection</th><th>what moved</th></tr>\n");
    for (size_t i = 0; i < s.railShifts.size() && i < kMaxRailShiftRows; ++i) {
      const LogRailShift& r = s.railShifts[i];
      put(out, "<tr><td>{}</td><td>{}</td><td>{} to {}</td><td class=\"why\">{}</td></tr>\n", esc(r.ts),
          esc(r.host.empty() ? hostOf(s, r.pid) : r.host), r.conn, esc(r.peer), esc(r.reason));
    }
    put(out, "</table></div>\n");
  }
  put(out, "</section>\n");
}

void header(Out& out, const LogSummary& s, const ReportOptions& o) {
  put(out, "<h1>wirewise report</h1>\n<p class=\"muted\">{} · {} line(s), {} event(s)",
      esc(fmt::format("{}", fmt::join(o.files, ", "))), s.lines, s.events);
  if (s.malformed > 0) put(out, ", {} malformed line(s) skipped", s.malformed);
  if (s.firstMs && s.lastMs)
    put(out, " · {} to {} ({:.1f} s)", esc(s.firstTs), esc(s.lastTs),
        static_cast<double>(*s.lastMs - *s.firstMs) / 1000);
  put(out, "</p>\n");
  if (!s.processes.empty()) {
    put(out, "<div class=\"scroll\"><table class=\"procs\"><tr><th>host</th><th>pid</th><th>version</th><th>mode</th>"
             "<th>config</th></tr>\n");
    for (const LogProcess& p : s.processes)
      put(out, "<tr><td>{}</td><td class=\"num\">{}</td><td>{}</td><td>{}</td><td>{}</td></tr>\n", esc(p.host), p.pid,
          esc(p.version), esc(p.mode), esc(p.config));
    put(out, "</table></div>\n");
  }
  if (s.controlWarningCount > 0) {
    put(out, "<h3>Control-plane warnings ({})</h3>\n<ul class=\"warnings\">\n", s.controlWarningCount);
    for (const LogControlWarning& w : s.controlWarnings)
      put(out, "<li>{} {}: {}</li>\n", esc(w.ts), esc(hostOf(s, w.pid)), esc(w.message));
    put(out, "</ul>\n");
  }
  if (!s.comms.empty()) {
    put(out, "<nav>");
    for (const CommSummary& c : s.comms) put(out, "<a href=\"#comm-{}\">{}</a>\n", esc(c.id), esc(c.id));
    put(out, "<a href=\"#links\">links</a></nav>\n");
  }
}

}  // namespace

std::string reportHtml(const LogSummary& s, const ReportOptions& o) {
  Out out;
  put(out, "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
           "<meta name=\"viewport\" content=\"width=device-width,initial-scale=1\">"
           "<title>wirewise report</title><style>{}</style></head><body>\n",
      kStyle);
  header(out, s, o);
  if (s.comms.empty()) put(out, "<p class=\"muted\">No communicator appears in this log.</p>\n");
  for (size_t i = 0; i < s.comms.size(); ++i) commSection(out, s.comms[i], i);
  linkSection(out, s);
  put(out, "<p class=\"muted\">Times and bandwidths are as the plugin measured and logged them.</p>\n</body></html>\n");
  return out;
}

}  // namespace wirewise::tools
