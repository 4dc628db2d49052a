#include "adaptive/buckets.h"

#include <gtest/gtest.h>

#include <random>
#include <vector>

namespace wirewise {
namespace {

// Edges computed independently of buckets.cc: 1 KiB * 2^k * (1 + q/4), by plain multiplication.
std::vector<uint64_t> referenceEdges() {
  std::vector<uint64_t> edges = {0};
  for (int k = 0; k < 24; ++k) {
    for (int q = 0; q < 4; ++q) edges.push_back((uint64_t{1024} << k) + q * (uint64_t{256} << k));
  }
  edges.push_back(uint64_t{16} << 30);
  return edges;
}

int referenceIndex(const std::vector<uint64_t>& edges, uint64_t n) {
  int i = 0;
  while (i + 1 < static_cast<int>(edges.size()) && edges[static_cast<size_t>(i) + 1] <= n) ++i;
  return i;
}

TEST(SizeBuckets, CountMatchesTheGrid) {
  EXPECT_EQ(SizeBuckets::kCount, 98);
  EXPECT_EQ(referenceEdges().size(), 98u);
}

TEST(SizeBuckets, EdgesMatchIndependentReference) {
  auto edges = referenceEdges();
  for (int i = 0; i < SizeBuckets::kCount; ++i) {
    EXPECT_EQ(SizeBuckets::lowerEdge(i), edges[static_cast<size_t>(i)]) << i;
  }
  EXPECT_EQ(SizeBuckets::lowerEdge(1), 1024u);
  EXPECT_EQ(SizeBuckets::lowerEdge(2), 1280u);
  EXPECT_EQ(SizeBuckets::lowerEdge(5), 2048u);
  EXPECT_EQ(SizeBuckets::lowerEdge(96), (uint64_t{1} << 33) + (uint64_t{3} << 31));
  EXPECT_EQ(SizeBuckets::lowerEdge(97), uint64_t{1} << 34);
}

TEST(SizeBuckets, EveryEdgeMinusOneEdgeAndPlusOne) {
  for (int i = 0; i < SizeBuckets::kCount; ++i) {
    uint64_t lo = SizeBuckets::lowerEdge(i);
    EXPECT_EQ(SizeBuckets::index(lo), i) << i;
    EXPECT_EQ(SizeBuckets::index(lo + 1), i) << i;  // every bucket is wider than one byte
    if (i > 0) {
      EXPECT_EQ(SizeBuckets::index(lo - 1), i - 1) << i;
    }
    if (i + 1 < SizeBuckets::kCount) {
      EXPECT_EQ(SizeBuckets::upperEdge(i), SizeBuckets::lowerEdge(i + 1));
      EXPECT_LT(SizeBuckets::lowerEdge(i), SizeBuckets::upperEdge(i));
      EXPECT_EQ(SizeBuckets::index(SizeBuckets::upperEdge(i) - 1), i);
    }
  }
  EXPECT_EQ(SizeBuckets::upperEdge(SizeBuckets::kCount - 1), UINT64_MAX);
}

TEST(SizeBuckets, ExtremesAndClamping) {
  EXPECT_EQ(SizeBuckets::index(0), 0);
  EXPECT_EQ(SizeBuckets::index(1023), 0);
  EXPECT_EQ(SizeBuckets::index(1024), 1);
  EXPECT_EQ(SizeBuckets::index((uint64_t{1} << 34) - 1), 96);
  EXPECT_EQ(SizeBuckets::index(uint64_t{1} << 34), 97);
  EXPECT_EQ(SizeBuckets::index(UINT64_MAX), 97);
  EXPECT_EQ(SizeBuckets::index(uint64_t{1} << 63), 97);
  EXPECT_EQ(SizeBuckets::lowerEdge(-5), 0u);
  EXPECT_EQ(SizeBuckets::lowerEdge(1000), uint64_t{1} << 34);
  EXPECT_EQ(SizeBuckets::upperEdge(1000), UINT64_MAX);
}

// index() reads the bucket off a double: every power of two and its neighbours, up to 2^64 - 1, where
// the conversion rounds (above 2^53) or turns negative (from 2^63).
TEST(SizeBuckets, PowersOfTwoAndNeighboursAgreeWithReference) {
  auto edges = referenceEdges();
  for (int k = 0; k < 64; ++k) {
    const uint64_t p = uint64_t{1} << k;
    for (uint64_t n : {p - 1, p, p + 1, p + p / 4 - 1, p + p / 4, p + p / 2 + 1, p | (p - 1)})
      ASSERT_EQ(SizeBuckets::index(n), referenceIndex(edges, n)) << n;
  }
}

TEST(SizeBuckets, ExhaustiveSmallSizesAgreeWithReference) {
  auto edges = referenceEdges();
  int prev = 0;
  int ref = 0;
  for (uint64_t n = 0; n < (uint64_t{1} << 20); ++n) {
    while (ref + 1 < static_cast<int>(edges.size()) && edges[static_cast<size_t>(ref) + 1] <= n) ++ref;
    int idx = SizeBuckets::index(n);
    ASSERT_EQ(idx, ref) << n;
    ASSERT_GE(idx, prev) << n;
    prev = idx;
  }
}

TEST(SizeBuckets, RandomSizesAgreeWithReferenceAndAreMonotone) {
  auto edges = referenceEdges();
  std::mt19937_64 rng(42);
  for (int k = 0; k < 200000; ++k) {
    uint64_t a = rng() >> (rng() % 64), b = rng() >> (rng() % 64);
    ASSERT_EQ(SizeBuckets::index(a), referenceIndex(edges, a)) << a;
    if (a > b) std::swap(a, b);
    ASSERT_LE(SizeBuckets::index(a), SizeBuckets::index(b)) << a << " " << b;
  }
}

}  // namespace
}  // namespace wirewise
