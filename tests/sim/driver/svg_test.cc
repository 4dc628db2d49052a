#include <algorithm>
#include <cstdlib>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "sim/driver/driver.h"
#include "tests/sim/driver/test_util.h"

namespace wirewise::sim {
namespace {

// A small XML well-formedness check: declaration, balanced and properly nested elements, quoted attributes,
// no stray '<' or unescaped '&' in text. Enough to catch what a hand-written SVG writer gets wrong.
bool wellFormed(const std::string& s, std::string* why) {
  std::vector<std::string> stack;
  size_t i = 0;
  int roots = 0;
  auto fail = [&](const std::string& m) {
    *why = m + " at offset " + std::to_string(i);
    return false;
  };
  while (i < s.size()) {
    if (s[i] != '<') {
      if (s[i] == '&') {
        const size_t semi = s.find(';', i);
        const std::string ent = semi == std::string::npos ? "" : s.substr(i, semi - i + 1);
        const bool numeric = ent.size() > 3 && ent[1] == '#' &&
                             std::all_of(ent.begin() + 2, ent.end() - 1, [](char c) { return c >= '0' && c <= '9'; });
        if (ent != "&amp;" && ent != "&lt;" && ent != "&gt;" && ent != "&quot;" && ent != "&apos;" && !numeric)
          return fail("bad entity");
      }
      if (stack.empty() && !std::isspace(static_cast<unsigned char>(s[i]))) return fail("text outside the root");
      ++i;
      continue;
    }
    if (s.compare(i, 5, "<?xml") == 0) {
      if (i != 0) return fail("declaration not first");
      const size_t e = s.find("?>", i);
      if (e == std::string::npos) return fail("unterminated declaration");
      i = e + 2;
      continue;
    }
    if (s.compare(i, 2, "</") == 0) {
      const size_t e = s.find('>', i);
      if (e == std::string::npos) return fail("unterminated end tag");
      const std::string name = s.substr(i + 2, e - i - 2);
      if (stack.empty() || stack.back() != name) return fail("mismatched </" + name + ">");
      stack.pop_back();
      i = e + 1;
      continue;
    }
    size_t j = i + 1;
    while (j < s.size() && (std::isalnum(static_cast<unsigned char>(s[j])) || s[j] == '-' || s[j] == ':')) ++j;
    const std::string name = s.substr(i + 1, j - i - 1);
    if (name.empty()) return fail("empty tag name");
    // Attributes: name="value" pairs.
    while (true) {
      while (j < s.size() && std::isspace(static_cast<unsigned char>(s[j]))) ++j;
      if (j >= s.size()) return fail("unterminated tag");
      if (s[j] == '>' || s.compare(j, 2, "/>") == 0) break;
      const size_t eq = s.find('=', j);
      if (eq == std::string::npos || eq + 1 >= s.size() || s[eq + 1] != '"') return fail("unquoted attribute");
      const size_t close = s.find('"', eq + 2);
      if (close == std::string::npos) return fail("unterminated attribute");
      if (s.substr(eq + 2, close - eq - 2).find('<') != std::string::npos) return fail("'<' in attribute");
      j = close + 1;
    }
    if (stack.empty()) ++roots;
    if (s[j] == '>') {
      stack.push_back(name);
      i = j + 1;
    } else {
      i = j + 2;
    }
  }
  if (!stack.empty()) return fail("unclosed <" + stack.back() + ">");
  if (roots != 1) return fail("expected one root element");
  return true;
}

size_t countOf(const std::string& s, const std::string& needle) {
  size_t n = 0;
  for (size_t p = s.find(needle); p != std::string::npos; p = s.find(needle, p + 1)) ++n;
  return n;
}

TEST(Svg, CheckerRejectsBrokenXml) {
  std::string why;
  EXPECT_TRUE(wellFormed("<svg><g a=\"1\"/></svg>", &why)) << why;
  EXPECT_FALSE(wellFormed("<svg><g></svg>", &why));
  EXPECT_FALSE(wellFormed("<svg a=1></svg>", &why));
  EXPECT_FALSE(wellFormed("<svg>a & b</svg>", &why));
  EXPECT_FALSE(wellFormed("<svg></svg><svg></svg>", &why));
}

TEST(Svg, PlotIsWellFormedWithFourSeriesFaultsAndChanges) {
  const Scenario sc = testing::loadExample("1x8-h100-nvlink-flap.json");
  SimResult r = runSimulation(sc, testing::options(200));
  r.tableChangeSteps = {120, 150};  // the plugin does not adapt yet: mark two steps to check they are drawn
  const std::string svg = plotSvg(r);
  std::string why;
  EXPECT_TRUE(wellFormed(svg, &why)) << why;
  EXPECT_EQ(svg.rfind("<?xml", 0), 0u);
  EXPECT_EQ(countOf(svg, "class=\"series\""), 4u);
  for (const char* m : {"nccl-default", "static-best", "oracle", "wirewise"})
    EXPECT_NE(svg.find(std::string("data-mode=\"") + m + "\""), std::string::npos) << m;
  // Flap from step 100, 40 on / 40 off: on-windows [100,140) and [180,200) within 200 steps.
  EXPECT_EQ(countOf(svg, "class=\"fault\""), 2u);
  EXPECT_EQ(countOf(svg, "class=\"table-change\""), 2u);
  EXPECT_NE(svg.find("simulated"), std::string::npos);
  // One point per step in each series.
  const size_t p = svg.find("points=\"");
  ASSERT_NE(p, std::string::npos);
  const std::string pts = svg.substr(p + 8, svg.find('"', p + 8) - p - 8);
  EXPECT_EQ(countOf(pts, ","), 200u);
  // Self-contained: no scripts, no external references.
  EXPECT_EQ(svg.find("<script"), std::string::npos);
  EXPECT_EQ(svg.find("href"), std::string::npos);
}

TEST(Svg, EscapesTheScenarioName) {
  SimResult r;
  r.scenario = "a<b & \"c\"";
  r.steps = 2;
  for (auto& m : r.modes) m.stepCommUs = {1.0, 2.0};
  std::string why;
  const std::string svg = plotSvg(r);
  EXPECT_TRUE(wellFormed(svg, &why)) << why;
  EXPECT_NE(svg.find("a&lt;b &amp; &quot;c&quot;"), std::string::npos);
}

}  // namespace
}  // namespace wirewise::sim
