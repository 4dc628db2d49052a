// The rail model (collectors::RailTracker) with injected readings: which rails are down or degraded and
// why, how the RTT baseline behaves, and when a rail_shift event is due.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "telemetry/collectors/link_health.h"

namespace wirewise::collectors {
namespace {

constexpr int64_t kSec = 1'000'000'000;

// One comm with two rails, eth0 and eth1, at the given rates, shares and RTTs; bytes grow every pass.
struct TwoRails {
  uint64_t conn = 1;
  double rate0 = 1e9, rate1 = 1e9, share0 = 0.5, share1 = 0.5;
  uint32_t rtt0 = 40, rtt1 = 40;
  bool up0 = true, up1 = true;
  uint64_t bytes0 = 0, bytes1 = 0, retrans0 = 0, retrans1 = 0;
  std::vector<RailReading> next(uint64_t bytesPerPass = 100'000'000) {
    bytes0 += up0 ? bytesPerPass : 0;
    bytes1 += up1 ? bytesPerPass : 0;
    RailReading a{conn, "10.0.0.2", "eth0", 0, up0, share0, rate0, bytes0, rtt0, retrans0, 0};
    RailReading b{conn, "10.0.0.2", "eth1", 1, up1, share1, rate1, bytes1, rtt1, retrans1, 0};
    return {a, b};
  }
};

const LinkHealth* find(const std::vector<LinkHealth>& links, const std::string& id) {
  for (const auto& l : links)
    if (l.id == id) return &l;
  return nullptr;
}

TEST(RailTracker, HealthyRailsAreUpAndNamedByInterface) {
  RailTracker t;
  TwoRails c;
  std::vector<LinkHealth> links;
  for (int i = 1; i <= 5; ++i) links = t.update(c.next(), i * kSec);
  ASSERT_EQ(links.size(), 2u);
  const LinkHealth* e1 = find(links, "rail:eth1");
  ASSERT_NE(e1, nullptr);
  EXPECT_EQ(e1->kind, LinkKind::kRail);
  EXPECT_EQ(e1->state, LinkState::kUp) << e1->reason;
  EXPECT_TRUE(e1->reason.empty());
  EXPECT_DOUBLE_EQ(e1->share, 0.5);
  EXPECT_NEAR(e1->txBps, 1e8, 1);  // 100 MB per 1 s pass
  EXPECT_DOUBLE_EQ(e1->baselineRttUs, 40);
  EXPECT_EQ(nlohmann::json(toJson(*e1))["kind"], "rail");
  EXPECT_TRUE(t.takeShifts().empty());
}

TEST(RailTracker, ARailFarBelowItsPeersIsDegraded) {
  RailTracker t;
  TwoRails c;
  c.rate1 = 0.30e9;  // 30% of its peer: above the 25% threshold
  auto links = t.update(c.next(), kSec);
  links = t.update(c.next(), 2 * kSec);
  EXPECT_EQ(find(links, "rail:eth1")->state, LinkState::kUp);
  c.rate1 = 0.10e9;
  links = t.update(c.next(), 3 * kSec);
  const LinkHealth* e1 = find(links, "rail:eth1");
  EXPECT_EQ(e1->state, LinkState::kDegraded);
  EXPECT_NE(e1->reason.find("measured rate 10% of its peer rails' median"), std::string::npos) << e1->reason;
  EXPECT_NEAR(e1->rateRatio, 0.1, 1e-9);
  EXPECT_EQ(find(links, "rail:eth0")->state, LinkState::kUp);  // the fast one is not "above" anything
}

TEST(RailTracker, AnRttRiseOverTheBaselineIsDegradedWithBothValues) {
  RailTracker t;
  TwoRails c;
  int64_t now = 0;
  std::vector<LinkHealth> links;
  for (int i = 0; i < 10; ++i) links = t.update(c.next(), now += kSec);
  // 3x the baseline: not enough. 4x but only 120 us above it: not enough either (LAN jitter).
  c.rtt1 = 120;
  links = t.update(c.next(), now += kSec);
  EXPECT_EQ(find(links, "rail:eth1")->state, LinkState::kUp);
  c.rtt1 = 160;
  links = t.update(c.next(), now += kSec);
  EXPECT_EQ(find(links, "rail:eth1")->state, LinkState::kUp);
  c.rtt1 = 2000;
  links = t.update(c.next(), now += kSec);
  const LinkHealth* e1 = find(links, "rail:eth1");
  EXPECT_EQ(e1->state, LinkState::kDegraded);
  EXPECT_DOUBLE_EQ(e1->rttUs, 2000);
  EXPECT_DOUBLE_EQ(e1->baselineRttUs, 40);
  EXPECT_NE(e1->reason.find("network latency rose from 40 µs to 2.0 ms (50x)"), std::string::npos) << e1->reason;
  // An idle pass (no bytes delivered) keeps the last busy RTT: the verdict does not flap.
  links = t.update(c.next(0), now += kSec);
  EXPECT_EQ(find(links, "rail:eth1")->state, LinkState::kDegraded);
  // Back to normal: up again.
  c.rtt1 = 45;
  links = t.update(c.next(), now += kSec);
  EXPECT_EQ(find(links, "rail:eth1")->state, LinkState::kUp);
}

TEST(RailTracker, TheBaselineIsTheWindowedMinimumSoALastingRiseBecomesTheNewNormal) {
  RailRules rules;
  rules.baselineWindow = 5;
  RailTracker t(rules);
  TwoRails c;
  int64_t now = 0;
  std::vector<LinkHealth> links;
  for (int i = 0; i < 6; ++i) links = t.update(c.next(), now += kSec);
  c.rtt1 = 1000;
  // A single spike far above: degraded. The minimum over the window ignores it as a baseline.
  links = t.update(c.next(), now += kSec);
  EXPECT_EQ(find(links, "rail:eth1")->state, LinkState::kDegraded);
  EXPECT_DOUBLE_EQ(find(links, "rail:eth1")->baselineRttUs, 40);
  // Once the window holds only the new level, it is the baseline.
  for (int i = 0; i < 5; ++i) links = t.update(c.next(), now += kSec);
  EXPECT_DOUBLE_EQ(find(links, "rail:eth1")->baselineRttUs, 1000);
  EXPECT_EQ(find(links, "rail:eth1")->state, LinkState::kUp);
}

TEST(RailTracker, NoRttVerdictBeforeEnoughBusySamples) {
  RailTracker t;
  TwoRails c;
  c.rtt1 = 5000;  // the rail starts slow: nothing to compare with, so not "rose"
  auto links = t.update(c.next(), kSec);
  links = t.update(c.next(), 2 * kSec);
  EXPECT_DOUBLE_EQ(find(links, "rail:eth1")->baselineRttUs, 0);
  EXPECT_EQ(find(links, "rail:eth1")->state, LinkState::kUp);
}

TEST(RailTracker, RetransmissionsAboveOnePercentDegrade) {
  RailTracker t;
  TwoRails c;
  auto links = t.update(c.next(), kSec);
  // 100 MB is ~69,000 segments: 500 retransmitted is 0.7%, 1000 is 1.4%.
  c.retrans1 += 500;
  links = t.update(c.next(), 2 * kSec);
  EXPECT_EQ(find(links, "rail:eth1")->state, LinkState::kUp);
  EXPECT_DOUBLE_EQ(find(links, "rail:eth1")->congestionPerSec, 500);
  c.retrans1 += 1000;
  links = t.update(c.next(), 3 * kSec);
  const LinkHealth* e1 = find(links, "rail:eth1");
  EXPECT_EQ(e1->state, LinkState::kDegraded);
  EXPECT_TRUE(e1->congested);
  EXPECT_NE(e1->reason.find("1000 segments retransmitted"), std::string::npos) << e1->reason;
}

TEST(RailTracker, DownRailsAndPartlyDownRails) {
  RailTracker t;
  TwoRails a, b;
  b.conn = 2;
  auto both = [&] {
    auto x = a.next(), y = b.next();
    x.insert(x.end(), y.begin(), y.end());
    return x;
  };
  auto links = t.update(both(), kSec);
  a.up1 = false;
  a.share1 = 0;
  links = t.update(both(), 2 * kSec);
  const LinkHealth* e1 = find(links, "rail:eth1");
  EXPECT_EQ(e1->state, LinkState::kDegraded);
  EXPECT_EQ(e1->connections, 2);
  EXPECT_NE(e1->reason.find("down in 1 of 2 connections"), std::string::npos) << e1->reason;
  b.up1 = false;
  links = t.update(both(), 3 * kSec);
  EXPECT_EQ(find(links, "rail:eth1")->state, LinkState::kDown);
  // Every comm closed: the rail leaves the model instead of turning "down".
  links = t.update({}, 4 * kSec);
  EXPECT_TRUE(links.empty());
}

TEST(RailTracker, RailShiftWhenAShareMovesTenPointsOrARailDies) {
  RailTracker t;
  TwoRails c;
  t.update(c.next(), kSec);  // first sight: the reference, no event
  EXPECT_TRUE(t.takeShifts().empty());
  c.share0 = 0.59, c.share1 = 0.41;  // 9 points: no event
  t.update(c.next(), 2 * kSec);
  EXPECT_TRUE(t.takeShifts().empty());
  c.share0 = 0.61, c.share1 = 0.39;  // 11 points since the logged 50/50
  c.rtt1 = 900;
  c.retrans1 = 7;
  t.update(c.next(), 3 * kSec);
  auto shifts = t.takeShifts();
  ASSERT_EQ(shifts.size(), 1u);
  const auto& ev = shifts[0];
  EXPECT_EQ(ev["event"], "rail_shift");
  EXPECT_EQ(ev["conn"], 1);
  EXPECT_EQ(ev["peer"], "10.0.0.2");
  ASSERT_EQ(ev["rails"].size(), 2u);
  EXPECT_EQ(ev["rails"][1]["label"], "eth1");
  EXPECT_DOUBLE_EQ(ev["rails"][1]["before"].get<double>(), 0.5);
  EXPECT_DOUBLE_EQ(ev["rails"][1]["after"].get<double>(), 0.39);
  EXPECT_EQ(ev["rails"][1]["rtt_us"], 900);
  EXPECT_EQ(ev["rails"][1]["retransmits"], 7);
  EXPECT_NE(ev["reason"].get<std::string>().find("eth1 50% -> 39%"), std::string::npos) << ev.dump();
  // The reference is now 61/39: a further 5 points is no event; a rail that dies is.
  c.share0 = 0.66, c.share1 = 0.34;
  t.update(c.next(), 4 * kSec);
  EXPECT_TRUE(t.takeShifts().empty());
  c.up1 = false, c.share0 = 1, c.share1 = 0;
  t.update(c.next(), 5 * kSec);
  shifts = t.takeShifts();
  ASSERT_EQ(shifts.size(), 1u);
  EXPECT_NE(shifts[0]["reason"].get<std::string>().find("eth1 died"), std::string::npos) << shifts[0].dump();
  EXPECT_FALSE(shifts[0]["rails"][1]["up"].get<bool>());
  EXPECT_TRUE(shifts[0]["rails"][1]["was_up"].get<bool>());
}

}  // namespace
}  // namespace wirewise::collectors
