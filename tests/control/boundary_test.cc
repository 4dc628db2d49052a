// The coordinator's boundary state machine: joins, verdict 0, observe-only, report waits, spacing, and
// an exhaustive sweep over member counts and join/report orders.
#include "control/adaptive_policy.h"
#include "control/boundary.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <numeric>

namespace wirewise::control {
namespace {

class CountingPolicy : public Policy {
 public:
  PolicyOutput decide(const PolicyInput& in) override {
    lastReports = in.reports->size();
    lastSamples = 0;
    for (const Report& r : *in.reports) lastSamples += r.samples.size();
    ++calls;
    return {{TableRule{kAny, 0, UINT64_MAX, {kAlgoRing, kAny, static_cast<int8_t>(1 + in.index % 8)}}},
            "v" + std::to_string(in.index)};
  }
  int calls = 0;
  size_t lastReports = 0, lastSamples = 0;
};

Report rep(uint64_t member, const Verdict& v, uint64_t elapsedUs = 1000) {
  return {0x1, member, v.index, v.boundary, elapsedUs, {}, {}, {}};
}

AgreementParams deterministic() {
  AgreementParams p;
  p.deterministic = true;
  return p;
}

// Production mode: members 1..n join and accept the proposal of B0; returns verdict 0.
Verdict startProduction(CommAgreement& a, uint64_t n) {
  for (uint64_t m = 1; m <= n; ++m) a.join(m, 0);
  std::optional<Propose> p = a.takeNewProposal();
  EXPECT_TRUE(p.has_value());
  if (!p) return {};
  for (uint64_t m = 1; m <= n; ++m) a.answer({0x1, m, p->proposal, true, 0}, 0);
  std::vector<Verdict> v = a.takeNew();
  EXPECT_EQ(v.size(), 1u);
  return v.empty() ? Verdict{} : v[0];
}

TEST(Boundary, Verdict0OnlyWhenAllJoin) {
  CountingPolicy pol;
  CommAgreement a(0x1, 3, 1, deterministic(), &pol);
  a.join(10, 0);
  a.join(11, 1);
  a.join(11, 2);  // a duplicate join counts once
  EXPECT_TRUE(a.takeNew().empty());
  a.join(12, 3);
  auto v = a.takeNew();
  ASSERT_EQ(v.size(), 1u);
  EXPECT_EQ(v[0].index, 0u);
  EXPECT_EQ(v[0].boundary, kB0);
  EXPECT_FALSE(v[0].observeOnly);
  EXPECT_GE(v[0].next - v[0].boundary, kMinSpacing);
  EXPECT_EQ(v[0].rules.size(), 1u);
  EXPECT_TRUE(a.takeNew().empty());  // taken once
}

TEST(Boundary, ObserveOnlyWhenNotAllJoinInTime) {
  CountingPolicy pol;
  AgreementParams p = deterministic();
  p.joinTimeoutMs = 100;
  CommAgreement a(0x1, 4, 1, p, &pol);
  a.join(1, 50);
  a.join(2, 60);
  a.tick(149);
  EXPECT_TRUE(a.takeNew().empty());
  EXPECT_EQ(a.nextDeadlineMs(149), 1);
  a.tick(150);
  auto v = a.takeNew();
  ASSERT_EQ(v.size(), 1u);
  EXPECT_TRUE(v[0].observeOnly);
  EXPECT_EQ(v[0].next, kNoBoundary);
  EXPECT_TRUE(v[0].rules.empty());
  EXPECT_EQ(pol.calls, 0);  // no table is ever made for it
  // Late joiners get the same verdict (by resync) and nothing new is issued.
  a.join(3, 200);
  a.join(4, 201);
  a.report(rep(1, a.verdicts()[0]), 300);
  a.tick(10000);
  EXPECT_TRUE(a.takeNew().empty());
  EXPECT_EQ(a.verdicts().size(), 1u);
}

TEST(Boundary, DeterministicWaitsForEveryReport) {
  CountingPolicy pol;
  AgreementParams p;
  p.deterministic = true;
  p.fixedSpacing = 32;
  CommAgreement a(0x1, 3, 1, p, &pol);
  for (uint64_t m = 1; m <= 3; ++m) a.join(m, 0);
  auto v0 = a.takeNew().at(0);
  a.report(rep(1, v0), 1);
  a.report(rep(2, v0), 100000);
  a.tick(1000000);  // no timeout in deterministic mode
  EXPECT_TRUE(a.takeNew().empty());
  a.report(rep(3, v0), 1000001);
  auto v1 = a.takeNew();
  ASSERT_EQ(v1.size(), 1u);
  EXPECT_EQ(v1[0].index, 1u);
  EXPECT_EQ(v1[0].boundary, v0.next);
  EXPECT_EQ(v1[0].next, v0.next + 32);
  EXPECT_EQ(pol.lastReports, 3u);
}

TEST(Boundary, ProductionDecidesOnWhatItHasAfterTheWait) {
  CountingPolicy pol;
  AgreementParams p;  // defaults: 10 ms intervals for a small comm, so at most 5 ms of waiting for reports
  CommAgreement a(0x1, 3, 1, p, &pol);
  EXPECT_EQ(a.intervalMs(), 10);
  EXPECT_EQ(a.reportWaitMs(), 5);
  Verdict v0 = startProduction(a, 3);
  a.report(rep(1, v0), 100);
  a.tick(104);
  EXPECT_TRUE(a.takeNew().empty());
  EXPECT_EQ(a.nextDeadlineMs(104), 1);
  a.tick(105);
  auto v1 = a.takeNew();
  ASSERT_EQ(v1.size(), 1u);
  EXPECT_EQ(pol.lastReports, 1u);
  // The late report for B0 neither counts as a report at B1 nor makes a verdict of its own...
  Report late = rep(2, v0);
  late.samples.push_back({17, 4096, 12000, 0, 1, 0, 8});
  a.report(late, 121);
  a.tick(1000);
  EXPECT_TRUE(a.takeNew().empty());
  // ...but its evidence is not thrown away: the policy gets it with the reports at B1.
  a.report(rep(1, v1[0]), 1100);
  a.tick(1120);
  ASSERT_EQ(a.takeNew().size(), 1u);
  EXPECT_EQ(pol.lastReports, 2u);
  ASSERT_EQ(pol.lastSamples, 1u);
  // Used once: the verdict after that has only its own reports.
  a.report(rep(3, a.verdicts().back()), 1200);
  a.tick(1220);
  ASSERT_EQ(a.takeNew().size(), 1u);
  EXPECT_EQ(pol.lastReports, 1u);
  EXPECT_EQ(pol.lastSamples, 0u);
}

TEST(Boundary, IntervalsGrowWithMembersAndTheReportWaitFitsInsideThem) {
  CountingPolicy pol;
  AgreementParams p;
  // 25 µs per member: 16 ranks keep the 10 ms floor; 4,096 ranks aim at 103 ms, and wait the configured
  // 20 ms at most for late reports.
  CommAgreement small(0x1, 16, 2, p, &pol), large(0x2, 4096, 512, p, &pol), mid(0x3, 1024, 128, p, &pol);
  EXPECT_EQ(small.intervalMs(), 10);
  EXPECT_EQ(small.reportWaitMs(), 5);
  EXPECT_EQ(mid.intervalMs(), 26);
  EXPECT_EQ(mid.reportWaitMs(), 13);
  EXPECT_EQ(large.intervalMs(), 103);
  EXPECT_EQ(large.reportWaitMs(), 20);
  // A fixed spacing says nothing of time: the configured wait.
  p.useFixedSpacing = true;
  CommAgreement fixed(0x4, 16, 2, p, &pol);
  EXPECT_EQ(fixed.reportWaitMs(), 20);
}

// A control network slower than the interval (reports 8 ms apart at a boundary of a 10 ms interval) would
// make members wait for every verdict: intervals stretch to 4x the spread, and shrink back by 1/8 a verdict
// once reports come together again.
TEST(Boundary, IntervalsStretchWithTheReportSpreadAndShrinkBack) {
  CountingPolicy pol;
  AgreementParams p;
  CommAgreement a(0x1, 2, 1, p, &pol);
  Verdict v = startProduction(a, 2);
  int64_t now = 100;
  a.report(rep(1, v), now);
  a.report(rep(2, v), now + 4);  // within the 5 ms wait: all in, 4 ms apart
  auto out = a.takeNew();
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(a.intervalMs(), 16);
  EXPECT_EQ(a.reportWaitMs(), 8);
  v = out[0];
  now += 100;
  a.report(rep(1, v), now);
  a.report(rep(2, v), now + 8);  // within the 8 ms wait now
  out = a.takeNew();
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(a.intervalMs(), 32);
  EXPECT_EQ(a.reportWaitMs(), 16);
  // Reports together again: 8 -> 7 -> 6 -> 5 -> 4 -> 3 -> 2 (x4 below 10 ms from there).
  std::vector<int64_t> want{28, 24, 20, 16, 12, 10, 10};
  for (int64_t w : want) {
    v = out[0];
    now += 100;
    a.report(rep(1, v), now);
    a.report(rep(2, v), now);
    out = a.takeNew();
    ASSERT_EQ(out.size(), 1u);
    EXPECT_EQ(a.intervalMs(), w);
  }
  // Deterministic mode waits for all reports anyway: no stretch.
  CommAgreement d(0x1, 2, 1, deterministic(), &pol);
  d.join(1, 0);
  d.join(2, 0);
  Verdict d0 = d.takeNew().at(0);
  d.report(rep(1, d0), 100);
  d.report(rep(2, d0), 140);
  ASSERT_EQ(d.takeNew().size(), 1u);
  EXPECT_EQ(d.intervalMs(), 10);
}

TEST(Boundary, RejectsStrangersDuplicatesAndWrongBoundaries) {
  CountingPolicy pol;
  AgreementParams p;
  p.deterministic = true;
  CommAgreement a(0x1, 2, 1, p, &pol);
  a.join(1, 0);
  a.join(2, 0);
  auto v0 = a.takeNew().at(0);
  a.report(rep(99, v0), 1);  // never joined
  a.report(rep(1, v0), 1);
  a.report(rep(1, v0), 2);  // duplicate
  Report wrong = rep(2, v0);
  wrong.seq += 1;
  a.report(wrong, 3);
  Report future = rep(2, v0);
  future.index = 5;
  a.report(future, 3);
  EXPECT_TRUE(a.takeNew().empty());
  a.report(rep(2, v0), 4);
  EXPECT_EQ(a.takeNew().size(), 1u);
}

// Production spacing by rate, with round figures: intervals of 100 ms of traffic, 100 collectives while
// no rate is known.
AgreementParams rateSpaced() {
  AgreementParams p;
  p.reportWaitMs = 5;
  p.targetMs = 100;
  p.fixedSpacing = 100;
  return p;
}

TEST(Boundary, SpacingFollowsTheSlowestMemberAndIsBounded) {
  CountingPolicy pol;
  const AgreementParams p = rateSpaced();
  CommAgreement a(0x1, 2, 1, p, &pol);
  Verdict v0 = startProduction(a, 2);
  // At B0 no member knows a rate (its first boundary): the fixed spacing.
  a.report(rep(1, v0, 0), 1);
  a.report(rep(2, v0, 0), 1);
  auto v1 = a.takeNew().at(0);
  EXPECT_EQ(v1.next - v1.boundary, 100u);
  // [B0, B1) = 100 collectives took 10 ms (member 1) and 50 ms (member 2): 2 per ms at the slowest -> 200
  // in 100 ms.
  a.report(rep(1, v1, 10000), 2);
  a.report(rep(2, v1, 50000), 2);
  auto v2 = a.takeNew().at(0);
  EXPECT_EQ(v2.next - v2.boundary, 200u);
  // The reports at B2 time [B1, B2), verdict 1's 100 collectives, not verdict 2's 200: 100 in 25 ms -> 400.
  a.report(rep(1, v2, 25000), 3);
  a.report(rep(2, v2, 25000), 3);
  auto v3 = a.takeNew().at(0);
  EXPECT_EQ(v3.next - v3.boundary, 400u);
  // Very slow traffic: never closer than kMinSpacing.
  a.report(rep(1, v3, 100000000), 4);
  a.report(rep(2, v3, 100000000), 4);
  auto v4 = a.takeNew().at(0);
  EXPECT_EQ(v4.next - v4.boundary, kMinSpacing);
}

// Members that timed collectives before B0 report what verdict 0's interval would take at that rate:
// verdict 1 is then spaced by it, as later verdicts are by measured intervals, not by the fixed spacing.
TEST(Boundary, RatesReportedAtB0SpaceVerdict1) {
  CountingPolicy pol;
  const AgreementParams p = rateSpaced();
  CommAgreement a(0x1, 2, 1, p, &pol);
  Verdict v0 = startProduction(a, 2);
  ASSERT_EQ(v0.next - v0.boundary, 100u);
  // [B0, B1) would take 20 ms (member 1) and 50 ms (member 2): 2 per ms at the slowest -> 200 in 100 ms.
  a.report(rep(1, v0, 20000), 1);
  a.report(rep(2, v0, 50000), 1);
  auto v1 = a.takeNew().at(0);
  EXPECT_EQ(v1.next - v1.boundary, 200u);
  // One member without a rate (0) leaves the other's: 100 in 10 ms -> 1,000 in 100 ms.
  CommAgreement b(0x1, 2, 1, p, &pol);
  Verdict w0 = startProduction(b, 2);
  b.report(rep(1, w0, 0), 1);
  b.report(rep(2, w0, 10000), 1);
  EXPECT_EQ(b.takeNew().at(0).next - w0.next, 1000u);
}

// A policy may set the length of the interval it decides (the adaptive policy's probe intervals), down to
// kMinPolicySpacing, below the agreement's own kMinSpacing; never beyond maxSpacing.
TEST(Boundary, APolicySetsItsIntervalWithinItsBounds) {
  struct Asking : Policy {
    uint64_t ask = 0;
    PolicyOutput decide(const PolicyInput&) override { return {{}, "asked", ask}; }
  } pol;
  AgreementParams p = deterministic();
  p.fixedSpacing = 32;
  p.maxSpacing = 1000;
  CommAgreement a(0x1, 2, 1, p, &pol);
  for (uint64_t m = 1; m <= 2; ++m) a.join(m, 0);
  Verdict v = a.takeNew().at(0);
  for (auto [ask, want] : {std::pair<uint64_t, uint64_t>{0, 32}, {4, 4}, {1, kMinPolicySpacing}, {6, 6},
                           {kMinSpacing, kMinSpacing}, {5000, 1000}}) {
    pol.ask = ask;
    a.report(rep(1, v), 1);
    a.report(rep(2, v), 1);
    v = a.takeNew().at(0);
    EXPECT_EQ(v.next - v.boundary, want) << "asked for " << ask;
  }
  EXPECT_LT(kMinPolicySpacing, kMinSpacing);
}

// Production mode waits on nobody's join: nothing is proposed until all nRanks have joined, and no
// timeout ever turns the comm observe-only (a member that joins late starts the schedule late).
TEST(Boundary, ProductionProposesOnlyOnceAllJoinedAndNeverTimesOut) {
  CountingPolicy pol;
  AgreementParams p;
  p.joinTimeoutMs = 100;
  CommAgreement a(0x1, 3, 1, p, &pol);
  a.join(1, 0);
  a.join(2, 0);
  a.tick(1000000);
  EXPECT_EQ(a.nextDeadlineMs(1000000), -1);
  EXPECT_FALSE(a.takeNewProposal().has_value());
  EXPECT_TRUE(a.takeNew().empty());
  a.join(3, 1000001);
  std::optional<Propose> prop = a.takeNewProposal();
  ASSERT_TRUE(prop.has_value());
  EXPECT_EQ(prop->proposal, 0u);
  EXPECT_EQ(prop->boundary, kB0);
  EXPECT_FALSE(a.takeNewProposal().has_value());  // taken once
  EXPECT_EQ(a.openProposal(), prop);              // but still open, for a member that joins again
  // Two accepts are not all of them: no verdict, and the policy was not asked.
  a.answer({0x1, 1, 0, true, 10}, 0);
  a.answer({0x1, 2, 0, true, 12}, 0);
  a.answer({0x1, 2, 0, true, 12}, 0);  // a repeated answer counts once
  EXPECT_TRUE(a.takeNew().empty());
  EXPECT_EQ(pol.calls, 0);
  a.answer({0x1, 3, 0, true, 0}, 0);
  auto v = a.takeNew();
  ASSERT_EQ(v.size(), 1u);
  EXPECT_EQ(v[0].index, 0u);
  EXPECT_EQ(v[0].boundary, kB0);
  EXPECT_FALSE(v[0].observeOnly);
  EXPECT_FALSE(a.openProposal().has_value());  // the schedule has started: nothing is proposed any more
  a.answer({0x1, 3, 1, false, 5000}, 0);
  EXPECT_FALSE(a.takeNewProposal().has_value());
}

// One refusal replaces the proposal by one past the refuser, with a margin that doubles each time; an
// answer to a replaced proposal (accept or refuse) counts for nothing; verdict 0 comes at the proposal
// every member accepted.
TEST(Boundary, ARefusalProposesFurtherOnAndOldAnswersDoNotCount) {
  CountingPolicy pol;
  CommAgreement a(0x1, 2, 1, {}, &pol);
  a.join(1, 0);
  a.join(2, 0);
  Propose p0 = a.takeNewProposal().value();
  a.answer({0x1, 1, 0, true, 3}, 0);
  a.answer({0x1, 2, 0, false, 900}, 0);  // member 2 is at collective 900 already
  Propose p1 = a.takeNewProposal().value();
  EXPECT_EQ(p1.proposal, 1u);
  EXPECT_EQ(p1.boundary, 900 + kProposalMargin);
  a.answer({0x1, 1, 0, true, 3}, 0);  // the old proposal: ignored
  a.answer({0x1, 2, 1, false, 5000}, 0);
  Propose p2 = a.takeNewProposal().value();
  EXPECT_EQ(p2.boundary, 5000 + 2 * kProposalMargin);
  // A refusal that names a count behind the proposal still moves past the proposal itself.
  a.answer({0x1, 1, 2, false, 7}, 0);
  Propose p3 = a.takeNewProposal().value();
  EXPECT_EQ(p3.boundary, p2.boundary + 1 + 4 * kProposalMargin);
  a.answer({0x1, 1, 1, true, 3}, 0);  // stale
  a.answer({0x1, 2, 2, true, 3}, 0);  // stale
  EXPECT_TRUE(a.takeNew().empty());
  a.answer({0x1, 1, 3, true, 100}, 0);
  a.answer({0x1, 2, 3, true, 200}, 0);
  auto v = a.takeNew();
  ASSERT_EQ(v.size(), 1u);
  EXPECT_EQ(v[0].boundary, p3.boundary);
  EXPECT_GT(p0.boundary, 0u);
}

// A member that joined but never answers (hung, or a foreign client holding its place) must not keep the
// others stopped at the proposed collective: after answerTimeoutMs the proposal is parked (a proposal
// they accept and never reach releases them) and nothing is proposed until the silent member speaks.
TEST(Boundary, AnUnansweredProposalIsParkedUntilTheSilentMemberSpeaks) {
  CountingPolicy pol;
  AgreementParams p;
  p.answerTimeoutMs = 1000;
  CommAgreement a(0x1, 3, 1, p, &pol);
  for (uint64_t m = 1; m <= 3; ++m) a.join(m, 0);
  Propose p0 = a.takeNewProposal().value();
  a.answer({0x1, 1, p0.proposal, true, 10}, 5);
  a.answer({0x1, 2, p0.proposal, true, 20}, 6);
  EXPECT_EQ(a.nextDeadlineMs(500), 500);
  a.tick(999);
  EXPECT_FALSE(a.parked());
  a.tick(1000);
  ASSERT_TRUE(a.parked());
  EXPECT_EQ(a.parkedSilent(), 1u);
  Propose parking = a.takeNewProposal().value();
  EXPECT_EQ(parking.boundary, kParked);
  EXPECT_EQ(a.nextDeadlineMs(5000), -1);  // nothing to time out while parked
  // The released members' answers to the parking proposal change nothing; nor does time.
  a.answer({0x1, 1, parking.proposal, true, 300}, 1001);
  a.answer({0x1, 2, parking.proposal, true, 400}, 1002);
  a.tick(100000);
  EXPECT_FALSE(a.takeNewProposal().has_value());
  EXPECT_TRUE(a.takeNew().empty());
  // The silent member speaks (its answer to the first proposal, late): a new proposal past everyone.
  a.answer({0x1, 3, p0.proposal, true, 50}, 100001);
  EXPECT_FALSE(a.parked());
  Propose p2 = a.takeNewProposal().value();
  EXPECT_GT(p2.boundary, 400u);
  EXPECT_LT(p2.boundary, kParked);
  for (uint64_t m = 1; m <= 3; ++m) a.answer({0x1, m, p2.proposal, true, 450}, 100002);
  auto v = a.takeNew();
  ASSERT_EQ(v.size(), 1u);
  EXPECT_EQ(v[0].boundary, p2.boundary);
}

// Every member count 1..4 and every order of answers, with any one member refusing the first proposal:
// exactly one verdict 0, at the proposal all accepted (the policy asked once).
TEST(Boundary, EveryAnswerOrderGivesOneVerdictAtTheAcceptedProposal) {
  for (uint32_t n = 1; n <= 4; ++n) {
    for (uint32_t refuser = 0; refuser <= n; ++refuser) {  // n: nobody refuses
      std::vector<uint64_t> ids(n);
      std::iota(ids.begin(), ids.end(), 1);
      do {
        CountingPolicy pol;
        CommAgreement a(0x1, n, 1, {}, &pol);
        for (uint64_t id : ids) a.join(id, 0);
        Propose cur = a.takeNewProposal().value();
        for (uint64_t id : ids) {
          const bool refuse = cur.proposal == 0 && id == refuser + 1;
          a.answer({0x1, id, cur.proposal, !refuse, refuse ? uint64_t{1000} : uint64_t{0}}, 0);
          if (std::optional<Propose> next = a.takeNewProposal()) cur = *next;
        }
        if (refuser < n) {  // the others accepted the first one, or answered it after it was replaced
          ASSERT_TRUE(a.verdicts().empty());
          for (uint64_t id : ids) a.answer({0x1, id, cur.proposal, true, 1000}, 0);
        }
        ASSERT_EQ(a.verdicts().size(), 1u);
        EXPECT_EQ(a.verdicts()[0].boundary, cur.boundary);
        EXPECT_EQ(cur.boundary, refuser < n ? 1000 + kProposalMargin : kB0);
        EXPECT_EQ(pol.calls, 1);
      } while (std::next_permutation(ids.begin(), ids.end()));
    }
  }
}

// Every member count 1..6, every join order, every report order for three rounds: deterministic mode
// issues exactly one verdict per round, with strictly increasing boundaries spaced >= kMinSpacing, and
// the result does not depend on the order.
TEST(Boundary, ExhaustiveOrdersGiveIdenticalVerdicts) {
  for (uint32_t n = 1; n <= 6; ++n) {
    std::vector<uint64_t> ids(n);
    std::iota(ids.begin(), ids.end(), 1);
    std::vector<Verdict> reference;
    int perms = 0;
    do {
      CountingPolicy pol;
      AgreementParams p;
      p.deterministic = true;
      p.fixedSpacing = 8;
      CommAgreement a(0x1, n, 1, p, &pol);
      for (size_t i = 0; i < n; ++i) {
        a.join(ids[i], 0);
        ASSERT_EQ(a.verdicts().size(), i + 1 == n ? 1u : 0u);
      }
      for (int round = 0; round < 3; ++round) {
        Verdict cur = a.verdicts().back();
        for (size_t i = 0; i < n; ++i) {
          a.report(rep(ids[(i + static_cast<size_t>(round)) % n], cur), 0);
          ASSERT_EQ(a.verdicts().size(), static_cast<size_t>(round) + (i + 1 == n ? 2 : 1));
        }
      }
      const auto& vs = a.verdicts();
      for (size_t k = 1; k < vs.size(); ++k) {
        ASSERT_EQ(vs[k].boundary, vs[k - 1].next);
        ASSERT_GE(vs[k].next - vs[k].boundary, kMinSpacing);
        ASSERT_EQ(vs[k].index, k);
      }
      if (reference.empty()) reference = vs;
      ASSERT_EQ(vs, reference);
      ++perms;
    } while (std::next_permutation(ids.begin(), ids.end()));
    EXPECT_GT(perms, 0);
  }
}

TEST(Policy, RandomTablesAreReproducibleAndChange) {
  auto a = makeRandomTablePolicy(7), b = makeRandomTablePolicy(7);
  std::vector<Report> none;
  int differ = 0;
  PolicyOutput prev;
  for (uint64_t k = 0; k < 50; ++k) {
    PolicyOutput x = a->decide({1, 8, 1, k, 0, 0, &none}), y = b->decide({1, 8, 1, k, 0, 0, &none});
    ASSERT_EQ(x.rules, y.rules);
    if (x.rules != prev.rules) ++differ;
    prev = x;
  }
  EXPECT_GT(differ, 25);
}

TEST(Policy, KeepStaticDistributesTheStaticRules) {
  auto p = makeKeepStaticPolicy([](uint64_t, uint32_t nRanks, uint32_t) {
    return std::vector<TableRule>{{kAny, 0, nRanks, {kAlgoTree, kProtoSimple, 0}}};
  });
  std::vector<Report> none;
  auto out = p->decide({1, 16, 2, 3, 0, 0, &none});
  ASSERT_EQ(out.rules.size(), 1u);
  EXPECT_EQ(out.rules[0].maxBytes, 16u);
}

TEST(AdaptivePolicy, AFailingPolicyFallsBackToNcclsChoicesOnEveryRank) {
  // The policy's log sink throws on its first event (calibration of the one bucket): the coordinator must
  // still issue a verdict, the same for everyone, and keep doing so.
  int calls = 0;
  auto policy = makeAdaptivePolicy({}, [&](nlohmann::json) {
    ++calls;
    throw std::runtime_error("log sink failed \xff");
  });
  std::vector<Report> reports(2);
  for (size_t m = 0; m < reports.size(); ++m) {
    reports[m].memberId = m + 1;
    adapt::Sight s;
    s.coll = 4;
    s.bucket = static_cast<uint8_t>(SizeBuckets::index(1 << 20));
    for (auto& row : s.cost)
      for (float& f : row) f = -1.0f;
    s.cost[kAlgoRing][kProtoLL128] = 10.0f;
    s.cost[kAlgoRing][kProtoSimple] = 12.0f;
    reports[m].sights.push_back(s);
    for (uint64_t q = 0; q < 64; ++q)
      reports[m].samples.push_back({q, 1 << 20, 50000, 4, kAlgoRing, kProtoLL128, 16});
  }
  bool failedOnce = false;
  for (uint64_t k = 0; k < 20; ++k) {
    PolicyOutput out = policy->decide({9, 2, 1, k, 64 + 32 * k, 32, &reports});
    if (out.reason.rfind("adaptive policy stopped", 0) == 0) {
      failedOnce = true;
      EXPECT_TRUE(out.rules.empty());
      for (char c : out.reason) EXPECT_TRUE(c >= 0x20 && c <= 0x7e) << out.reason;
    }
  }
  EXPECT_TRUE(failedOnce);
  EXPECT_EQ(calls, 1);  // stopped for good after the failure
}

}  // namespace
}  // namespace wirewise::control
