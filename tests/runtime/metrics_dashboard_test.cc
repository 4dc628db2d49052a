// examples/grafana-wirewise.json against the exporter: every metric its PromQL names is a family the
// renderer really produces (fed every kind of event), so a renamed family cannot leave a dashboard panel
// silently empty; and the dashboard is importable as Grafana expects (a Prometheus data-source variable).
#include <gtest/gtest.h>

#include <fstream>
#include <regex>
#include <set>
#include <string>

#include <nlohmann/json.hpp>

#include "runtime/metrics.h"
#include "tests/runtime/metrics_events.h"

namespace wirewise {
namespace {

nlohmann::json dashboard() {
  std::ifstream f(std::string(WW_SOURCE_DIR) + "/examples/grafana-wirewise.json");
  return nlohmann::json::parse(f, nullptr, false);
}

// The families the renderer produces from events of every kind. A cap of one series per family makes the
// dropped-series family appear too.
std::set<std::string> renderedFamilies() {
  Metrics m(1);
  for (const auto& ev : testing::metricsEvents()) m.observe(ev);
  m.render();
  const auto names = m.familyNames();
  return {names.begin(), names.end()};
}

// The metric names a PromQL expression mentions: identifiers with our two prefixes outside string literals
// (label names never start with them; label values are strings).
std::set<std::string> metricsOf(const std::string& expr) {
  const std::string code = std::regex_replace(expr, std::regex(R"("([^"\\]|\\.)*")"), "\"\"");
  std::set<std::string> out;
  const std::regex name(R"((^|[^a-zA-Z0-9_:])((nccl|wirewise)_[a-zA-Z0-9_:]*))");
  for (auto it = std::sregex_iterator(code.begin(), code.end(), name); it != std::sregex_iterator(); ++it)
    out.insert((*it)[2].str());
  return out;
}

TEST(MetricsDashboard, EveryDeclaredFamilyIsRendered) {
  // The fixture must exercise every family, else the next test would check against too small a set.
  const std::set<std::string> rendered = renderedFamilies();
  for (const MetricFamily& f : Metrics::families()) EXPECT_TRUE(rendered.contains(f.name)) << f.name;
  EXPECT_EQ(rendered.size(), Metrics::families().size());
}

TEST(MetricsDashboard, QueriesOnlyFamiliesTheExporterProduces) {
  const nlohmann::json d = dashboard();
  ASSERT_TRUE(d.is_object()) << "examples/grafana-wirewise.json does not parse";
  const std::set<std::string> rendered = renderedFamilies();
  std::set<std::string> used;
  ASSERT_FALSE(d.at("panels").empty());
  for (const auto& panel : d.at("panels")) {
    const std::string title = panel.at("title").get<std::string>();
    ASSERT_FALSE(panel.at("targets").empty()) << title;
    EXPECT_EQ(panel.at("datasource").at("uid"), "${datasource}") << title;
    for (const auto& t : panel.at("targets")) {
      const std::string expr = t.at("expr").get<std::string>();
      const std::set<std::string> names = metricsOf(expr);
      EXPECT_FALSE(names.empty()) << title << ": " << expr;
      for (const std::string& n : names) EXPECT_TRUE(rendered.contains(n)) << title << ": " << n << " in " << expr;
      used.insert(names.begin(), names.end());
    }
  }
  // The two the issue names, and the Inspector's pair.
  for (const char* n : {"nccl_bus_bandwidth_gbs", "nccl_collective_exec_time_microseconds", "wirewise_choice_in_force",
                        "wirewise_adaptations_total", "wirewise_exploration_share", "wirewise_link_state",
                        "wirewise_boundary_wait_seconds_total"})
    EXPECT_TRUE(used.contains(n)) << n << " is on no panel";
  // Variables' queries name families too.
  for (const auto& v : d.at("templating").at("list")) {
    if (!v.contains("definition")) continue;
    for (const std::string& n : metricsOf(v.at("definition").get<std::string>())) {
      EXPECT_TRUE(rendered.contains(n)) << n;
    }
  }
}

TEST(MetricsDashboard, HasAPrometheusDataSourceVariable) {
  const nlohmann::json d = dashboard();
  ASSERT_TRUE(d.is_object());
  EXPECT_GE(d.at("schemaVersion").get<int>(), 36);
  bool found = false;
  for (const auto& v : d.at("templating").at("list"))
    found = found || (v.at("type") == "datasource" && v.at("query") == "prometheus" && v.at("name") == "datasource");
  EXPECT_TRUE(found);
}

TEST(MetricsDashboard, ExpressionScanner) {
  EXPECT_EQ(metricsOf(R"(sum by (kind) (rate(wirewise_adaptations_total{comm_name=~"nccl_x"}[5m])))"),
            std::set<std::string>{"wirewise_adaptations_total"});
  EXPECT_EQ(metricsOf("a_nccl_b + nccl_bus_bandwidth_gbs"), std::set<std::string>{"nccl_bus_bandwidth_gbs"});
}

}  // namespace
}  // namespace wirewise
