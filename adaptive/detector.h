// Change detection on one (collective, bucket)'s committed decision: a two-sided CUSUM on the log ratio of
// measured to baseline time, with each observation clipped so that one outlier interval can never raise
// an alarm alone. Pure and deterministic. Parameters and the false-alarm budget: docs/policy.md.
#pragma once

#include <cstdint>

#include "common/settings.h"

namespace wirewise::adapt {

struct DetectorParams {
  double drift = defaults::kDetectDrift;          // k: log-ratio changes smaller than this (about 3%) are ignored
  double threshold = defaults::kDetectThreshold;  // h: alarm when a cumulative sum passes it
  double clip = 0.09;       // each observation's |x - k| contribution is clipped here (< threshold)
  int warmup = 2;           // observations that set the baseline (their mean log time)
  // A single observation this far from the baseline (about +65% / -39%) alarms at once: one interval's
  // merged median over many collectives cannot move that far by a straggler, only by a real change.
  double shock = 0.5;
};

enum class Shift : uint8_t { None, Slower, Faster };

class ChangeDetector {
 public:
  explicit ChangeDetector(DetectorParams p = {}) : p_(p) {}
  // Forget the baseline; the next `warmup` observations calibrate a new one.
  void reset();
  // Starts with a known baseline (log µs) instead of calibrating one.
  void resetTo(double baselineLog);
  // One interval's robust log time (log of the merged median, µs). Returns the shift this observation
  // completes (None most of the time). After an alarm the sums restart from 0 around the same baseline;
  // the caller decides whether to re-baseline (reset).
  Shift observe(double logTime);

  bool calibrated() const { return seen_ >= p_.warmup; }
  double baseline() const { return baseline_; }
  double upper() const { return sPlus_; }   // evidence for "slower"
  double lower() const { return sMinus_; }  // evidence for "faster"
  double statistic() const { return sPlus_ > sMinus_ ? sPlus_ : sMinus_; }
  const DetectorParams& params() const { return p_; }

 private:
  DetectorParams p_;
  int seen_ = 0;
  double sum_ = 0, baseline_ = 0, sPlus_ = 0, sMinus_ = 0;
};

}  // namespace wirewise::adapt
