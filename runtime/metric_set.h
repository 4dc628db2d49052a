// Prometheus metric families held in memory and rendered in the text exposition format, version 0.0.4
// (docs/prometheus.md): one "# HELP" and one "# TYPE" line per family, then its series. Families print in
// name order and series in label order, so the same state always renders to the same bytes (tests compare
// exact text; a scraper sees no spurious changes).
//
// Bounded: each family holds at most `maxSeries` series; a new series beyond it is dropped and counted per
// family, and wirewise_metrics_dropped_series_total reports the counts. Not thread-safe: Metrics
// (runtime/metrics.h) serialises every call.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace wirewise {

enum class MetricType { Gauge, Counter };

// One family's fixed description; every family the runtime exports is declared once (runtime/metrics.cc).
struct MetricFamily {
  const char* name;
  MetricType type;
  const char* help;
};

// A series' labels in the family's own order (names are fixed per family; values are escaped when rendered).
using MetricLabels = std::vector<std::pair<std::string, std::string>>;

class MetricSet {
 public:
  explicit MetricSet(size_t maxSeries) : maxSeries_(maxSeries) {}

  // Sets a gauge (or a counter whose running total is kept elsewhere: the policy's counters); adds to a
  // counter. f must outlive the set (the families are static tables).
  void set(const MetricFamily& f, const MetricLabels& labels, double value);
  void add(const MetricFamily& f, const MetricLabels& labels, double delta);
  // Removes every series of f whose labels satisfy `match` (a communicator's previous interval, table).
  void erase(const MetricFamily& f, const std::function<bool(const MetricLabels&)>& match);

  // The exposition text; families without series are left out.
  std::string render() const;
  // The names of the families that have at least one series (what a dashboard may query).
  std::vector<std::string> familyNames() const;
  // Series refused because their family was full, per family name (only families that refused one).
  std::map<std::string, uint64_t> droppedSeries() const;

 private:
  struct Series {
    MetricLabels labels;
    double value = 0;
  };
  struct Family {
    const MetricFamily* spec = nullptr;
    std::map<std::string, Series> series;  // key: the rendered label set, so the order is the text's
    uint64_t dropped = 0;
  };
  Series* find(const MetricFamily& f, const MetricLabels& labels);

  size_t maxSeries_;
  std::map<std::string, Family, std::less<>> families_;
};

// The label set as the text format writes it: {a="x",b="y"}, with \, " and newline escaped; "" when empty.
std::string renderLabels(const MetricLabels& labels);
// A sample value: integers without a fraction, others with up to 17 significant digits, NaN and the
// infinities as the format spells them.
std::string renderValue(double v);

}  // namespace wirewise
