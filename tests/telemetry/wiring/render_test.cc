#include <gtest/gtest.h>

#include <cstdlib>
#include <string>
#include <vector>

#include "telemetry/wiring/render.h"
#include "tests/telemetry/wiring/mini_xml.h"
#include "tests/telemetry/wiring/wiring_test_util.h"

namespace wirewise::wiring {
namespace {

using testing::loadMap;
using testing::MiniXml;
using testing::XmlElement;

struct Rgb {
  int r, g, b;
};
Rgb parseHex(const std::string& s) {
  EXPECT_EQ(s.size(), 7u) << s;
  EXPECT_EQ(s[0], '#') << s;
  auto c = [&](int i) { return static_cast<int>(std::strtol(s.substr(i, 2).c_str(), nullptr, 16)); };
  return {c(1), c(3), c(5)};
}

const XmlElement* cell(const std::vector<const XmlElement*>& rects, int src, int dst) {
  for (const XmlElement* r : rects) {
    auto cls = r->attrs.find("class");
    if (cls == r->attrs.end() || cls->second.rfind("cell", 0) != 0) continue;
    if (r->attrs.at("data-src") == std::to_string(src) && r->attrs.at("data-dst") == std::to_string(dst)) return r;
  }
  return nullptr;
}

TEST(WiringRender, ColourScaleRunsFromRedThroughYellowToGreen) {
  Rgb lo = parseHex(ratioColour(0.1)), mid = parseHex(ratioColour(0.6)), hi = parseHex(ratioColour(0.95));
  EXPECT_GT(lo.r, lo.g);
  EXPECT_GT(mid.r, 200);
  EXPECT_GT(mid.g, 200);
  EXPECT_GT(hi.g, hi.r);
  EXPECT_EQ(ratioColour(0.0), ratioColour(0.3)) << "clamped below 0.3";
  EXPECT_NE(ratioColour(0.4), ratioColour(0.5)) << "interpolated between the stops";
}

TEST(WiringRender, HeatmapIsWellFormedWithOneCellPerPair) {
  WiringMap m = loadMap("h100x4_degraded.json");
  Analysis a = analyze(m);
  const std::string svg = heatmapSvg(m, a);
  MiniXml parser;
  auto root = parser.parse(svg);
  ASSERT_NE(root, nullptr) << parser.error();
  EXPECT_EQ(root->name, "svg");
  EXPECT_EQ(root->attrs.at("xmlns"), "http://www.w3.org/2000/svg");

  std::vector<const XmlElement*> rects, texts;
  root->findAll("rect", &rects);
  root->findAll("text", &texts);
  int cells = 0, flagged = 0;
  for (const XmlElement* r : rects) {
    const std::string cls = r->attrs.count("class") ? r->attrs.at("class") : "";
    if (cls.rfind("cell", 0) == 0) ++cells;
    if (cls == "cell flagged") ++flagged;
  }
  EXPECT_EQ(cells, 25) << "5 GPUs listed, the missing one included";

  // The 40% pair: flagged, red outline, its ratio, a warm colour; its reverse green and unflagged.
  const XmlElement* weak = cell(rects, 0, 2);
  ASSERT_NE(weak, nullptr);
  EXPECT_EQ(weak->attrs.at("class"), "cell flagged");
  EXPECT_EQ(weak->attrs.at("stroke"), "#b00020");
  EXPECT_NEAR(std::stod(weak->attrs.at("data-ratio")), 180.1 / 450.0, 1e-4);
  EXPECT_NEAR(std::stod(weak->attrs.at("data-gbps")), 180.1, 1e-3);
  Rgb wc = parseHex(weak->attrs.at("fill"));
  EXPECT_GT(wc.r, wc.g);
  const XmlElement* back = cell(rects, 2, 0);
  ASSERT_NE(back, nullptr);
  EXPECT_EQ(back->attrs.at("class"), "cell");
  Rgb bc = parseHex(back->attrs.at("fill"));
  EXPECT_GT(bc.g, bc.r);

  // Missing GPU: dark cells across its row and column.
  const XmlElement* gone = cell(rects, 4, 1);
  ASSERT_NE(gone, nullptr);
  EXPECT_EQ(gone->attrs.at("fill"), "#4d4d4d");
  EXPECT_EQ(cell(rects, 1, 4)->attrs.at("fill"), "#4d4d4d");

  // Diagonal: self copy against memory bandwidth; gpu3's is flagged.
  EXPECT_EQ(cell(rects, 3, 3)->attrs.at("class"), "cell flagged");
  EXPECT_EQ(cell(rects, 0, 0)->attrs.at("class"), "cell");
  EXPECT_GE(flagged, 1 + 1 + 2 + 9) << "0->2, gpu3 self, 1<->3 and the missing GPU's 9 cells";

  // Labels: every GPU on both axes, the values in the cells, one line per flag.
  int colLabels = 0, rowLabels = 0, flagLines = 0;
  bool sawWeakValue = false, sawNoPeer = false;
  for (const XmlElement* t : texts) {
    const std::string cls = t->attrs.count("class") ? t->attrs.at("class") : "";
    if (cls == "col-label") ++colLabels;
    if (cls == "row-label") ++rowLabels;
    if (cls == "flag") ++flagLines;
    if (t->text == "180.1") sawWeakValue = true;
    if (t->text == "no peer access") sawNoPeer = true;
  }
  EXPECT_EQ(colLabels, 5);
  EXPECT_EQ(rowLabels, 5);
  EXPECT_EQ(flagLines, static_cast<int>(a.flags.size()));
  EXPECT_TRUE(sawWeakValue);
  EXPECT_TRUE(sawNoPeer);
}

TEST(WiringRender, HeatmapEscapesText) {
  WiringMap m = loadMap("h200x1_single.json");
  m.host = "rack<3> & \"row\" 'b'";
  m.notes.push_back("a <note> & more");
  const std::string svg = heatmapSvg(m, analyze(m));
  MiniXml parser;
  auto root = parser.parse(svg);
  ASSERT_NE(root, nullptr) << parser.error();
  std::vector<const XmlElement*> texts;
  root->findAll("text", &texts);
  bool title = false;
  for (const XmlElement* t : texts) title = title || t->text.find("rack<3> & \"row\" 'b'") != std::string::npos;
  EXPECT_TRUE(title) << "the parsed title carries the host name unchanged";
}

TEST(WiringRender, ParserRejectsBrokenXml) {
  // The heatmap tests rely on this parser failing on what is not well-formed.
  MiniXml parser;
  EXPECT_EQ(parser.parse("<svg><rect></svg>"), nullptr);
  EXPECT_EQ(parser.parse("<svg a=1/>"), nullptr);
  EXPECT_EQ(parser.parse("<svg a=\"1\" a=\"2\"/>"), nullptr);
  EXPECT_EQ(parser.parse("<svg><text>a & b</text></svg>"), nullptr);
  EXPECT_NE(parser.parse("<svg><text>a &amp; b</text></svg>"), nullptr);
}

TEST(WiringRender, MatrixTextShowsFiguresRatiosAndFlags) {
  WiringMap m = loadMap("h100x4_degraded.json");
  Analysis a = analyze(m);
  const std::string t = matrixText(m, a);
  EXPECT_NE(t.find("hgx-test-07, 5 GPU(s)"), std::string::npos) << t;
  EXPECT_NE(t.find("256 MiB per copy, median of 10 trial(s)"), std::string::npos);
  EXPECT_NE(t.find("180.1!"), std::string::npos) << "the flagged pair carries its mark";
  EXPECT_NE(t.find("20.4~!"), std::string::npos) << "host-staged and flagged";
  EXPECT_NE(t.find("0.40"), std::string::npos) << "its fraction of nominal";
  EXPECT_NE(t.find("missing"), std::string::npos);
  EXPECT_NE(t.find("2.41"), std::string::npos) << "latency";
  EXPECT_NE(t.find("flagged (5,"), std::string::npos);
  EXPECT_NE(t.find("[unidirectional] gpu0->gpu2"), std::string::npos);
  EXPECT_NE(t.find("[missing_gpu] gpu4"), std::string::npos);

  WiringMap one = loadMap("h200x1_single.json");
  const std::string single = matrixText(one, analyze(one));
  EXPECT_NE(single.find("a single GPU has no pairs"), std::string::npos);
  EXPECT_NE(single.find("flagged (0,"), std::string::npos);
  EXPECT_NE(single.find("4290.8"), std::string::npos);
}

}  // namespace
}  // namespace wirewise::wiring
