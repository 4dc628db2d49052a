#include "runtime/metric_set.h"

#include <cmath>
#include <cstdio>

namespace wirewise {

std::string renderLabels(const MetricLabels& labels) {
  if (labels.empty()) return "";
  std::string out = "{";
  for (size_t i = 0; i < labels.size(); ++i) {
    if (i > 0) out += ',';
    out += labels[i].first;
    out += "=\"";
    for (char c : labels[i].second) {
      if (c == '\\')
        out += "\\\\";
      else if (c == '"')
        out += "\\\"";
      else if (c == '\n')
        out += "\\n";
      else
        out += c;
    }
    out += '"';
  }
  out += '}';
  return out;
}

std::string renderValue(double v) {
  if (std::isnan(v)) return "NaN";
  if (std::isinf(v)) return v > 0 ? "+Inf" : "-Inf";
  char buf[40];
  // Counts and flags print as integers (2^53 and below are exact in a double).
  if (v == std::floor(v) && std::fabs(v) < 9007199254740992.0)
    std::snprintf(buf, sizeof buf, "%lld", static_cast<long long>(v));
  else
    std::snprintf(buf, sizeof buf, "%.17g", v);
  return buf;
}

MetricSet::Series* MetricSet::find(const MetricFamily& f, const MetricLabels& labels) {
  Family& fam = families_[f.name];
  fam.spec = &f;
  std::string key = renderLabels(labels);
  if (auto it = fam.series.find(key); it != fam.series.end()) return &it->second;
  if (fam.series.size() >= maxSeries_) {
    ++fam.dropped;
    return nullptr;
  }
  Series& s = fam.series[std::move(key)];
  s.labels = labels;
  return &s;
}

void MetricSet::set(const MetricFamily& f, const MetricLabels& labels, double value) {
  if (Series* s = find(f, labels)) s->value = value;
}

void MetricSet::add(const MetricFamily& f, const MetricLabels& labels, double delta) {
  if (Series* s = find(f, labels)) s->value += delta;
}

void MetricSet::erase(const MetricFamily& f, const std::function<bool(const MetricLabels&)>& match) {
  auto it = families_.find(std::string_view(f.name));
  if (it == families_.end()) return;
  auto& series = it->second.series;
  for (auto s = series.begin(); s != series.end();) s = match(s->second.labels) ? series.erase(s) : std::next(s);
}

std::string MetricSet::render() const {
  std::string out;
  for (const auto& [name, fam] : families_) {
    if (fam.series.empty()) continue;
    out += "# HELP " + name + " ";
    // HELP text escapes only \ and newline (the format's rule for docstrings).
    for (const char* c = fam.spec->help; *c != '\0'; ++c) {
      if (*c == '\\')
        out += "\\\\";
      else if (*c == '\n')
        out += "\\n";
      else
        out += *c;
    }
    out += "\n# TYPE " + name + (fam.spec->type == MetricType::Counter ? " counter\n" : " gauge\n");
    for (const auto& [labels, s] : fam.series) out += name + labels + " " + renderValue(s.value) + "\n";
  }
  return out;
}

std::vector<std::string> MetricSet::familyNames() const {
  std::vector<std::string> out;
  for (const auto& [name, fam] : families_)
    if (!fam.series.empty()) out.push_back(name);
  return out;
}

std::map<std::string, uint64_t> MetricSet::droppedSeries() const {
  std::map<std::string, uint64_t> out;
  for (const auto& [name, fam] : families_)
    if (fam.dropped > 0) out[name] = fam.dropped;
  return out;
}

}  // namespace wirewise
