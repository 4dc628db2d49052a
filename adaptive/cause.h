// What changed, inferred from the measurements alone (docs/policy.md §5, "Latency or bandwidth"): when a
// collective slows down at several message sizes, the shape of the change across sizes tells a latency rise
// (the same microseconds added whatever the size) from a bandwidth loss (time added in proportion to the
// bytes). This is the evidence that still speaks when no collector sees the cause: a fabric-wide latency
// rise on InfiniBand moves no host-local counter. Pure and deterministic.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <string_view>

namespace wirewise::adapt {

// One size bucket of one collective: its calibrated time and its latest measured time, same choice.
struct BucketDelta {
  double bytes = 0;     // the bucket's mean message size
  double beforeUs = 0;  // the calibrated baseline
  double afterUs = 0;   // the latest measurement
};

struct CauseParams {
  int minBuckets = 2;        // sizes needed; with 2 the fit is exact and rests on the noise model alone
  double minSpan = 16;       // largest over smallest size: below it latency and bandwidth look alike
  double noise = 0.02;       // relative sd of one bucket's measurement (the detector's noise budget)
  double z = 3;              // a term counts only when this many standard errors from 0
  double minShare = 0.05;    // ... and when it moves the size it matters most at by at least this much
  double maxChi2 = 9;        // with 3+ sizes: mean squared residual (in sds) above which the line does not fit
};

enum class CauseKind : uint8_t { None, Latency, Bandwidth, Both };

struct Cause {
  CauseKind kind = CauseKind::None;
  // Why there is no attribution: "too few sizes", "sizes too close", "within noise", "not a line",
  // "opposite signs".
  std::string why;
  double latencyUs = 0;    // fitted constant: microseconds added per collective, whatever the size
  double perByteUs = 0;    // fitted slope (µs per byte)
  int sizes = 0;
  // The measured figures the explanation quotes: smallest and largest size, their change.
  double smallBytes = 0, largeBytes = 0;
  double smallDeltaUs = 0, largeDeltaPct = 0;  // after - before (µs) at the smallest, percent at the largest
};

// Weighted least squares of (after - before) = a + b * bytes over the buckets, each weighted by its
// expected noise (noise * beforeUs)^-2. Buckets with non-finite or non-positive times are ignored.
Cause inferCause(std::span<const BucketDelta> buckets, const CauseParams& p = {});

// One clause for an explanation, "" without attribution, e.g. "allreduce slowed by +19 us at every size
// from 4 KiB to 1 MiB while 64 MiB slowed by 0.3%: a latency rise, not bandwidth".
std::string explainCause(const Cause& c, std::string_view coll);
std::string_view causeName(CauseKind k);  // "none", "latency", "bandwidth", "both"

}  // namespace wirewise::adapt
