#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>

#include "common/text.h"
#include "telemetry/wiring/render.h"
#include "telemetry/wiring/text_util.h"

namespace wirewise::wiring {
namespace {

struct Rgb {
  double r, g, b;
};

std::string hex(Rgb c) {
  char buf[8];
  auto to8 = [](double v) { return static_cast<int>(std::lround(std::clamp(v, 0.0, 255.0))); };
  std::snprintf(buf, sizeof buf, "#%02x%02x%02x", to8(c.r), to8(c.g), to8(c.b));
  return buf;
}

constexpr const char* kMissingFill = "#4d4d4d";
constexpr const char* kUnmeasuredFill = "#e0e0e0";
constexpr const char* kUnknownNominalFill = "#9ecae1";  // measured, but nothing to compare with
constexpr const char* kFlagStroke = "#b00020";
constexpr int kCellW = 96, kCellH = 52, kLeft = 84, kTop = 92;

}  // namespace

std::string ratioColour(double ratio) {
  const Rgb red{215, 48, 39}, yellow{254, 224, 139}, green{26, 152, 80};
  auto mix = [](Rgb a, Rgb b, double t) { return Rgb{a.r + (b.r - a.r) * t, a.g + (b.g - a.g) * t, a.b + (b.b - a.b) * t}; };
  if (ratio <= 0.3) return hex(red);
  if (ratio <= 0.6) return hex(mix(red, yellow, (ratio - 0.3) / 0.3));
  if (ratio < 0.9) return hex(mix(yellow, green, (ratio - 0.6) / 0.3));
  return hex(green);
}

std::string heatmapSvg(const WiringMap& map, const Analysis& a) {
  const int n = static_cast<int>(map.gpus.size());
  const int gridW = std::max(n, 1) * kCellW, gridH = std::max(n, 1) * kCellH;
  const int legendY = kTop + gridH + 36;
  const int flagsY = legendY + 56;
  // Wide enough for the longest flag or note line at ~7 px per character of the 12 px sans-serif font.
  size_t longest = 110;  // the subtitle
  for (const Flag& f : a.flags) longest = std::max(longest, f.text.size() + std::strlen(flagKindName(f.kind)) + 3);
  for (const std::string& note : map.notes) longest = std::max(longest, note.size() + 6);
  const int width = std::max(kLeft + gridW + 24, 24 + 7 * static_cast<int>(longest));
  const int height = flagsY + 18 * static_cast<int>(a.flags.size() + map.notes.size()) + 24;

  std::string s;
  s += "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n";
  s += "<svg xmlns=\"http://www.w3.org/2000/svg\" version=\"1.1\" width=\"" + std::to_string(width) + "\" height=\"" +
       std::to_string(height) + "\" font-family=\"sans-serif\" font-size=\"12\">\n";
  s += "<rect x=\"0\" y=\"0\" width=\"" + std::to_string(width) + "\" height=\"" + std::to_string(height) +
       "\" fill=\"#ffffff\"/>\n";
  std::string title = "wirewise wiring map" + (map.host.empty() ? "" : ": " + map.host) + ", " + std::to_string(n) +
                      " GPU(s)" + (map.time.empty() ? "" : ", " + map.time);
  s += "<text class=\"title\" x=\"12\" y=\"22\" font-size=\"15\" font-weight=\"bold\">" + markupEscape(title) + "</text>\n";
  s += "<text x=\"12\" y=\"42\">unidirectional GB/s, row = source, column = destination; colour = fraction of "
       "nominal; diagonal = self copy vs memory bandwidth</text>\n";
  s += "<text x=\"" + std::to_string(kLeft) + "\" y=\"" + std::to_string(kTop - 26) +
       "\" font-style=\"italic\">destination</text>\n";

  for (int i = 0; i < n; ++i) {
    const GpuInfo& g = map.gpus[i];
    const std::string label = "gpu" + std::to_string(g.index);
    s += "<text class=\"col-label\" x=\"" + std::to_string(kLeft + i * kCellW + kCellW / 2) + "\" y=\"" +
         std::to_string(kTop - 8) + "\" text-anchor=\"middle\" font-weight=\"bold\">" + markupEscape(label) + "</text>\n";
    s += "<text class=\"row-label\" x=\"" + std::to_string(kLeft - 8) + "\" y=\"" +
         std::to_string(kTop + i * kCellH + kCellH / 2 + 4) + "\" text-anchor=\"end\" font-weight=\"bold\">" +
         markupEscape(label) + "</text>\n";
  }

  for (int i = 0; i < n; ++i) {
    for (int j = 0; j < n; ++j) {
      const GpuInfo& src = map.gpus[i];
      const GpuInfo& dst = map.gpus[j];
      std::string fill = kUnmeasuredFill, line1 = "n/a", line2, textFill = "#000000";
      double gbps = -1, ratio = -1;
      bool flagged = false;
      if (!src.present || !dst.present) {
        fill = kMissingFill;
        line1 = "missing";
        textFill = "#ffffff";
        flagged = true;
      } else if (i == j) {
        const GpuVerdict* v = a.gpu(src.index);
        gbps = src.selfCopyGbps;
        ratio = v ? v->selfCopyRatio : -1;
        flagged = v && v->flagged;
        if (gbps > 0) {
          line1 = "self " + fixed(gbps, 0);
          fill = ratio >= 0 ? ratioColour(ratio) : kUnknownNominalFill;
        } else {
          line1 = "self -";
        }
      } else {
        const PairResult* p = map.pair(src.index, dst.index);
        const PairVerdict* v = a.pair(src.index, dst.index);
        flagged = v && v->flagged;
        if (p && p->bestUniGbps() > 0) {
          gbps = p->bestUniGbps();
          ratio = v ? v->uniRatio : -1;
          line1 = fixed(gbps, 1);
          fill = ratio >= 0 ? ratioColour(ratio) : kUnknownNominalFill;
        }
        if (p && !p->peerAccess) line2 = "no peer access";
      }
      if (line2.empty() && ratio >= 0) line2 = fixed(ratio, 2) + (i == j ? " of memory" : " of nominal");
      const int x = kLeft + j * kCellW, y = kTop + i * kCellH;
      s += "<rect class=\"cell" + std::string(flagged ? " flagged" : "") + "\" data-src=\"" +
           std::to_string(src.index) + "\" data-dst=\"" + std::to_string(dst.index) + "\"";
      if (gbps > 0) s += " data-gbps=\"" + fixed(gbps, 3) + "\"";
      if (ratio >= 0) s += " data-ratio=\"" + fixed(ratio, 4) + "\"";
      s += " x=\"" + std::to_string(x + 1) + "\" y=\"" + std::to_string(y + 1) + "\" width=\"" +
           std::to_string(kCellW - 2) + "\" height=\"" + std::to_string(kCellH - 2) + "\" fill=\"" + fill + "\"";
      s += flagged ? " stroke=\"" + std::string(kFlagStroke) + "\" stroke-width=\"3\"" : " stroke=\"#ffffff\"";
      s += "/>\n";
      s += "<text x=\"" + std::to_string(x + kCellW / 2) + "\" y=\"" + std::to_string(y + 22) +
           "\" text-anchor=\"middle\" fill=\"" + textFill + "\">" + markupEscape(line1) + "</text>\n";
      if (!line2.empty()) {
        s += "<text x=\"" + std::to_string(x + kCellW / 2) + "\" y=\"" + std::to_string(y + 38) +
             "\" text-anchor=\"middle\" font-size=\"10\" fill=\"" + textFill + "\">" + markupEscape(line2) + "</text>\n";
      }
    }
  }

  // Legend: the colour scale, then the fills that are not a ratio.
  s += "<defs><linearGradient id=\"ratio-scale\" x1=\"0\" x2=\"1\" y1=\"0\" y2=\"0\">";
  for (double r : {0.0, 0.3, 0.45, 0.6, 0.75, 0.9, 1.0}) {
    s += "<stop offset=\"" + fixed(r, 2) + "\" stop-color=\"" + ratioColour(r) + "\"/>";
  }
  s += "</linearGradient></defs>\n";
  s += "<rect class=\"legend\" x=\"" + std::to_string(kLeft) + "\" y=\"" + std::to_string(legendY) +
       "\" width=\"200\" height=\"12\" fill=\"url(#ratio-scale)\"/>\n";
  for (double r : {0.0, 0.5, 1.0}) {
    s += "<text x=\"" + std::to_string(kLeft + static_cast<int>(r * 200)) + "\" y=\"" + std::to_string(legendY + 26) +
         "\" text-anchor=\"middle\" font-size=\"10\">" + fixed(r, 1) + "</text>\n";
  }
  s += "<text x=\"" + std::to_string(kLeft + 212) + "\" y=\"" + std::to_string(legendY + 10) +
       "\" font-size=\"10\">fraction of nominal; flagged below " + fixed(a.options.flagBelow, 2) +
       " (red outline); grey: not measured; dark: GPU missing; blue: nominal unknown</text>\n";

  int y = flagsY;
  s += "<text x=\"12\" y=\"" + std::to_string(y - 18) + "\" font-weight=\"bold\">flagged: " +
       std::to_string(a.flags.size()) + "</text>\n";
  for (const Flag& f : a.flags) {
    s += "<text class=\"flag\" x=\"12\" y=\"" + std::to_string(y) + "\" fill=\"" + kFlagStroke + "\">" +
         markupEscape("[" + std::string(flagKindName(f.kind)) + "] " + f.text) + "</text>\n";
    y += 18;
  }
  for (const std::string& note : map.notes) {
    s += "<text class=\"note\" x=\"12\" y=\"" + std::to_string(y) + "\">" + markupEscape("note: " + note) + "</text>\n";
    y += 18;
  }
  s += "</svg>\n";
  return s;
}

}  // namespace wirewise::wiring
