#include "adaptive/detector.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <limits>
#include <numbers>
#include <random>

namespace wirewise::adapt {
namespace {

// Standard normal by Box-Muller on mt19937_64: std::normal_distribution differs between standard
// libraries, and these tests count rare events, so the stream must be the same everywhere.
class Normal {
 public:
  explicit Normal(uint64_t seed) : gen_(seed) {}
  double operator()() {
    if (haveSpare_) {
      haveSpare_ = false;
      return spare_;
    }
    double r = std::sqrt(-2.0 * std::log(uniform()));
    double t = 2.0 * std::numbers::pi * uniform();
    spare_ = r * std::sin(t);
    haveSpare_ = true;
    return r * std::cos(t);
  }

 private:
  double uniform() { return (static_cast<double>(gen_() >> 11) + 0.5) * 0x1.0p-53; }  // in (0, 1)
  std::mt19937_64 gen_;
  bool haveSpare_ = false;
  double spare_ = 0;
};

const double kBase = std::log(1000.0);  // a 1 ms interval median, in log µs

// Observations until the first alarm of any kind (limit + 1 if none), after a known baseline.
struct FirstAlarm {
  int at = 0;
  Shift shift = Shift::None;
};
FirstAlarm runStep(double ratio, double sigma, Normal& z, int limit, DetectorParams p = {}) {
  ChangeDetector d(p);
  d.resetTo(kBase);
  for (int i = 1; i <= limit; ++i) {
    Shift s = d.observe(kBase + std::log(ratio) + sigma * z());
    if (s != Shift::None) return {i, s};
  }
  return {limit + 1, Shift::None};
}

TEST(ChangeDetector, WarmupSetsBaselineToMeanAndNeverAlarms) {
  ChangeDetector d(DetectorParams{.warmup = 3});
  EXPECT_FALSE(d.calibrated());
  EXPECT_EQ(d.observe(1.0), Shift::None);
  EXPECT_EQ(d.observe(5.0), Shift::None);  // wildly different, still calibration
  EXPECT_FALSE(d.calibrated());
  EXPECT_EQ(d.observe(3.0), Shift::None);
  EXPECT_TRUE(d.calibrated());
  EXPECT_DOUBLE_EQ(d.baseline(), 3.0);
  EXPECT_EQ(d.upper(), 0.0);
  EXPECT_EQ(d.lower(), 0.0);
}

TEST(ChangeDetector, SumsFollowTheClippedRecursion) {
  ChangeDetector d(DetectorParams{.shock = 100.0});  // k = 0.03, h = 0.12, clip = 0.09; no shock alarm
  d.resetTo(0.0);
  d.observe(0.05);  // +0.02 up, -0.08 down
  EXPECT_NEAR(d.upper(), 0.02, 1e-12);
  EXPECT_EQ(d.lower(), 0.0);
  d.observe(1.0);  // clipped to +0.09
  EXPECT_NEAR(d.upper(), 0.11, 1e-12);
  EXPECT_NEAR(d.statistic(), 0.11, 1e-12);
  d.observe(-0.05);  // -0.08 up (unclipped), +0.02 down
  EXPECT_NEAR(d.upper(), 0.03, 1e-12);
  EXPECT_NEAR(d.lower(), 0.02, 1e-12);
}

TEST(ChangeDetector, StepSlower25PercentAlarmsWithinTwo) {
  Normal z(1);
  for (int trial = 0; trial < 200; ++trial) {
    FirstAlarm a = runStep(1.25, 0.01, z, 50);
    EXPECT_LE(a.at, 2) << trial;
    EXPECT_EQ(a.shift, Shift::Slower) << trial;
  }
}

TEST(ChangeDetector, StepFaster20PercentAlarmsWithinThree) {
  Normal z(2);
  for (int trial = 0; trial < 200; ++trial) {
    FirstAlarm a = runStep(0.80, 0.01, z, 50);
    EXPECT_LE(a.at, 3) << trial;
    EXPECT_EQ(a.shift, Shift::Faster) << trial;
  }
}

TEST(ChangeDetector, Step8PercentAlarmsWithinEight) {
  Normal z(3);
  for (int trial = 0; trial < 200; ++trial) {
    FirstAlarm a = runStep(1.08, 0.01, z, 50);
    EXPECT_LE(a.at, 8) << trial;
    EXPECT_EQ(a.shift, Shift::Slower) << trial;
  }
}

TEST(ChangeDetector, Step2PercentIsBelowTheDriftAndNeverAlarms) {
  Normal z(4);
  for (int trial = 0; trial < 50; ++trial) EXPECT_EQ(runStep(1.02, 0.01, z, 200).at, 201) << trial;
}

TEST(ChangeDetector, RampAlarmsBeforeFifteenPercent) {
  Normal z(5);
  for (int trial = 0; trial < 100; ++trial) {
    ChangeDetector d;
    d.resetTo(kBase);
    double ratio = 1.0;
    Shift s = Shift::None;
    while (s == Shift::None && ratio < 2.0) {
      ratio *= 1.01;
      s = d.observe(kBase + std::log(ratio) + 0.01 * z());
    }
    EXPECT_EQ(s, Shift::Slower) << trial;
    EXPECT_LT(ratio, 1.15) << trial;
  }
}

// Noise only, with the baseline known and with it calibrated from `warmup` noisy observations (the
// caller re-baselines after each alarm). Returns the alarm counts.
struct NoiseRun {
  long known = 0, calibrated = 0;
};
NoiseRun runNoise(double sigma, long n, uint64_t seed) {
  NoiseRun r;
  Normal z(seed);
  ChangeDetector known;
  known.resetTo(kBase);
  ChangeDetector calibrated;
  for (long i = 0; i < n; ++i) {
    if (known.observe(kBase + sigma * z()) != Shift::None) ++r.known;
    if (calibrated.observe(kBase + sigma * z()) != Shift::None) {
      ++r.calibrated;
      calibrated.reset();
    }
  }
  std::printf("sigma %.2f, %ld observations: %ld false alarms (ARL %.0f) with a known baseline, %ld (ARL %.0f) "
              "calibrated\n",
              sigma, n, r.known, r.known ? static_cast<double>(n) / r.known : INFINITY, r.calibrated,
              r.calibrated ? static_cast<double>(n) / r.calibrated : INFINITY);
  return r;
}

TEST(ChangeDetector, NoiseSigma2PercentStaysWithinTheFalseAlarmBudget) {
  NoiseRun r = runNoise(0.02, 200'000, 6);
  EXPECT_LE(r.known, 2);
  EXPECT_LE(r.calibrated, 2);
}

// Beyond the noise the defaults are meant for (docs/policy.md): false alarms become routine, but stay
// rare enough that re-baselining after each one is cheap.
TEST(ChangeDetector, NoiseSigma4PercentFalseAlarmRateIsBounded) {
  const long n = 200'000;
  NoiseRun r = runNoise(0.04, n, 7);
  EXPECT_LE(r.known, n / 100);
  EXPECT_LE(r.calibrated, n / 50);
}

TEST(ChangeDetector, IsolatedStragglersNeverAlarm) {
  Normal z(8);
  ChangeDetector d;
  d.resetTo(kBase);
  for (int i = 1; i <= 20'000; ++i) {
    double outlier = i % 20 == 0 ? std::log(1.5) : 0.0;
    EXPECT_EQ(d.observe(kBase + outlier + 0.01 * z()), Shift::None) << i;
  }
}

TEST(ChangeDetector, TwoConsecutiveStragglersAlarm) {
  ChangeDetector d;
  d.resetTo(kBase);
  for (int i = 0; i < 10; ++i) ASSERT_EQ(d.observe(kBase), Shift::None);
  EXPECT_EQ(d.observe(kBase + std::log(1.5)), Shift::None);
  EXPECT_EQ(d.observe(kBase + std::log(1.5)), Shift::Slower);
}

TEST(ChangeDetector, ClippingIsWhatStopsASingleOutlier) {
  ChangeDetector d(DetectorParams{.clip = 1.0});
  d.resetTo(kBase);
  EXPECT_EQ(d.observe(kBase + std::log(1.5)), Shift::Slower);
}

TEST(ChangeDetector, AShockAlarmsOnTheFirstObservation) {
  ChangeDetector d;
  d.resetTo(kBase);
  // +50% stays below the shock level (log 1.5 = 0.41 < 0.5): the clip holds it back...
  EXPECT_EQ(d.observe(kBase + std::log(1.5)), Shift::None);
  d.resetTo(kBase);
  // ...but a contended link's 7x is a change, not a straggler: one observation is enough.
  EXPECT_EQ(d.observe(kBase + std::log(7.0)), Shift::Slower);
  d.resetTo(kBase);
  EXPECT_EQ(d.observe(kBase + std::log(0.5)), Shift::Faster);
  // And with the shock disabled the same jump needs a second interval.
  ChangeDetector slow(DetectorParams{.shock = 100.0});
  slow.resetTo(kBase);
  EXPECT_EQ(slow.observe(kBase + std::log(7.0)), Shift::None);
  EXPECT_EQ(slow.observe(kBase + std::log(7.0)), Shift::Slower);
}

TEST(ChangeDetector, AlarmRestartsSumsAroundTheSameBaseline) {
  ChangeDetector d;
  d.resetTo(kBase);
  const double slow = kBase + std::log(1.25);
  EXPECT_EQ(d.observe(slow), Shift::None);
  EXPECT_EQ(d.observe(slow), Shift::Slower);
  EXPECT_EQ(d.upper(), 0.0);
  EXPECT_EQ(d.lower(), 0.0);
  EXPECT_DOUBLE_EQ(d.baseline(), kBase);
  // Not re-baselined: the sustained shift alarms again after fresh evidence.
  EXPECT_EQ(d.observe(slow), Shift::None);
  EXPECT_EQ(d.observe(slow), Shift::Slower);
}

TEST(ChangeDetector, ResetForgetsEverything) {
  ChangeDetector d;
  d.resetTo(kBase);
  d.observe(kBase + 0.1);
  ASSERT_GT(d.upper(), 0.0);
  d.reset();
  EXPECT_FALSE(d.calibrated());
  EXPECT_EQ(d.upper(), 0.0);
  EXPECT_EQ(d.lower(), 0.0);
  EXPECT_EQ(d.observe(2.0), Shift::None);
  EXPECT_EQ(d.observe(4.0), Shift::None);
  EXPECT_TRUE(d.calibrated());
  EXPECT_DOUBLE_EQ(d.baseline(), 3.0);  // the old baseline and sum play no part
}

TEST(ChangeDetector, ResetToIsCalibratedAtOnce) {
  ChangeDetector d;
  d.observe(1.0);  // half-way through a calibration that resetTo abandons
  d.resetTo(kBase);
  EXPECT_TRUE(d.calibrated());
  EXPECT_DOUBLE_EQ(d.baseline(), kBase);
  EXPECT_EQ(d.statistic(), 0.0);
  EXPECT_EQ(d.observe(kBase + std::log(1.25)), Shift::None);
  EXPECT_EQ(d.observe(kBase + std::log(1.25)), Shift::Slower);  // judged against kBase, no warmup
}

TEST(ChangeDetector, NonFiniteObservationsAreIgnored) {
  const double kNan = std::numeric_limits<double>::quiet_NaN();
  const double kInf = std::numeric_limits<double>::infinity();
  ChangeDetector d;
  for (double bad : {kNan, kInf, -kInf}) EXPECT_EQ(d.observe(bad), Shift::None);
  EXPECT_FALSE(d.calibrated());  // none of them counted towards the warmup
  d.observe(2.0);
  d.observe(kNan);
  d.observe(4.0);
  EXPECT_DOUBLE_EQ(d.baseline(), 3.0);
  d.observe(3.1);
  const double up = d.upper(), down = d.lower();
  for (double bad : {kNan, kInf, -kInf}) EXPECT_EQ(d.observe(bad), Shift::None);
  EXPECT_EQ(d.upper(), up);
  EXPECT_EQ(d.lower(), down);
  EXPECT_DOUBLE_EQ(d.baseline(), 3.0);
}

TEST(ChangeDetector, NonFiniteBaselineLeavesItUncalibrated) {
  ChangeDetector d;
  d.resetTo(std::numeric_limits<double>::quiet_NaN());
  EXPECT_FALSE(d.calibrated());
}

}  // namespace
}  // namespace wirewise::adapt
