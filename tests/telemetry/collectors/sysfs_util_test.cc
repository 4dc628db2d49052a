#include "telemetry/collectors/sysfs_util.h"

#include <gtest/gtest.h>

#include <cmath>

#include "tests/telemetry/collectors/fake_sysfs.h"

namespace wirewise::collectors {
namespace {

using Step = CounterTrack::Step;

TEST(SysfsUtil, ParsesCountersStrictly) {
  EXPECT_EQ(parseU64("123\n"), 123u);
  EXPECT_EQ(parseU64("18446744073709551615"), UINT64_MAX);
  EXPECT_FALSE(parseU64("18446744073709551616"));  // overflow
  EXPECT_FALSE(parseU64(""));
  EXPECT_FALSE(parseU64("-1\n"));  // netdev speed of a virtual device
  EXPECT_FALSE(parseU64("12abc"));
  EXPECT_FALSE(parseU64("N/A"));
}

TEST(SysfsUtil, ParsesIbRateAndState) {
  EXPECT_DOUBLE_EQ(*parseIbRate("400 Gb/sec (4X NDR)\n"), 400e9 / 8);
  EXPECT_DOUBLE_EQ(*parseIbRate("2.5 Gb/sec (1X SDR)"), 2.5e9 / 8);
  EXPECT_DOUBLE_EQ(*parseIbRate("100 Gb/sec (2X HDR)"), 100e9 / 8);
  EXPECT_FALSE(parseIbRate("fast"));
  EXPECT_FALSE(parseIbRate("400 Mb/sec"));
  EXPECT_FALSE(parseIbRate(""));
  EXPECT_EQ(parseIbState("4: ACTIVE\n"), 4);
  EXPECT_EQ(parseIbState("1: DOWN"), 1);
  EXPECT_FALSE(parseIbState("ACTIVE"));
  EXPECT_FALSE(parseIbState("x: ACTIVE"));
}

TEST(SysfsUtil, ReadsFilesAndReportsMissingOnes) {
  testing::FakeSysfs fs;
  fs.write("a/value", "42\n");
  fs.write("a/garbage", "\x01\x02zz");
  EXPECT_EQ(readU64(fs.root() + "/a/value"), 42u);
  EXPECT_FALSE(readU64(fs.root() + "/a/garbage"));
  EXPECT_FALSE(readU64(fs.root() + "/a/missing"));
  EXPECT_EQ(listDir(fs.root() + "/a"), (std::vector<std::string>{"garbage", "value"}));
  EXPECT_TRUE(listDir(fs.root() + "/nope").empty());
}

TEST(CounterTrack, DeltaWrapResetSaturateMissing) {
  CounterTrack t;
  uint64_t d = 0;
  EXPECT_EQ(t.step(100, &d), Step::kFirst);
  EXPECT_EQ(t.step(150, &d), Step::kDelta);
  EXPECT_EQ(d, 50u);
  // 32-bit wrap: from near 2^32 to small.
  t.step(0xFFFFFF00ull, &d);
  EXPECT_EQ(t.step(0x10, &d), Step::kWrap32);
  EXPECT_EQ(d, 0x100u + 0x10u);
  // A 64-bit counter going backwards is a reset, not a wrap.
  t.step(0x500000000ull, &d);
  EXPECT_EQ(t.step(7, &d), Step::kReset);
  EXPECT_EQ(d, 7u);
  // Saturated legacy counter.
  t.step(0xFFFFFFFFull, &d);
  EXPECT_EQ(t.step(0xFFFFFFFFull, &d), Step::kSaturated);
  // Vanishing re-baselines.
  EXPECT_EQ(t.step(std::nullopt, &d), Step::kMissing);
  EXPECT_EQ(t.step(5, &d), Step::kFirst);
  EXPECT_EQ(t.step(9, &d), Step::kDelta);
  EXPECT_EQ(d, 4u);
  EXPECT_EQ(t.wraps, 1u);
  EXPECT_EQ(t.resets, 1u);
  EXPECT_EQ(t.missing, 1u);
}

TEST(RateMeter, SmoothsIrregularIntervals) {
  RateMeter m;
  m.update(0, 0.0, 1.0, 1.0);
  EXPECT_FALSE(m.valid);
  m.update(1000, 1.0, 1.0, 1.0);
  EXPECT_TRUE(m.valid);
  EXPECT_DOUBLE_EQ(m.smoothed, 1000.0);  // first interval seeds the estimate
  m.update(1000 + 4000, 2.0, 1.0, 1.0);  // 2000/s over 2 s: alpha = 1 - e^-2
  EXPECT_DOUBLE_EQ(m.lastRate, 2000.0);
  EXPECT_NEAR(m.smoothed, 1000 + (1 - std::exp(-2.0)) * 1000, 1e-9);
  m.update(std::nullopt, 1.0, 1.0, 1.0);  // vanished: estimate kept, interval not counted
  EXPECT_EQ(m.lastStep, CounterTrack::Step::kMissing);
}

}  // namespace
}  // namespace wirewise::collectors
