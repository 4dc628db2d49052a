#include "tools/log_savings.h"

#include <fmt/core.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <map>
#include <set>
#include <tuple>
#include <utility>

#include "common/units.h"

namespace wirewise::tools {
namespace {

bool isNccl(const std::string& decision, const std::string& ncclName) {
  return decision == logev::kNcclDecision || (!ncclName.empty() && decision == ncclName);
}

// Whether an observed choice runs `decision` ("algo/proto/channels"; channels 0 or absent: NCCL's count).
bool runs(const ObservedRow& r, const std::string& decision) {
  const size_t a = decision.find('/');
  if (a == std::string::npos) return false;
  const size_t b = decision.find('/', a + 1);
  if (decision.compare(0, a, r.algo) != 0) return false;
  if (decision.compare(a + 1, b == std::string::npos ? std::string::npos : b - a - 1, r.proto) != 0) return false;
  const int64_t ch = b == std::string::npos ? 0 : std::atoll(decision.c_str() + b + 1);
  return ch == 0 || ch == r.channels;
}

// A change of the committed choice for a range, as the policy measured it at the time.
struct Change {
  int64_t ms = 0;
  const AdaptEvent* event = nullptr;
};

bool changesChoice(const AdaptEvent& a) {
  return a.from != a.to && (a.kind == "calibrated" || a.kind == "commit" || a.kind == "recover" || a.kind == "revert");
}

// A job's worth of time reads in seconds; below one, as the rest of the summary writes durations.
std::string totalText(double us) { return us >= 1e6 ? fmt::format("{:.2f} s", us * 1e-6) : durationText(us); }

}  // namespace

SavingsEstimate estimateSavings(const CommSummary& c) {
  SavingsEstimate e;
  std::set<std::pair<int64_t, int64_t>> reporters;  // (pid, rank) of the profiler faces: who wrote summaries
  for (const auto& i : c.inits)
    if (i.face == "profiler") reporters.insert({i.pid, i.rank});
  e.ranks = reporters.empty() ? 1 : static_cast<int64_t>(reporters.size());
  for (const auto& [key, row] : c.rows) e.runUs += row.p50Sum;

  // Per (collective, bucket): its rows in input order, and its smallest message.
  std::map<std::pair<int, int64_t>, std::vector<const TimedRow*>> buckets;
  std::map<std::pair<int, int64_t>, uint64_t> smallest;
  for (const TimedRow& t : c.timedRows) {
    const std::pair<int, int64_t> b{std::get<0>(t.key), std::get<1>(t.key)};
    buckets[b].push_back(&t);
    const uint64_t lo = c.rows.at(t.key).minBytes;
    auto [it, fresh] = smallest.try_emplace(b, lo);
    if (!fresh) it->second = std::min(it->second, lo);
  }
  for (auto& [b, rows] : buckets) {
    // In time order, each interval's rows together: every rank's intervals meet the same changes.
    std::stable_sort(rows.begin(), rows.end(), [](const TimedRow* x, const TimedRow* y) {
      return std::tie(x->ms, x->summary) < std::tie(y->ms, y->summary);
    });
    const std::string& coll = c.rows.at(rows.front()->key).coll;
    std::vector<Change> changes;
    bool measured = true;
    for (const AdaptEvent& a : c.adapts) {
      if (a.coll != coll || smallest[b] < a.minBytes || smallest[b] > a.maxBytes || !changesChoice(a)) continue;
      if (!a.beforeUs || !a.afterUs) measured = false;
      changes.push_back({tsMillis(a.ts).value_or(0), &a});
    }
    std::stable_sort(changes.begin(), changes.end(), [](const Change& x, const Change& y) { return x.ms < y.ms; });
    if (!measured) {
      ++e.bucketsUnknown;
      continue;
    }
    // Walk the intervals in order, with what is committed and what it gains per call over NCCL's choice.
    double gain = 0, runUs = 0, savedUs = 0;
    std::string committed;  // "": NCCL's own
    bool other = !changes.empty();
    size_t next = 0;
    for (size_t i = 0; i < rows.size();) {
      size_t end = i;
      while (end < rows.size() && rows[end]->summary == rows[i]->summary) ++end;
      for (; next < changes.size() && changes[next].ms <= rows[i]->ms; ++next) {
        const AdaptEvent& a = *changes[next].event;
        const double delta = *a.beforeUs - *a.afterUs;
        gain = committed.empty() || isNccl(a.from, a.fromNccl) ? delta : gain + delta;
        committed = a.to;
        if (isNccl(a.to, a.fromNccl)) gain = 0, committed.clear();
      }
      // The interval's incumbent is the choice most of its calls ran; the others were probes, whose cost
      // or gain is measured against it in the same interval, under the same conditions.
      const TimedRow* incumbent = rows[i];
      for (size_t k = i; k < end; ++k)
        if (rows[k]->count > incumbent->count) incumbent = rows[k];
      const double incumbentGain = !committed.empty() && runs(c.rows.at(incumbent->key), committed) ? gain : 0;
      for (size_t k = i; k < end; ++k) {
        const TimedRow& r = *rows[k];
        runUs += static_cast<double>(r.count) * r.p50Us;
        const double ncclPerCall = incumbent->p50Us + incumbentGain;
        if (&r == incumbent) {
          savedUs += static_cast<double>(r.count) * incumbentGain;
        } else {
          savedUs += static_cast<double>(r.count) * (ncclPerCall - r.p50Us);
          other = true;
        }
      }
      i = end;
    }
    if (!other) continue;  // NCCL's choice alone ran here: nothing saved, nothing to say
    ++e.bucketsEstimated;
    e.savedUs += savedUs;
    e.estimatedRunUs += runUs;
  }
  const double n = static_cast<double>(e.ranks);
  e.savedUs /= n, e.runUs /= n, e.estimatedRunUs /= n;
  return e;
}

std::string savingsText(const SavingsEstimate& e) {
  if (!e.any()) {
    if (e.bucketsUnknown == 0) return "";
    return fmt::format("  against NCCL's choices: not estimated ({} size buckets changed choice without a "
                       "measurement before and after)\n",
                       e.bucketsUnknown);
  }
  const double ncclUs = e.estimatedRunUs + e.savedUs;
  const double share = ncclUs > 0 ? 100.0 * e.savedUs / ncclUs : 0;
  std::string out = fmt::format(
      "  against NCCL's choices: {} {} per rank ({} of the {} NCCL's choices would have taken in the {} size "
      "buckets estimated, which ran {} of the {} of collectives; exploration included)\n",
      e.savedUs >= 0 ? "saved" : "cost", totalText(std::abs(e.savedUs)), finePercentText(std::abs(share)),
      totalText(ncclUs), e.bucketsEstimated, totalText(e.estimatedRunUs), totalText(e.runUs));
  if (e.bucketsUnknown > 0)
    out += fmt::format("          {} more size buckets not estimated: a change there has no measurement before "
                       "and after\n",
                       e.bucketsUnknown);
  return out;
}

}  // namespace wirewise::tools
