#include "sim/driver/noise.h"

#include <cmath>

#include <gtest/gtest.h>

#include "sim/driver/driver.h"

namespace wirewise::sim {
namespace {

TEST(Rng, SameSeedSameStreamDifferentSeedDifferentStream) {
  Rng a(7), b(7), c(8);
  int differ = 0;
  for (int i = 0; i < 100; ++i) {
    const double x = a.uniform();
    EXPECT_EQ(x, b.uniform());
    differ += x != c.uniform();
  }
  EXPECT_GT(differ, 95);
}

TEST(Rng, MersenneTwisterIsTheStandardOne) {
  // The 10000th output of a default-seeded mt19937_64 is fixed by the C++ standard.
  Rng r(5489u);
  uint64_t v = 0;
  for (int i = 0; i < 10000; ++i) v = r.next();
  EXPECT_EQ(v, 9981545732273789042ull);
}

TEST(Rng, NormalHasUnitMoments) {
  Rng r(1);
  const int n = 200000;
  double s = 0, s2 = 0;
  for (int i = 0; i < n; ++i) {
    const double z = r.normal();
    s += z;
    s2 += z * z;
  }
  const double mean = s / n, var = s2 / n - mean * mean;
  EXPECT_NEAR(mean, 0.0, 0.01);
  EXPECT_NEAR(var, 1.0, 0.02);
}

TEST(Rng, BelowStaysInRangeAndCoversIt) {
  Rng r(3);
  int hits[5] = {};
  for (int i = 0; i < 5000; ++i) {
    const int v = r.below(5);
    ASSERT_GE(v, 0);
    ASSERT_LT(v, 5);
    ++hits[v];
  }
  for (int h : hits) EXPECT_GT(h, 800);
}

TEST(NoiseSource, JitterHasMeanOneAndTheGivenSd) {
  NoiseSource ns(Noise{0.05, 0, 0}, 11);
  const int n = 100000;
  double s = 0, s2 = 0;
  for (int i = 0; i < n; ++i) {
    const NoiseDraw d = ns.draw(8);
    EXPECT_EQ(d.lateMember, -1);
    s += d.multiplier;
    s2 += d.multiplier * d.multiplier;
  }
  const double mean = s / n, sd = std::sqrt(s2 / n - mean * mean);
  EXPECT_NEAR(mean, 1.0, 0.002);
  EXPECT_NEAR(sd, 0.05, 0.002);
}

TEST(NoiseSource, StragglersComeAtTheGivenRate) {
  NoiseSource ns(Noise{0, 0.1, 500}, 12);
  int late = 0;
  for (int i = 0; i < 20000; ++i) {
    const NoiseDraw d = ns.draw(16);
    EXPECT_EQ(d.multiplier, 1.0);
    if (d.lateMember >= 0) {
      ++late;
      EXPECT_LT(d.lateMember, 16);
      EXPECT_EQ(d.lateUs, 500);
    }
  }
  EXPECT_NEAR(late / 20000.0, 0.1, 0.01);
}

TEST(NoiseSource, NoNoiseMeansNoEffect) {
  NoiseSource ns(Noise{}, 1);
  for (int i = 0; i < 1000; ++i) {
    const NoiseDraw d = ns.draw(4);
    EXPECT_EQ(d.multiplier, 1.0);
    EXPECT_EQ(d.lateMember, -1);
  }
}

TEST(CommId, DeterministicAndDistinctPerInstance) {
  EXPECT_EQ(commIdFor("tp", 0), commIdFor("tp", 0));
  EXPECT_NE(commIdFor("tp", 0), commIdFor("tp", 1));
  EXPECT_NE(commIdFor("tp", 0), commIdFor("world", 0));
}

}  // namespace
}  // namespace wirewise::sim
