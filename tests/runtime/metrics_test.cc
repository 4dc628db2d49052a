// The Prometheus text the runtime exports: the exposition format itself (exact text, escaping, one HELP and
// TYPE per family, order), and the metrics as the runtime's own typed events feed them.
#include <gtest/gtest.h>

#include <limits>
#include <map>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "common/log_events.h"
#include "runtime/metric_set.h"
#include "runtime/metrics.h"
#include "tests/runtime/metrics_events.h"

namespace wirewise {
namespace {

constexpr MetricFamily kA{"a_total", MetricType::Counter, "counts things"};
constexpr MetricFamily kB{"b_value", MetricType::Gauge, "a help with a \\ and a\nnewline"};

TEST(MetricSet, RendersExactTextInDeterministicOrder) {
  MetricSet s(16);
  // Inserted out of order: the text is sorted by family name, then by label set.
  s.set(kB, {{"x", "2"}}, 0.25);
  s.add(kA, {{"k", "z"}}, 2);
  s.add(kA, {{"k", "a"}}, 1);
  s.add(kA, {{"k", "z"}}, 3);
  s.set(kB, {{"x", "1"}}, 1e-7);
  EXPECT_EQ(s.render(),
            "# HELP a_total counts things\n"
            "# TYPE a_total counter\n"
            "a_total{k=\"a\"} 1\n"
            "a_total{k=\"z\"} 5\n"
            "# HELP b_value a help with a \\\\ and a\\nnewline\n"
            "# TYPE b_value gauge\n"
            "b_value{x=\"1\"} 9.9999999999999995e-08\n"
            "b_value{x=\"2\"} 0.25\n");
}

TEST(MetricSet, EscapesLabelValues) {
  EXPECT_EQ(renderLabels({{"name", "a\\b\"c\nd"}, {"e", ""}}), "{name=\"a\\\\b\\\"c\\nd\",e=\"\"}");
  EXPECT_EQ(renderLabels({}), "");
  MetricSet s(4);
  s.set(kB, {}, 3);
  EXPECT_EQ(s.render(), "# HELP b_value a help with a \\\\ and a\\nnewline\n# TYPE b_value gauge\nb_value 3\n");
}

TEST(MetricSet, ValuesInTheFormatsSpelling) {
  EXPECT_EQ(renderValue(0), "0");
  EXPECT_EQ(renderValue(-4), "-4");
  EXPECT_EQ(renderValue(1.5), "1.5");
  EXPECT_EQ(renderValue(std::numeric_limits<double>::quiet_NaN()), "NaN");
  EXPECT_EQ(renderValue(std::numeric_limits<double>::infinity()), "+Inf");
  EXPECT_EQ(renderValue(-std::numeric_limits<double>::infinity()), "-Inf");
}

TEST(MetricSet, CapsSeriesPerFamilyAndCountsTheRest) {
  MetricSet s(2);
  for (int i = 0; i < 5; ++i) s.set(kB, {{"i", std::to_string(i)}}, i);
  s.set(kB, {{"i", "1"}}, 7);  // an existing series is still updated at the cap
  s.add(kA, {}, 1);            // another family has its own room
  EXPECT_EQ(s.droppedSeries(), (std::map<std::string, uint64_t>{{"b_value", 3}}));
  const std::string text = s.render();
  EXPECT_NE(text.find("b_value{i=\"1\"} 7\n"), std::string::npos) << text;
  EXPECT_EQ(text.find("i=\"2\""), std::string::npos) << text;
  EXPECT_NE(text.find("a_total 1\n"), std::string::npos) << text;
}

TEST(MetricSet, EraseRemovesMatchingSeriesAndEmptyFamiliesVanish) {
  MetricSet s(8);
  s.set(kB, {{"c", "1"}}, 1);
  s.set(kB, {{"c", "2"}}, 2);
  s.erase(kB, [](const MetricLabels& l) { return l[0].second == "1"; });
  EXPECT_EQ(s.familyNames(), std::vector<std::string>{"b_value"});
  s.erase(kB, [](const MetricLabels&) { return true; });
  EXPECT_TRUE(s.familyNames().empty());
  EXPECT_EQ(s.render(), "");
}

// Each family appears with exactly one HELP and one TYPE line, before its samples, and every sample line
// belongs to the family announced last.
void expectWellFormed(const std::string& text) {
  std::string family;
  std::map<std::string, int> helps, types;
  size_t at = 0;
  while (at < text.size()) {
    const size_t end = text.find('\n', at);
    ASSERT_NE(end, std::string::npos) << "the text ends without a newline";
    const std::string line = text.substr(at, end - at);
    at = end + 1;
    if (line.starts_with("# HELP ")) {
      family = line.substr(7, line.find(' ', 7) - 7);
      ++helps[family];
    } else if (line.starts_with("# TYPE ")) {
      EXPECT_EQ(line.substr(7, line.find(' ', 7) - 7), family);
      ++types[family];
    } else {
      const std::string name = line.substr(0, line.find_first_of("{ "));
      EXPECT_EQ(name, family) << line;
    }
  }
  for (const auto& [f, n] : helps) EXPECT_EQ(n, 1) << f;
  for (const auto& [f, n] : types) EXPECT_EQ(n, 1) << f;
}

// The sample lines of one family.
std::vector<std::string> samples(const std::string& text, const std::string& family) {
  std::vector<std::string> out;
  size_t at = 0;
  while (at < text.size()) {
    const size_t end = text.find('\n', at);
    const std::string line = text.substr(at, end - at);
    at = end + 1;
    if (line.starts_with(family + "{") || line.starts_with(family + " ")) out.push_back(line);
  }
  return out;
}

TEST(Metrics, SummaryGivesInspectorSeries) {
  Metrics m;
  for (const auto& ev : testing::metricsEvents()) m.observe(ev);
  const std::string text = m.render();
  expectWellFormed(text);
  EXPECT_NE(text.find("nccl_bus_bandwidth_gbs{comm_name=\"dp\",comm_id=\"0x00000000000000ab\",rank=\"3\","
                      "nranks=\"16\",n_nodes=\"2\",collective=\"AllReduce\",message_size=\"24MiB-28MiB\","
                      "algo_proto=\"TREE_SIMPLE\",nchannels=\"11\"} 141.25\n"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("nccl_collective_exec_time_microseconds{comm_name=\"dp\",comm_id=\"0x00000000000000ab\","
                      "rank=\"3\",nranks=\"16\",n_nodes=\"2\",collective=\"AllReduce\",message_size=\"24MiB-28MiB\","
                      "algo_proto=\"TREE_SIMPLE\",nchannels=\"11\"} 345.5\n"),
            std::string::npos)
      << text;
  // Counts add up over intervals; the gauges hold the last interval only.
  EXPECT_NE(text.find("wirewise_collectives_total{comm_name=\"dp\",comm_id=\"0x00000000000000ab\",rank=\"3\","
                      "nranks=\"16\",n_nodes=\"2\",collective=\"AllReduce\",message_size=\"24MiB-28MiB\","
                      "algo_proto=\"TREE_SIMPLE\",nchannels=\"11\"} 300\n"),
            std::string::npos)
      << text;
  // The first interval's allgather ran ring/ll128; the second did not run it: gone from the gauges, kept in
  // the counter.
  for (const std::string& line : samples(text, "nccl_bus_bandwidth_gbs"))
    EXPECT_EQ(line.find("RING_LL128"), std::string::npos) << line;
  bool counted = false;
  for (const std::string& line : samples(text, "wirewise_collectives_total"))
    counted = counted || line.find("RING_LL128") != std::string::npos;
  EXPECT_TRUE(counted) << text;
  EXPECT_NE(text.find("wirewise_profiler_dropped_events_total{comm_id=\"0x00000000000000ab\",rank=\"3\","
                      "reason=\"pool\"} 2\n"),
            std::string::npos)
      << text;
}

TEST(Metrics, PolicyControlPlaneAndLinks) {
  Metrics m;
  for (const auto& ev : testing::metricsEvents()) m.observe(ev);
  const std::string text = m.render();
  const std::vector<std::string> expected = {
      "wirewise_info{version=\"9.9.9\",host=\"node1\"} 1\n",
      // The coordinator's table replaced the rank's init table.
      "wirewise_choice_in_force{comm_name=\"dp\",comm_id=\"0x00000000000000ab\",collective=\"AllReduce\","
      "message_size=\"24MiB-28MiB\",min_bytes=\"25165824\",algo_proto=\"TREE_SIMPLE\",nchannels=\"11\"} 1\n",
      "wirewise_exploring{comm_name=\"dp\",comm_id=\"0x00000000000000ab\"} 1\n",
      "wirewise_exploration_share{comm_name=\"dp\",comm_id=\"0x00000000000000ab\"} 0.014999999999999999\n",
      "wirewise_explored_seconds_total{comm_name=\"dp\",comm_id=\"0x00000000000000ab\"} 0.014999999999999999\n",
      "wirewise_adaptations_total{comm_name=\"dp\",comm_id=\"0x00000000000000ab\",kind=\"alarm\"} 1\n",
      "wirewise_adaptations_total{comm_name=\"dp\",comm_id=\"0x00000000000000ab\",kind=\"commit\"} 2\n",
      "wirewise_verdict_index{comm_name=\"dp\",comm_id=\"0x00000000000000ab\"} 23\n",
      "wirewise_verdict_changes_total{comm_name=\"dp\",comm_id=\"0x00000000000000ab\"} 2\n",
      "wirewise_verdict_observe_only{comm_name=\"dp\",comm_id=\"0x00000000000000ab\"} 0\n",
      "wirewise_control_plane_info{coordinator=\"10.0.0.1:29517\",role=\"coordinator\"} 1\n",
      "wirewise_control_messages_total{level=\"warn\"} 1\n",
      "wirewise_boundary_wait_seconds_total{comm_name=\"dp\",comm_id=\"0x00000000000000ab\"} 0.25\n",
      "wirewise_boundaries_total{comm_name=\"dp\",comm_id=\"0x00000000000000ab\"} 40\n",
      "wirewise_link_state{kind=\"ib\",link=\"mlx5_3:1\",state=\"degraded\"} 1\n",
      "wirewise_link_state{kind=\"ib\",link=\"mlx5_3:1\",state=\"up\"} 0\n",
      "wirewise_link_transmit_gbs{kind=\"ib\",link=\"mlx5_3:1\"} 12.5\n",
  };
  for (const std::string& line : expected) EXPECT_NE(text.find(line), std::string::npos) << line << "\n" << text;
  EXPECT_EQ(text.find("RING_SIMPLE\",nchannels=\"0\"} 1"), std::string::npos) << "the init table must be gone";
}

TEST(Metrics, MessageSizeNamesTheBucketsEdges) {
  Metrics m;
  logev::Summary s;
  s.comm = "0x0000000000000001";
  for (int bucket : {0, 1, 2, 97})
    s.rows.push_back({.coll = "broadcast", .algo = "ring", .proto = "ll", .bucket = bucket, .count = 1});
  m.observe(nlohmann::json(s));
  std::vector<std::string> sizes;
  for (const std::string& line : samples(m.render(), "nccl_bus_bandwidth_gbs")) {
    const size_t at = line.find("message_size=\"") + 14;
    sizes.push_back(line.substr(at, line.find('"', at) - at));
  }
  EXPECT_EQ(sizes, (std::vector<std::string>{"0B-1KiB", "1.25KiB-1.50KiB", "16GiB-max", "1KiB-1.25KiB"}));
}

TEST(Metrics, IgnoresLinesOfTheWrongShapeAndUnknownEvents) {
  Metrics m;
  m.observe(nlohmann::json::parse(R"({"event":"summary","comm":7,"rows":"no"})"));
  m.observe(nlohmann::json::parse(R"({"event":"from_the_future","x":1})"));
  m.observe(nlohmann::json::parse(R"([1,2])"));
  EXPECT_EQ(m.render(), "");
}

TEST(Metrics, CapsAFamilyAndReportsTheDrops) {
  Metrics m(2);
  for (int rank = 0; rank < 4; ++rank) {
    logev::Summary s;
    s.comm = "0x0000000000000001";
    s.rank = rank;
    s.rows.push_back({.coll = "allreduce", .algo = "ring", .proto = "simple", .channels = 4, .count = 1});
    m.observe(nlohmann::json(s));
  }
  const std::string text = m.render();
  EXPECT_NE(text.find("wirewise_metrics_dropped_series_total{family=\"nccl_bus_bandwidth_gbs\"} 2\n"),
            std::string::npos)
      << text;
  EXPECT_EQ(text.find("rank=\"2\""), std::string::npos) << text;
}

}  // namespace
}  // namespace wirewise
