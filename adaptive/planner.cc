#include "adaptive/planner.h"

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdio>
#include <limits>

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

int slowPeriod(uint64_t mask, int channels) {
  const int n = std::clamp(channels, 1, 64);
  auto slow = [mask](int i) { return ((mask >> i) & 1) != 0; };
  for (int p = 1; p < n; ++p) {
    bool ok = true;
    for (int i = p; i < n && ok; ++i) ok = slow(i) == slow(i % p);
    if (ok) return p;
  }
  return n;
}

double predictChannelFactor(const ChannelEvidence& ev, int c) {
  const int big = std::clamp(ev.channels, 1, 64);
  if (c < 1) return std::numeric_limits<double>::infinity();
  const int per = slowPeriod(ev.slowMask, big);
  auto inGroup = [per](int k, int x) { return x / per + (k < x % per ? 1 : 0); };  // channels i < x, i = k mod per
  const double scale = static_cast<double>(big) / c;
  double f = 0;
  bool healthyUsed = false;
  for (int k = 0; k < per; ++k) {
    const int used = inGroup(k, c);
    if (used == 0) continue;
    if (((ev.slowMask >> k) & 1) == 0) {
      healthyUsed = true;
      continue;
    }
    f = std::max(f, scale * used / std::max(1, inGroup(k, big)));
  }
  if (healthyUsed) f = std::max(f, scale / std::max(ev.ratio, 1.0));
  return f;
}

std::vector<int> rankChannelCounts(const ChannelEvidence& ev, double measuredLog, double belowLog, int maxChannels,
                                   const std::set<int>& known, size_t max) {
  if (ev.slowMask == 0 || ev.channels < 1) return {};
  // Ties (to rounding) go to fewer channels: there the healthy channels' side is the pessimistic one, and
  // fewer channels per NIC can only make them faster.
  std::vector<std::pair<long long, int>> v;
  for (int c = 1; c <= std::min({ev.channels, maxChannels, 64}); ++c) {
    if (known.count(c)) continue;
    const double l = measuredLog + std::log(predictChannelFactor(ev, c));
    if (l < belowLog) v.push_back({std::llround(l * 1e9), c});
  }
  std::sort(v.begin(), v.end());
  std::vector<int> out;
  for (size_t i = 0; i < v.size() && i < max; ++i) out.push_back(v[i].second);
  return out;
}

namespace {
std::string channelList(uint64_t mask) {
  std::vector<int> ids;
  for (uint64_t m = mask; m != 0; m &= m - 1) ids.push_back(std::countr_zero(m));
  std::string s = ids.size() == 1 ? "channel " : "channels ";
  for (size_t i = 0; i < ids.size(); ++i) {
    if (i > 0) s += i + 1 == ids.size() ? " and " : ", ";
    s += std::to_string(ids[i]);
  }
  return s;
}
}  // namespace

std::string explainChannels(const ChannelEvidence& ev, int chosen) {
  char ratio[32];
  std::snprintf(ratio, sizeof ratio, "%.1fx", ev.ratio);
  std::string s = channelList(ev.slowMask) + " ran " + ratio + " slower than the median";
  const uint64_t used = chosen >= 64 ? ev.slowMask : ev.slowMask & ((uint64_t{1} << std::max(chosen, 0)) - 1);
  if (chosen == ev.channels) return s;
  s += "; " + std::to_string(chosen) + " channels ";
  if (used == 0) return s + (std::popcount(ev.slowMask) == 1 ? "avoid it" : "avoid them");
  return s + "keep only " + channelList(used) + " of them, with fewer channels sharing " +
         (std::popcount(used) == 1 ? "its NIC" : "their NICs");
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
