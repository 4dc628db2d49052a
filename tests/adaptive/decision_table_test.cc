#include "adaptive/decision_table.h"

#include <gtest/gtest.h>

#include <atomic>
#include <climits>
#include <cstdlib>
#include <new>
#include <random>
#include <vector>

// Counts every allocation in this binary, so the test can prove lookup() never allocates. The replaced
// operators pair malloc with free, which GCC's -Wmismatched-new-delete cannot see through.
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic ignored "-Wmismatched-new-delete"
#endif
static std::atomic<long> gAllocations{0};
void* operator new(std::size_t n) {
  gAllocations.fetch_add(1, std::memory_order_relaxed);
  if (void* p = std::malloc(n == 0 ? 1 : n)) return p;
  throw std::bad_alloc();
}
void* operator new(std::size_t n, const std::nothrow_t&) noexcept {
  gAllocations.fetch_add(1, std::memory_order_relaxed);
  return std::malloc(n == 0 ? 1 : n);
}
void operator delete(void* p) noexcept { std::free(p); }
void operator delete(void* p, std::size_t) noexcept { std::free(p); }

namespace wirewise {
namespace {

// The semantics in one loop: the first rule (in order) whose collective and inclusive range cover the size.
Decision reference(const std::vector<TableRule>& rules, int coll, uint64_t n) {
  if (coll < 0 || coll >= kNumCollTypes) return Decision{};
  for (const TableRule& r : rules) {
    if ((r.coll == coll || r.coll == kAny) && r.minBytes <= n && n <= r.maxBytes) return r.decision;
  }
  return Decision{};
}

Decision dec(int a, int p, int ch = 0) { return Decision{int8_t(a), int8_t(p), int8_t(ch)}; }

uint64_t interestingSize(std::mt19937_64& rng) {
  switch (rng() % 6) {
    case 0: return SizeBuckets::lowerEdge(int(rng() % SizeBuckets::kCount)) + (rng() % 3) - 1;
    case 1: return rng() % 4096;
    case 2: return rng() >> (rng() % 64);
    case 3: return UINT64_MAX - rng() % 3;
    case 4: return SizeBuckets::lowerEdge(int(rng() % SizeBuckets::kCount)) + rng() % 300;
    default: return rng();
  }
}

std::vector<TableRule> randomRules(std::mt19937_64& rng) {
  std::vector<TableRule> rules(rng() % 24);
  for (TableRule& r : rules) {
    int c = int(rng() % 8) - 1;  // kAny, 0..4, and 5, 6 which cover nothing
    r.coll = c;
    r.minBytes = interestingSize(rng);
    r.maxBytes = rng() % 4 == 0 ? UINT64_MAX : interestingSize(rng);
    if (rng() % 5 != 0 && r.minBytes > r.maxBytes) std::swap(r.minBytes, r.maxBytes);  // a few stay empty
    int keep = int(rng() % 6);
    r.decision = keep == 0 ? Decision{} : dec(int(rng() % 8) - 1, int(rng() % 4) - 1, int(rng() % 65));
  }
  return rules;
}

void expectRangesConsistent(const DecisionTable& t) {
  auto rs = t.ranges();
  for (size_t i = 0; i < rs.size(); ++i) {
    const TableRule& r = rs[i];
    ASSERT_FALSE(r.decision.keepsNccl());
    ASSERT_LE(r.minBytes, r.maxBytes);
    ASSERT_EQ(t.lookup(r.coll, r.minBytes), r.decision);
    ASSERT_EQ(t.lookup(r.coll, r.maxBytes), r.decision);
    if (r.minBytes > 0 && (i == 0 || rs[i - 1].coll != r.coll || rs[i - 1].maxBytes + 1 != r.minBytes)) {
      ASSERT_TRUE(t.lookup(r.coll, r.minBytes - 1).keepsNccl());  // a neutral gap before
    }
    if (i > 0 && rs[i - 1].coll == r.coll) {
      ASSERT_LT(rs[i - 1].maxBytes, r.minBytes);
      if (rs[i - 1].maxBytes + 1 == r.minBytes) {
        ASSERT_NE(rs[i - 1].decision, r.decision);  // maximal: equal neighbours would have been merged
      }
    }
    if (i > 0) {
      ASSERT_LE(rs[i - 1].coll, r.coll);
    }
  }
}

TEST(DecisionTable, RandomRuleSetsMatchFirstMatchReference) {
  std::mt19937_64 rng(7);
  for (int set = 0; set < 1500; ++set) {
    auto rules = randomRules(rng);
    auto t = DecisionTable::build(rules, "random");
    std::vector<uint64_t> sizes = {0, 1, UINT64_MAX, UINT64_MAX - 1};
    for (const TableRule& r : rules) {
      for (uint64_t e : {r.minBytes, r.maxBytes}) {
        sizes.insert(sizes.end(), {e - 1, e, e + 1});
      }
    }
    for (int i = 0; i < SizeBuckets::kCount; ++i) {
      uint64_t e = SizeBuckets::lowerEdge(i);
      sizes.insert(sizes.end(), {e - 1, e, e + 1});
    }
    for (int k = 0; k < 200; ++k) sizes.push_back(interestingSize(rng));
    for (uint64_t n : sizes) {
      for (int c : {-1, 0, 1, 2, 3, 4, 5, INT_MIN, INT_MAX}) {
        ASSERT_EQ(t->lookup(c, n), reference(rules, c, n)) << "set " << set << " coll " << c << " size " << n;
      }
      // getCollInfo's compiled form of the same cell, cut buckets included.
      for (int c = 0; c < kNumCollTypes; ++c) {
        ASSERT_EQ(t->action(collBucket(c, SizeBuckets::index(n)), n), CostAction::of(reference(rules, c, n)))
            << "set " << set << " coll " << c << " size " << n;
      }
    }
    expectRangesConsistent(*t);
  }
}

// What getCollInfo does with each kind of decision, compiled once: the kind, and a channel count only
// when NCCL could take it.
TEST(CostAction, CompilesEachKindOfDecision) {
  EXPECT_EQ(CostAction::of(Decision{}).kind, CostAction::kKeep);
  EXPECT_EQ(CostAction::of(dec(1, 2)).kind, CostAction::kEntry);
  EXPECT_EQ(CostAction::of(dec(1, kAny)).kind, CostAction::kAlgoRow);
  EXPECT_EQ(CostAction::of(dec(kAny, 0)).kind, CostAction::kProtoColumn);
  EXPECT_EQ(CostAction::of(dec(kAny, kAny, 8)).kind, CostAction::kChannels);
  EXPECT_EQ(CostAction::of(dec(kAny, kAny, 8)).nChannels, 8);
  EXPECT_EQ(CostAction::of(dec(kAny, kAny, 65)).kind, CostAction::kChannels);  // applies nothing
  EXPECT_EQ(CostAction::of(dec(kAny, kAny, 65)).nChannels, 0);
  EXPECT_EQ(CostAction::of(dec(-3, 2)).kind, CostAction::kRefuse);
  EXPECT_EQ(CostAction::of(dec(kAny, -2, 4)).kind, CostAction::kRefuse);
  // A chunk size alone is getChunkSize's: nothing for getCollInfo.
  Decision chunkOnly;
  chunkOnly.chunkBytes = 1 << 20;
  EXPECT_EQ(CostAction::of(chunkOnly).kind, CostAction::kKeep);
}

TEST(DecisionTable, RuleEdgesInsideABucketAreExact) {
  std::vector<TableRule> rules = {{4, 1000, 5000, dec(kAlgoRing, kProtoLL)}, {4, 0, UINT64_MAX, dec(kAlgoTree, 2)}};
  auto t = DecisionTable::build(rules, "x");
  EXPECT_EQ(t->lookup(4, 999), dec(kAlgoTree, 2));
  EXPECT_EQ(t->lookup(4, 1000), dec(kAlgoRing, kProtoLL));
  EXPECT_EQ(t->lookup(4, 5000), dec(kAlgoRing, kProtoLL));
  EXPECT_EQ(t->lookup(4, 5001), dec(kAlgoTree, 2));
  EXPECT_EQ(t->lookup(4, UINT64_MAX), dec(kAlgoTree, 2));
  EXPECT_TRUE(t->lookup(0, 3000).keepsNccl());
  EXPECT_EQ(t->ranges().size(), 3u);
}

TEST(DecisionTable, ManyCutsInOneBucketUseTheExactSearchPath) {
  std::vector<TableRule> rules;
  uint64_t base = SizeBuckets::lowerEdge(50);
  for (int i = 0; i < 60; ++i) rules.push_back({2, base + 7 * uint64_t(i), base + 7 * uint64_t(i) + 3, dec(i % 7, i % 3)});
  auto t = DecisionTable::build(rules, "cuts");
  for (uint64_t n = base - 10; n < base + 500; ++n) ASSERT_EQ(t->lookup(2, n), reference(rules, 2, n)) << n;
}

TEST(DecisionTable, AnyCollAppliesToAllFiveAndOutOfRangeKeepsNccl) {
  std::vector<TableRule> rules = {{kAny, 0, 100, dec(kAlgoPat, kProtoSimple, 8)}};
  auto t = DecisionTable::build(rules, "any");
  for (int c = 0; c < kNumCollTypes; ++c) EXPECT_EQ(t->lookup(c, 50), dec(kAlgoPat, kProtoSimple, 8)) << c;
  EXPECT_TRUE(t->lookup(-1, 50).keepsNccl());
  EXPECT_TRUE(t->lookup(5, 50).keepsNccl());
  EXPECT_EQ(t->ranges().size(), 5u);
}

TEST(DecisionTable, KeepRuleShieldsLaterRules) {
  std::vector<TableRule> rules = {{4, 0, 100, Decision{}}, {4, 0, 1000, dec(kAlgoRing, kAny)}};
  auto t = DecisionTable::build(rules, "shield");
  EXPECT_TRUE(t->lookup(4, 100).keepsNccl());
  EXPECT_EQ(t->lookup(4, 101), dec(kAlgoRing, kAny));
  ASSERT_EQ(t->ranges().size(), 1u);
  EXPECT_EQ(t->ranges()[0], (TableRule{4, 101, 1000, dec(kAlgoRing, kAny)}));
}

TEST(DecisionTable, NeutralIsSharedAndEmpty) {
  auto a = DecisionTable::neutral(), b = DecisionTable::neutral();
  EXPECT_EQ(a.get(), b.get());
  EXPECT_TRUE(a->isNeutral());
  EXPECT_TRUE(a->ranges().empty());
  EXPECT_TRUE(a->lookup(4, 12345).keepsNccl());
  EXPECT_EQ(a->digest(), DecisionTable::build({}, "other")->digest());
  std::vector<TableRule> keepOnly = {{4, 0, 10, Decision{}}};
  EXPECT_TRUE(DecisionTable::build(keepOnly, "k")->isNeutral());
  std::vector<TableRule> one = {{4, 0, 10, dec(1, 1)}};
  auto t = DecisionTable::build(one, "reason text");
  EXPECT_FALSE(t->isNeutral());
  EXPECT_EQ(t->reason(), "reason text");
}

TEST(DecisionTable, DigestDependsOnlyOnTheEffectiveTable) {
  std::vector<TableRule> whole = {{4, 0, 99999, dec(1, 2, 4)}};
  std::vector<TableRule> pieces = {{4, 0, 5000, dec(1, 2, 4)}, {4, 5001, 99999, dec(1, 2, 4)}, {3, 7, 5, dec(0, 0)}};
  auto a = DecisionTable::build(whole, "a"), b = DecisionTable::build(pieces, "b");
  EXPECT_EQ(a->ranges(), b->ranges());
  EXPECT_EQ(a->digest(), b->digest());
  for (auto change : {TableRule{4, 0, 99998, dec(1, 2, 4)}, TableRule{4, 0, 99999, dec(1, 2, 5)},
                      TableRule{3, 0, 99999, dec(1, 2, 4)}, TableRule{4, 1, 99999, dec(1, 2, 4)},
                      TableRule{4, 0, 99999, dec(0, 2, 4)}, TableRule{4, 0, 99999, dec(1, 1, 4)}}) {
    std::vector<TableRule> other = {change};
    EXPECT_NE(DecisionTable::build(other, "c")->digest(), a->digest());
  }
}

TEST(DecisionTable, AChunkSizeIsPartOfTheDecisionAndOfTheDigestOnlyWhenSet) {
  // A table without chunk sizes keeps the digest it had before they existed (peers of the same wire
  // version compare digests of the static table): the FNV-1a of this one range, computed by hand.
  std::vector<TableRule> plain = {{4, 0, 99999, dec(1, 2, 4)}};
  uint64_t h = 0xcbf29ce484222325ULL;
  auto fnv = [&h](uint64_t v, int bytes) {
    for (int i = 0; i < bytes; ++i) h = (h ^ ((v >> (8 * i)) & 0xff)) * 0x100000001b3ULL;
  };
  fnv(4, 4), fnv(0, 8), fnv(99999, 8), fnv(1, 1), fnv(2, 1), fnv(4, 1);
  EXPECT_EQ(DecisionTable::build(plain, "p")->digest(), h);
  Decision chunked = dec(1, 2, 4);
  chunked.chunkBytes = 65536;
  std::vector<TableRule> withChunk = {{4, 0, 49999, dec(1, 2, 4)}, {4, 50000, 99999, chunked}};
  auto t = DecisionTable::build(withChunk, "c");
  EXPECT_NE(t->digest(), h);
  ASSERT_EQ(t->ranges().size(), 2u) << "equal but for the chunk size: not merged";
  EXPECT_EQ(t->lookup(4, 50000).chunkBytes, 65536u);
  EXPECT_EQ(t->lookup(4, 49999).chunkBytes, 0u);
  Decision onlyChunk;
  onlyChunk.chunkBytes = 4096;
  std::vector<TableRule> alone = {{2, 0, 10, onlyChunk}};
  EXPECT_FALSE(DecisionTable::build(alone, "a")->isNeutral()) << "a chunk size alone is a decision";
}

TEST(DecisionTable, LookupNeverAllocates) {
  std::mt19937_64 rng(3);
  std::vector<TableRule> rules;
  uint64_t base = SizeBuckets::lowerEdge(30);
  for (int i = 0; i < 40; ++i) rules.push_back({kAny, base + 11 * uint64_t(i), base + 11 * uint64_t(i) + 5, dec(1, 1)});
  auto more = randomRules(rng);
  rules.insert(rules.end(), more.begin(), more.end());
  auto t = DecisionTable::build(rules, "alloc");
  long before = gAllocations.load();
  int sum = 0;
  for (int k = 0; k < 100000; ++k) sum += t->lookup(int(k % 6), k % 2 ? base + uint64_t(k % 500) : rng()).algo;
  EXPECT_EQ(gAllocations.load(), before);
  EXPECT_NE(sum, INT_MIN);  // keeps the loop observable
}

}  // namespace
}  // namespace wirewise
