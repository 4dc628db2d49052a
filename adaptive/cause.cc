#include "adaptive/cause.h"

#include <algorithm>
#include <cmath>
#include <vector>

#include "common/units.h"

namespace wirewise::adapt {

std::string_view causeName(CauseKind k) {
  switch (k) {
    case CauseKind::Latency: return "latency";
    case CauseKind::Bandwidth: return "bandwidth";
    case CauseKind::Both: return "both";
    case CauseKind::None: break;
  }
  return "none";
}

Cause inferCause(std::span<const BucketDelta> buckets, const CauseParams& p) {
  Cause c;
  std::vector<BucketDelta> v;
  for (const BucketDelta& d : buckets)
    if (std::isfinite(d.bytes) && std::isfinite(d.beforeUs) && std::isfinite(d.afterUs) && d.bytes > 0 &&
        d.beforeUs > 0 && d.afterUs > 0)
      v.push_back(d);
  std::sort(v.begin(), v.end(), [](const BucketDelta& x, const BucketDelta& y) { return x.bytes < y.bytes; });
  c.sizes = static_cast<int>(v.size());
  if (c.sizes < std::max(p.minBuckets, 2)) {
    c.why = "too few sizes";
    return c;
  }
  const BucketDelta& lo = v.front();
  const BucketDelta& hi = v.back();
  c.smallBytes = lo.bytes, c.largeBytes = hi.bytes;
  c.smallDeltaUs = lo.afterUs - lo.beforeUs;
  c.largeDeltaPct = (hi.afterUs / hi.beforeUs - 1) * 100;
  if (hi.bytes < p.minSpan * lo.bytes) {
    c.why = "sizes too close";
    return c;
  }
  // Weighted least squares, x scaled to the largest size so that the sums stay well conditioned. The noise
  // of a bucket's time is relative (jitter scales with the time), hence the weights.
  double s = 0, sx = 0, sxx = 0, sy = 0, sxy = 0;
  for (const BucketDelta& d : v) {
    const double sd = p.noise * d.beforeUs, w = 1 / (sd * sd), x = d.bytes / hi.bytes, y = d.afterUs - d.beforeUs;
    s += w, sx += w * x, sxx += w * x * x, sy += w * y, sxy += w * x * y;
  }
  const double det = s * sxx - sx * sx;
  if (!(det > 0)) {
    c.why = "sizes too close";
    return c;
  }
  const double a = (sxx * sy - sx * sxy) / det, bL = (s * sxy - sx * sy) / det;  // bL: slope times largest size
  const double seA = std::sqrt(sxx / det), seBL = std::sqrt(s / det);
  c.latencyUs = a;
  c.perByteUs = bL / hi.bytes;
  if (v.size() >= 3) {
    double chi2 = 0;
    for (const BucketDelta& d : v) {
      const double r = (d.afterUs - d.beforeUs - a - bL * d.bytes / hi.bytes) / (p.noise * d.beforeUs);
      chi2 += r * r;
    }
    if (chi2 / static_cast<double>(v.size() - 2) > p.maxChi2) {
      c.why = "not a line";
      return c;
    }
  }
  // Each term must stand out of the noise and matter where it matters most: a latency at the smallest
  // size, a per-byte cost at the largest.
  const bool lat = std::fabs(a) > p.z * seA && std::fabs(a) >= p.minShare * lo.beforeUs;
  const bool bw = std::fabs(bL) > p.z * seBL && std::fabs(bL) >= p.minShare * hi.beforeUs;
  // Opposite signs (less latency but less bandwidth, or the reverse) is what buckets whose baselines were
  // learnt in different link states look like (one re-baselined after the change, the other not): not one
  // change, so nothing is named.
  if (lat && bw && (a > 0) != (bL > 0)) {
    c.why = "opposite signs";
    return c;
  }
  c.kind = lat && bw ? CauseKind::Both : lat ? CauseKind::Latency : bw ? CauseKind::Bandwidth : CauseKind::None;
  if (c.kind == CauseKind::None) c.why = "within noise";
  return c;
}

std::string explainCause(const Cause& c, std::string_view coll) {
  if (c.kind == CauseKind::None) return "";
  const std::string who(coll), small = roughBytesText(c.smallBytes), large = roughBytesText(c.largeBytes);
  const std::string largeText =
      large + " " + (c.largeDeltaPct >= 0 ? "slowed" : "sped up") + " by " + finePercentText(c.largeDeltaPct);
  const std::string range = " at every size from " + small + " to " + large;
  const std::string smallDelta = signedDurationText(c.smallDeltaUs);
  if (c.kind == CauseKind::Latency)
    return who + " " +
           (c.latencyUs >= 0 ? "slowed by " + signedDurationText(c.latencyUs)
                             : "sped up by " + signedDurationText(-c.latencyUs).substr(1)) +
           range + " (" + small + ": " + smallDelta + ") while " + largeText + ": a latency " +
           (c.latencyUs >= 0 ? "rise" : "drop") + ", not bandwidth";
  if (c.kind == CauseKind::Bandwidth)
    return who + " changed in proportion to the bytes: " + largeText + " while " + small + " changed by " +
           smallDelta + ": a bandwidth " + (c.perByteUs >= 0 ? "loss" : "gain") + ", not latency";
  return who + " changed by " + signedDurationText(c.latencyUs) + " per collective" + range + " plus " +
         signedDurationText(c.perByteUs * c.largeBytes) + " at " + large + " (" + largeText +
         "): both latency and bandwidth";
}

}  // namespace wirewise::adapt
