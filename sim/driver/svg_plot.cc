// plotSvg: one self-contained SVG (no scripts, no external references) of per-step comm time per mode,
// with fault windows shaded and labelled and wirewise's decision changes ticked along the top.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <string>
#include <utility>
#include <vector>

#include "common/text.h"
#include "sim/driver/driver.h"
#include "sim/model/truth.h"

namespace wirewise::sim {
namespace {

constexpr double kW = 1200, kH = 700;
constexpr double kLeft = 80, kRight = 200, kTop = 60, kBottom = 60;
constexpr const char* kColors[kNumSimModes] = {"#d62728", "#7f7f7f", "#2ca02c", "#1f77b4"};
constexpr const char* kDash[kNumSimModes] = {"", "6,4", "2,3", ""};

std::string num(double v) {
  char b[32];
  std::snprintf(b, sizeof b, "%.1f", v);
  return b;
}

// A "nice" axis step near range/6: 1, 2 or 5 times a power of ten.
double niceStep(double range) {
  const double raw = range / 6.0;
  if (!(raw > 0)) return 1;
  const double p = std::pow(10.0, std::floor(std::log10(raw)));
  for (double m : {1.0, 2.0, 5.0, 10.0})
    if (raw <= m * p) return m * p;
  return 10 * p;
}

// The windows in which a fault is active, from the model's own rule (flaps give one window per "on" phase).
std::vector<std::pair<int, int>> windows(const Fault& f, int steps) {
  std::vector<std::pair<int, int>> w;
  for (int s = 0; s < steps; ++s) {
    if (!faultActiveAt(f, s)) continue;
    if (!w.empty() && w.back().second == s)
      w.back().second = s + 1;
    else
      w.emplace_back(s, s + 1);
  }
  return w;
}

}  // namespace

std::string plotSvg(const SimResult& r) {
  const int steps = std::max(1, r.steps);
  double ymax = 0;
  for (const ModeResult& m : r.modes)
    for (double v : m.stepCommUs) ymax = std::max(ymax, v);
  ymax = ymax > 0 ? ymax * 1e-3 * 1.08 : 1.0;  // ms
  const double pw = kW - kLeft - kRight, ph = kH - kTop - kBottom;
  auto x = [&](double step) { return kLeft + pw * step / steps; };
  auto y = [&](double ms) { return kTop + ph * (1.0 - ms / ymax); };

  std::string s;
  s += "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n";
  s += "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"1200\" height=\"700\" viewBox=\"0 0 1200 700\" "
       "font-family=\"sans-serif\" font-size=\"12\">\n";
  s += "<rect x=\"0\" y=\"0\" width=\"1200\" height=\"700\" fill=\"#ffffff\"/>\n";
  s += "<text x=\"" + num(kLeft) + "\" y=\"28\" font-size=\"18\" font-weight=\"bold\">" + markupEscape(r.scenario) +
       " (simulated)</text>\n";
  char sub[200];
  std::snprintf(sub, sizeof sub, "per-step communication time; seed %llu, %d ranks, captured gain %.3f",
                static_cast<unsigned long long>(r.seed), r.ranks, capturedGain(r));
  s += "<text x=\"" + num(kLeft) + "\" y=\"46\" fill=\"#555555\">" + markupEscape(sub) + "</text>\n";

  // Fault windows first, so the lines draw over them.
  s += "<g id=\"faults\">\n";
  for (size_t i = 0; i < r.faultSpecs.size(); ++i) {
    const auto ws = windows(r.faultSpecs[i], steps);
    for (size_t k = 0; k < ws.size(); ++k) {
      s += "<rect class=\"fault\" x=\"" + num(x(ws[k].first)) + "\" y=\"" + num(kTop) + "\" width=\"" +
           num(x(ws[k].second) - x(ws[k].first)) + "\" height=\"" + num(ph) +
           "\" fill=\"#ff9900\" fill-opacity=\"0.13\"/>\n";
    }
    if (!ws.empty()) {
      const std::string label = i < r.faults.size() ? r.faults[i].label : "fault";
      s += "<text x=\"" + num(x(ws[0].first) + 3) + "\" y=\"" + num(kTop + 14 + 14 * static_cast<double>(i % 4)) +
           "\" fill=\"#a05a00\" font-size=\"11\">#" + std::to_string(i) + " " + markupEscape(label) + "</text>\n";
    }
  }
  s += "</g>\n";

  // Axes, grid and tick labels.
  s += "<g id=\"axes\" stroke=\"#cccccc\">\n";
  const double ystep = niceStep(ymax);
  for (double v = 0; v <= ymax + 1e-9; v += ystep) {
    s += "<line x1=\"" + num(kLeft) + "\" y1=\"" + num(y(v)) + "\" x2=\"" + num(kLeft + pw) + "\" y2=\"" +
         num(y(v)) + "\"/>\n";
    char t[32];
    std::snprintf(t, sizeof t, "%g", v);
    s += "<text x=\"" + num(kLeft - 6) + "\" y=\"" + num(y(v) + 4) +
         "\" text-anchor=\"end\" stroke=\"none\" fill=\"#333333\">" + t + "</text>\n";
  }
  const double xstep = std::max(1.0, niceStep(steps));
  for (double v = 0; v <= steps; v += xstep) {
    s += "<line x1=\"" + num(x(v)) + "\" y1=\"" + num(kTop + ph) + "\" x2=\"" + num(x(v)) + "\" y2=\"" +
         num(kTop + ph + 5) + "\"/>\n";
    s += "<text x=\"" + num(x(v)) + "\" y=\"" + num(kTop + ph + 18) +
         "\" text-anchor=\"middle\" stroke=\"none\" fill=\"#333333\">" + std::to_string(static_cast<int>(v)) +
         "</text>\n";
  }
  s += "<rect x=\"" + num(kLeft) + "\" y=\"" + num(kTop) + "\" width=\"" + num(pw) + "\" height=\"" + num(ph) +
       "\" fill=\"none\" stroke=\"#888888\"/>\n";
  s += "</g>\n";
  s += "<text x=\"" + num(kLeft + pw / 2) + "\" y=\"" + num(kH - 18) + "\" text-anchor=\"middle\">step</text>\n";
  s += "<text transform=\"translate(22," + num(kTop + ph / 2) +
       ") rotate(-90)\" text-anchor=\"middle\">comm time per step (ms)</text>\n";

  // Wirewise's decision changes: short ticks along the top edge.
  s += "<g id=\"table-changes\" stroke=\"#1f77b4\" stroke-width=\"1.5\">\n";
  for (int st : r.tableChangeSteps)
    s += "<line class=\"table-change\" x1=\"" + num(x(st)) + "\" y1=\"" + num(kTop) + "\" x2=\"" + num(x(st)) +
         "\" y2=\"" + num(kTop + 10) + "\"/>\n";
  s += "</g>\n";

  // One polyline per mode; wirewise last so it stays on top.
  for (int m = 0; m < kNumSimModes; ++m) {
    const ModeResult& mr = r.modes[m];
    s += "<polyline class=\"series\" data-mode=\"" + std::string(simModeName(static_cast<SimMode>(m))) +
         "\" fill=\"none\" stroke=\"" + kColors[m] + "\" stroke-width=\"" + (m == 3 ? "2" : "1.4") + "\"";
    if (kDash[m][0] != '\0') s += std::string(" stroke-dasharray=\"") + kDash[m] + "\"";
    s += " points=\"";
    for (size_t i = 0; i < mr.stepCommUs.size(); ++i) {
      s += num(x(static_cast<double>(i) + 0.5)) + "," + num(y(mr.stepCommUs[i] * 1e-3));
      s += i + 1 < mr.stepCommUs.size() ? " " : "";
    }
    s += "\"/>\n";
  }

  // Legend.
  const double lx = kLeft + pw + 20;
  s += "<g id=\"legend\">\n";
  for (int m = 0; m < kNumSimModes; ++m) {
    const double ly = kTop + 10 + 24.0 * m;
    s += "<line x1=\"" + num(lx) + "\" y1=\"" + num(ly) + "\" x2=\"" + num(lx + 30) + "\" y2=\"" + num(ly) +
         "\" stroke=\"" + kColors[m] + "\" stroke-width=\"2\"";
    if (kDash[m][0] != '\0') s += std::string(" stroke-dasharray=\"") + kDash[m] + "\"";
    s += "/>\n<text x=\"" + num(lx + 38) + "\" y=\"" + num(ly + 4) + "\">" + simModeName(static_cast<SimMode>(m)) +
         "</text>\n";
  }
  const double ly = kTop + 10 + 24.0 * kNumSimModes;
  s += "<rect x=\"" + num(lx) + "\" y=\"" + num(ly - 6) + "\" width=\"30\" height=\"12\" fill=\"#ff9900\" "
       "fill-opacity=\"0.25\"/>\n<text x=\"" + num(lx + 38) + "\" y=\"" + num(ly + 4) + "\">fault active</text>\n";
  s += "<line x1=\"" + num(lx + 15) + "\" y1=\"" + num(ly + 18) + "\" x2=\"" + num(lx + 15) + "\" y2=\"" +
       num(ly + 30) + "\" stroke=\"#1f77b4\" stroke-width=\"1.5\"/>\n<text x=\"" + num(lx + 38) + "\" y=\"" +
       num(ly + 28) + "\">wirewise change</text>\n";
  s += "</g>\n</svg>\n";
  return s;
}

}  // namespace wirewise::sim
