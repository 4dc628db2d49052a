// The rail scheduler as pure logic: a simulated pair of rails that deliver at known rates (a rail with
// outstanding bytes delivers rate x dt per step), the sender always backlogged. The scheduler must learn
// the rates, split bytes in their proportion, keep both rails busy, and follow a rail that drops to 10%.
#include "net/scheduler.h"

#include <algorithm>
#include <cstdio>

#include <gtest/gtest.h>

namespace wirewise::net {
namespace {

constexpr uint64_t kMs = 1'000'000;
constexpr uint64_t kChunk = 64 << 10;

struct Sim {
  RailScheduler sched;
  double trueRate[2];  // bytes/s
  uint64_t now;
  uint64_t outstanding[2] = {0, 0};
  uint64_t delivered[2] = {0, 0};

  Sim(double r0, double r1, std::vector<double> initial)
      : sched(initial, 0), trueRate{r0, r1}, now(0) {}

  // One millisecond: each rail delivers what its rate allows, then the scheduler refills.
  void step() {
    now += kMs;
    for (int r = 0; r < 2; ++r) {
      uint64_t can = static_cast<uint64_t>(trueRate[r] / 1000.0);
      uint64_t d = std::min(can, outstanding[r]);
      outstanding[r] -= d;
      delivered[r] += d;
      if (d > 0) sched.onDelivered(r, d);
    }
    const bool all[2] = {true, true};
    for (int guard = 0; guard < 10000; ++guard) {
      int r = sched.pick(all, kChunk, now);
      if (r < 0) break;
      sched.onAssigned(r, kChunk, now);
      outstanding[r] += kChunk;
    }
    sched.tick(now);
  }
  uint64_t total() const { return delivered[0] + delivered[1]; }
};

TEST(RailScheduler, LearnsRatesAndKeepsBothRailsBusy) {
  // Starts believing both rails are 10 Gb/s; really 50 and 25 MB/s.
  Sim sim(50e6, 25e6, {1.25e9, 1.25e9});
  for (int i = 0; i < 1000; ++i) sim.step();
  uint64_t before = sim.total();
  uint64_t before1 = sim.delivered[1];
  for (int i = 0; i < 1000; ++i) sim.step();
  double goodput = static_cast<double>(sim.total() - before);  // bytes in 1 s
  double share1 = static_cast<double>(sim.delivered[1] - before1) / (sim.total() - before);
  EXPECT_GT(goodput, 0.95 * 75e6);
  EXPECT_NEAR(share1, 1.0 / 3.0, 0.05);
  EXPECT_NEAR(sim.sched.rate(0), 50e6, 5e6);
  EXPECT_NEAR(sim.sched.rate(1), 25e6, 2.5e6);
  EXPECT_NEAR(sim.sched.share(1), 1.0 / 3.0, 0.05);
  // Queues stay short: about queueTarget (30 ms) of each rail's rate, never the whole backlog.
  EXPECT_LT(sim.sched.outstanding(0), static_cast<uint64_t>(50e6 * 0.04) + kChunk);
}

TEST(RailScheduler, FollowsARailThatDropsToTenPercent) {
  Sim sim(50e6, 50e6, {1.25e9, 1.25e9});
  for (int i = 0; i < 1000; ++i) sim.step();
  EXPECT_NEAR(sim.sched.share(1), 0.5, 0.05);
  const uint64_t change = sim.now;
  sim.trueRate[1] = 5e6;
  int rebalancedMs = -1;
  uint64_t windowStart = sim.total();
  for (int i = 1; i <= 2000; ++i) {
    sim.step();
    if (i % 100 == 0) {
      // Goodput over the last 100 ms against the new combined capacity (55 MB/s).
      double g = static_cast<double>(sim.total() - windowStart) * 10.0;
      if (rebalancedMs < 0 && g >= 0.9 * 55e6) rebalancedMs = i;
      windowStart = sim.total();
    }
  }
  std::printf("[scheduler sim] 50+50 MB/s -> 50+5 MB/s: goodput >= 90%% after %d ms, rail1 share %.3f\n",
              rebalancedMs, sim.sched.share(1));
  ASSERT_GE(rebalancedMs, 0);
  EXPECT_LE(rebalancedMs, 500);
  EXPECT_NEAR(sim.sched.share(1), 5.0 / 55.0, 0.03);
  EXPECT_GT(sim.sched.lastShiftNs(), change);
  EXPECT_LT(sim.sched.lastShiftNs(), change + 300 * kMs);
  EXPECT_NEAR(sim.sched.publishedShare(1), sim.sched.share(1), 0.05);
}

TEST(RailScheduler, ARecoveredRailIsProbedAndWinsBackItsShare) {
  Sim sim(50e6, 5e6, {50e6, 5e6});
  for (int i = 0; i < 500; ++i) sim.step();
  sim.trueRate[1] = 50e6;
  for (int i = 0; i < 2000; ++i) sim.step();
  EXPECT_NEAR(sim.sched.share(1), 0.5, 0.1);
}

TEST(RailScheduler, RailsThatCannotTakeOrAreDownGetNothing) {
  RailScheduler s({1e9, 1e9}, 0);
  const bool none[2] = {false, false};
  const bool only1[2] = {false, true};
  const bool both[2] = {true, true};
  EXPECT_EQ(s.pick(none, kChunk, 1), -1);
  EXPECT_EQ(s.pick(only1, kChunk, 1), 1);
  s.markDown(1, 5);
  EXPECT_EQ(s.pick(only1, kChunk, 6), -1);
  EXPECT_EQ(s.pick(both, kChunk, 6), 0);
  EXPECT_DOUBLE_EQ(s.share(1), 0.0);
  EXPECT_DOUBLE_EQ(s.share(0), 1.0);
  EXPECT_EQ(s.lastShiftNs(), 5u);
  EXPECT_FALSE(s.publishedUp(1));
}

TEST(RailScheduler, UnknownSpeedStillGetsAShare) {
  RailScheduler s({0.0, 0.0}, 0);
  EXPECT_GT(s.rate(0), 0.0);
  EXPECT_DOUBLE_EQ(s.share(0), 0.5);
}

}  // namespace
}  // namespace wirewise::net
