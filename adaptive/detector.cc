#include "adaptive/detector.h"

#include <algorithm>
#include <cmath>

namespace wirewise::adapt {

void ChangeDetector::reset() {
  seen_ = 0;
  sum_ = baseline_ = sPlus_ = sMinus_ = 0;
}

void ChangeDetector::resetTo(double baselineLog) {
  // A non-finite baseline would poison every later sum; keep the detector uncalibrated instead.
  if (!std::isfinite(baselineLog)) {
    reset();
    return;
  }
  seen_ = std::max(p_.warmup, 0);
  baseline_ = baselineLog;
  sum_ = baselineLog * seen_;
  sPlus_ = sMinus_ = 0;
}

Shift ChangeDetector::observe(double logTime) {
  // An empty or broken interval (log 0 = -inf, NaN) says nothing about the decision's cost.
  if (!std::isfinite(logTime)) return Shift::None;
  if (!calibrated()) {
    sum_ += logTime;
    if (++seen_ >= p_.warmup) baseline_ = sum_ / seen_;
    return Shift::None;  // the calibrating observations define "normal"; they cannot be a change
  }
  double x = logTime - baseline_;
  // Clip only the growth: one outlier interval (a straggler, a GC pause) adds at most `clip`, which is
  // below the threshold, so it takes two bad intervals in a row to alarm. Evidence against a shift is
  // never clipped, so a normal interval after an outlier discounts it fully.
  sPlus_ = std::max(0.0, sPlus_ + std::min(x - p_.drift, p_.clip));
  sMinus_ = std::max(0.0, sMinus_ + std::min(-x - p_.drift, p_.clip));
  Shift s = Shift::None;
  if (x > p_.shock) {
    s = Shift::Slower;
  } else if (-x > p_.shock) {
    s = Shift::Faster;
  } else if (sPlus_ > p_.threshold) {
    s = Shift::Slower;
  } else if (sMinus_ > p_.threshold) {
    s = Shift::Faster;
  }
  // Both sums restart so that the next alarm needs fresh evidence; the baseline stays (the caller
  // re-baselines with reset() or resetTo() once it has acted on the alarm).
  if (s != Shift::None) sPlus_ = sMinus_ = 0;
  return s;
}

}  // namespace wirewise::adapt
