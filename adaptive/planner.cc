#include "adaptive/planner.h"

#include <algorithm>
#include <cmath>

namespace wirewise::adapt {

namespace {
constexpr int kMaxEstimateN = 64;  // an estimate forgets old intervals at about this many collectives
}

void addObservation(Estimates& e, const Observation& o, uint64_t epoch) {
  if (o.n <= 0 || !(o.medianUs > 0)) return;
  Estimate& s = e[o.choice];
  double x = std::log(o.medianUs);
  if (s.epoch != epoch || s.n == 0) {
    s = {x, std::min(o.n, kMaxEstimateN), epoch};
    return;
  }
  int n = std::min(o.n, kMaxEstimateN);
  s.logUs = (s.logUs * s.n + x * n) / (s.n + n);
  s.n = std::min(s.n + n, kMaxEstimateN);
}

std::vector<Decision> pairCandidates(const Sight& s, double pruneFactor, Choice skip) {
  struct C {
    float cost;
    int a, p;
  };
  std::vector<C> on;
  for (int a = 0; a < kNumAlgos; ++a)
    for (int p = 0; p < kNumProtos; ++p) {
      float c = s.cost[a][p];
      if (c >= 0.0f && c < CostTableView::kExcluded) on.push_back({c, a, p});
    }
  if (on.empty()) return {};
  float best = std::min_element(on.begin(), on.end(), [](const C& x, const C& y) { return x.cost < y.cost; })->cost;
  std::stable_sort(on.begin(), on.end(), [](const C& x, const C& y) { return x.cost < y.cost; });
  std::vector<Decision> out;
  for (const C& c : on) {
    if (c.cost > pruneFactor * std::max(best, 1e-3f)) break;
    if (c.a == skip.algo && c.p == skip.proto) continue;
    out.push_back({static_cast<int8_t>(c.a), static_cast<int8_t>(c.p), 0});
  }
  return out;
}

std::vector<int> channelCandidates(const Estimates& e, uint64_t epoch, int8_t algo, int8_t proto, int maxChannels,
                                   const std::set<int>& tried) {
  std::map<int, double> pts;  // channel count -> log time, measured in this epoch
  for (const auto& [c, s] : e)
    if (c.algo == algo && c.proto == proto && s.epoch == epoch && s.n > 0) pts[c.nChannels] = s.logUs;
  if (pts.empty() || maxChannels < 1) return {};
  std::set<int> known = tried;
  for (const auto& [c, l] : pts) known.insert(c);
  std::vector<int> out;
  auto add = [&](int c) {
    if (c >= 1 && c <= maxChannels && !known.count(c) && std::find(out.begin(), out.end(), c) == out.end())
      out.push_back(c);
  };
  // Coarse grid first.
  // (C/4 and below are usually 2-3x slower: reached only through a bracket when C/2 wins.)
  for (int num : {4, 3, 2}) add(std::max(1, (maxChannels * num + 3) / 4));
  if (!out.empty()) return out;
  // Then brackets around local minima (among measured points, in channel order) close to the best.
  double best = pts.begin()->second;
  for (const auto& [c, l] : pts) best = std::min(best, l);
  std::vector<std::pair<int, double>> v(pts.begin(), pts.end());
  std::vector<std::pair<double, int>> minima;
  for (size_t i = 0; i < v.size(); ++i) {
    bool leftOk = i == 0 || v[i].second <= v[i - 1].second;
    bool rightOk = i + 1 == v.size() || v[i].second <= v[i + 1].second;
    if (leftOk && rightOk && v[i].second <= best + std::log(1.10)) minima.push_back({v[i].second, v[i].first});
  }
  std::sort(minima.begin(), minima.end());
  for (const auto& [l, c] : minima) {
    int lo = 0, hi = maxChannels + 1;
    for (int k : known) {
      if (k < c) lo = std::max(lo, k);
      if (k > c) hi = std::min(hi, k);
    }
    if (c - lo >= 2) add(lo == 0 ? std::max(1, c / 2) : (lo + c) / 2);
    if (hi - c >= 2) add(hi == maxChannels + 1 ? (c + maxChannels + 1) / 2 : (c + hi) / 2);
    if (!out.empty()) break;  // one bracket at a time, best minimum first
  }
  return out;
}

std::vector<Choice> reprobeCandidates(const Estimates& e, Choice incumbent, double incumbentLogBefore,
                                      double incumbentLogNow,
                                      std::optional<Choice> former, std::optional<Choice> nccl, double closeFactor,
                                      int max) {
  // Common mode: a link that every candidate crosses changes them all alike.
  const double shift = incumbentLogNow - incumbentLogBefore;
  struct P {
    double log;
    Choice c;
  };
  std::vector<P> ps;
  for (const auto& [c, s] : e) {
    if (c == incumbent || s.n == 0) continue;
    ps.push_back({s.logUs + shift, c});
  }
  std::stable_sort(ps.begin(), ps.end(), [](const P& x, const P& y) { return x.log < y.log; });
  std::vector<Choice> out;
  auto add = [&](Choice c) {
    if (c != incumbent && std::find(out.begin(), out.end(), c) == out.end()) out.push_back(c);
  };
  // Best predicted first; the former choice and NCCL's are always re-measured (a healed link makes the
  // former best again; NCCL's own choice is where wirewise returns when nothing beats it).
  const double limit = incumbentLogNow + std::log(closeFactor);
  for (const P& p : ps) {
    if (static_cast<int>(out.size()) >= max) break;
    if (p.log <= limit || (former && p.c == *former) || (nccl && p.c == *nccl)) add(p.c);
  }
  if (former && static_cast<int>(out.size()) < max) add(*former);
  if (nccl && static_cast<int>(out.size()) < max) add(*nccl);
  return out;
}

std::optional<std::pair<Choice, Estimate>> bestInEpoch(const Estimates& e, uint64_t epoch) {
  std::optional<std::pair<Choice, Estimate>> best;
  for (const auto& [c, s] : e) {
    if (s.epoch != epoch || s.n == 0) continue;
    if (!best || s.logUs < best->second.logUs ||
        (s.logUs == best->second.logUs && c.nChannels < best->first.nChannels))
      best = {c, s};
  }
  return best;
}

}  // namespace wirewise::adapt
