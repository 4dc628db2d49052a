// The heterogeneity guard: ranks whose NCCL cost tables imply different defaults get one pinned choice that
// every rank enables, in the verdict, whatever order their reports arrive in; a policy table that already
// fixes a safe choice is left alone.
#include "control/boundary.h"
#include "control/heterogeneity_guard.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <numeric>

namespace wirewise::control {
namespace {

constexpr int kAR = static_cast<int>(CollType::AllReduce);
constexpr uint64_t kMiB = 1 << 20;

// A cost table: every entry disabled except the ones given.
adapt::Sight sight(uint64_t bytes, std::initializer_list<std::tuple<int, int, float>> costs, int coll = kAR) {
  adapt::Sight s;
  s.coll = static_cast<int8_t>(coll);
  s.bytes = bytes;
  s.bucket = static_cast<uint8_t>(SizeBuckets::index(bytes));
  for (auto& row : s.cost)
    for (float& c : row) c = -1.0f;
  for (auto [a, p, c] : costs) s.cost[a][p] = c;
  return s;
}

// Ring/LL128 cheapest on "A" ranks, Tree/Simple on "B" ranks; both enable both; Ring/Simple on A only.
adapt::Sight sightA(uint64_t bytes) {
  return sight(bytes, {{kAlgoRing, kProtoLL128, 10}, {kAlgoTree, kProtoSimple, 14}, {kAlgoRing, kProtoSimple, 11}});
}
adapt::Sight sightB(uint64_t bytes) {
  return sight(bytes, {{kAlgoRing, kProtoLL128, 13}, {kAlgoTree, kProtoSimple, 9}});
}

TEST(HeterogeneityGuard, NcclDefaultIsTheFirstStrictMinimumOfEnabledEntries) {
  adapt::Sight s = sight(kMiB, {{kAlgoTree, kProtoSimple, 5}, {kAlgoRing, kProtoLL, 5}, {kAlgoRing, kProtoSimple, 3.6e9f}});
  EXPECT_EQ(ncclDefaultOf(s.cost), std::make_pair(kAlgoTree, kProtoSimple));  // tie: algorithm-major order
  adapt::Sight none = sight(kMiB, {{kAlgoRing, kProtoSimple, 3.6e9f}});
  EXPECT_EQ(ncclDefaultOf(none.cost), std::make_pair(-1, -1));
}

TEST(HeterogeneityGuard, AgreeingRanksAreLeftAlone) {
  HeterogeneityGuard g;
  std::vector<adapt::Sight> a{sightA(kMiB)};
  for (uint64_t m = 0; m < 8; ++m) g.observe(m, a);
  EXPECT_EQ(g.heterogeneousBuckets(), 0u);
  EXPECT_TRUE(g.pins({}).empty());
  EXPECT_TRUE(g.takeNotes().empty());
}

TEST(HeterogeneityGuard, DifferingDefaultsArePinnedToTheBestChoiceEveryRankEnables) {
  HeterogeneityGuard g;
  std::vector<adapt::Sight> a{sightA(3 * kMiB)}, b{sightB(3 * kMiB)};
  for (uint64_t m = 0; m < 8; ++m) g.observe(m, m % 2 ? b : a);
  ASSERT_EQ(g.heterogeneousBuckets(), 1u);
  std::vector<TableRule> pins = g.pins({});
  ASSERT_EQ(pins.size(), 1u);
  // Worst cost: ring/LL128 13, tree/simple 14; ring/simple is disabled on B ranks.
  EXPECT_EQ(pins[0].decision, (Decision{kAlgoRing, kProtoLL128, 0}));
  EXPECT_EQ(pins[0].coll, kAR);
  const int bucket = SizeBuckets::index(3 * kMiB);
  EXPECT_EQ(pins[0].minBytes, SizeBuckets::lowerEdge(bucket));
  EXPECT_EQ(pins[0].maxBytes, SizeBuckets::upperEdge(bucket) - 1);
  std::vector<std::string> notes = g.takeNotes();
  ASSERT_EQ(notes.size(), 1u);
  EXPECT_NE(notes[0].find("ring/ll128 on 4"), std::string::npos) << notes[0];
  EXPECT_NE(notes[0].find("tree/simple on 4"), std::string::npos) << notes[0];
  EXPECT_NE(notes[0].find("every rank runs ring/ll128"), std::string::npos) << notes[0];
  // Said once; the pin stays in every later verdict.
  EXPECT_EQ(g.pins({}).size(), 1u);
  EXPECT_TRUE(g.takeNotes().empty());
}

TEST(HeterogeneityGuard, APinIsKeptUntilAMemberDisablesIt) {
  HeterogeneityGuard g;
  g.observe(1, std::vector<adapt::Sight>{sightA(kMiB)});
  g.observe(2, std::vector<adapt::Sight>{sightB(kMiB)});
  ASSERT_EQ(g.pins({}).at(0).decision, (Decision{kAlgoRing, kProtoLL128, 0}));
  g.takeNotes();
  // A third rank has ring/LL128 disabled: only tree/simple is left on every rank.
  g.observe(3, std::vector<adapt::Sight>{sight(kMiB, {{kAlgoTree, kProtoSimple, 20}})});
  ASSERT_EQ(g.pins({}).at(0).decision, (Decision{kAlgoTree, kProtoSimple, 0}));
  std::vector<std::string> notes = g.takeNotes();
  ASSERT_EQ(notes.size(), 1u);
  EXPECT_NE(notes[0].find("was ring/ll128"), std::string::npos) << notes[0];
  // A re-sent report (reconnect) counts once.
  g.observe(3, std::vector<adapt::Sight>{sight(kMiB, {{kAlgoTree, kProtoSimple, 20}})});
  EXPECT_TRUE(g.takeNotes().empty());
}

TEST(HeterogeneityGuard, NoCommonChoiceIsSaidAndNothingIsPinned) {
  HeterogeneityGuard g;
  g.observe(1, std::vector<adapt::Sight>{sight(kMiB, {{kAlgoRing, kProtoSimple, 1}})});
  g.observe(2, std::vector<adapt::Sight>{sight(kMiB, {{kAlgoTree, kProtoSimple, 1}})});
  EXPECT_TRUE(g.pins({}).empty());
  std::vector<std::string> notes = g.takeNotes();
  ASSERT_EQ(notes.size(), 1u);
  EXPECT_NE(notes[0].find("none can be pinned"), std::string::npos) << notes[0];
  EXPECT_TRUE(g.pins({}).empty());
  EXPECT_TRUE(g.takeNotes().empty());  // said once
}

TEST(HeterogeneityGuard, ASafePolicyDecisionIsNotOverriddenAnUnsafeOneIs) {
  HeterogeneityGuard g;
  g.observe(1, std::vector<adapt::Sight>{sightA(kMiB)});
  g.observe(2, std::vector<adapt::Sight>{sightB(kMiB)});
  const int bucket = SizeBuckets::index(kMiB);
  const uint64_t lo = SizeBuckets::lowerEdge(bucket), hi = SizeBuckets::upperEdge(bucket) - 1;
  // Tree/simple over the whole bucket (and beyond), enabled everywhere: safe.
  EXPECT_TRUE(g.pins(std::vector<TableRule>{{kAR, 0, UINT64_MAX, {kAlgoTree, kProtoSimple, 4}}}).empty());
  // Also safe when two rules with safe choices tile the bucket.
  EXPECT_TRUE(g.pins(std::vector<TableRule>{{kAR, lo, lo + 100, {kAlgoTree, kProtoSimple, 0}},
                                           {kAR, lo + 101, hi, {kAlgoRing, kProtoLL128, 0}}})
                  .empty());
  // Unsafe: ring/simple is disabled on rank 2; a gap in the bucket; only the algorithm fixed; another coll.
  EXPECT_EQ(g.pins(std::vector<TableRule>{{kAR, 0, UINT64_MAX, {kAlgoRing, kProtoSimple, 0}}}).size(), 1u);
  EXPECT_EQ(g.pins(std::vector<TableRule>{{kAR, lo, hi - 1, {kAlgoTree, kProtoSimple, 0}}}).size(), 1u);
  EXPECT_EQ(g.pins(std::vector<TableRule>{{kAR, 0, UINT64_MAX, {kAlgoTree, kAny, 0}}}).size(), 1u);
  EXPECT_EQ(g.pins(std::vector<TableRule>{{0, 0, UINT64_MAX, {kAlgoTree, kProtoSimple, 0}}}).size(), 1u);
}

// Through the boundary state machine: the pin is in front of the policy's rules from the verdict made with
// the reports that carry the sights, identical for every arrival order of those reports.
class NoRules : public Policy {
 public:
  PolicyOutput decide(const PolicyInput&) override { return {{}, "keep", 0}; }
};

TEST(HeterogeneityGuard, VerdictsCarryThePinForEveryReportOrder) {
  std::vector<int> order{0, 1, 2, 3};
  std::vector<Verdict> first;
  do {
    NoRules pol;
    AgreementParams p;
    p.deterministic = true;
    p.fixedSpacing = 16;
    CommAgreement a(0x7, 4, 1, p, &pol);
    for (uint64_t m = 0; m < 4; ++m) a.join(m, 0);
    std::vector<Verdict> v = a.takeNew();
    ASSERT_EQ(v.size(), 1u);
    for (int m : order) {
      Report r{0x7, static_cast<uint64_t>(m), 0, v[0].boundary, 1000, {}, {}, {}};
      // Members 0 and 2 see a different table for 256 MiB (ranks of another kind), all see one for 1 KiB.
      r.sights = {m % 2 ? sightB(256 * kMiB) : sightA(256 * kMiB), sightA(1024)};
      a.report(r, 1);
    }
    std::vector<Verdict> v1 = a.takeNew();
    ASSERT_EQ(v1.size(), 1u);
    ASSERT_EQ(v1[0].rules.size(), 1u);
    EXPECT_EQ(v1[0].rules[0].decision, (Decision{kAlgoRing, kProtoLL128, 0}));
    EXPECT_NE(v1[0].reason.find("1 buckets pinned"), std::string::npos) << v1[0].reason;
    EXPECT_EQ(a.takeNotes().size(), 1u);
    if (first.empty()) first = v1;
    EXPECT_EQ(v1, first);
  } while (std::next_permutation(order.begin(), order.end()));
}

TEST(HeterogeneityGuard, ALateReportStillCountsForTheGuard) {
  NoRules pol;
  AgreementParams p;  // production: decides 20 ms after the first report
  CommAgreement a(0x7, 2, 1, p, &pol);
  a.join(1, 0);
  a.join(2, 0);
  const Propose b0 = a.takeNewProposal().value();  // both accept B0 as proposed
  a.answer({0x7, 1, b0.proposal, true, 0}, 0);
  a.answer({0x7, 2, b0.proposal, true, 0}, 0);
  Verdict v0 = a.takeNew().at(0);
  a.report({0x7, 1, 0, v0.boundary, 1000, {}, {sightA(kMiB)}, {}}, 0);
  a.tick(25);
  Verdict v1 = a.takeNew().at(0);
  EXPECT_TRUE(v1.rules.empty());
  // Member 2's report for B0 arrives after verdict 1 was made: too late for that verdict, not for the guard.
  a.report({0x7, 2, 0, v0.boundary, 1000, {}, {sightB(kMiB)}, {}}, 30);
  a.report({0x7, 1, 1, v1.boundary, 1000, {}, {}, {}}, 31);
  a.report({0x7, 2, 1, v1.boundary, 1000, {}, {}, {}}, 31);
  Verdict v2 = a.takeNew().at(0);
  ASSERT_EQ(v2.rules.size(), 1u);
  EXPECT_EQ(v2.rules[0].decision, (Decision{kAlgoRing, kProtoLL128, 0}));
}

}  // namespace
}  // namespace wirewise::control
