#include "telemetry/aggregator.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <numeric>
#include <random>
#include <vector>

#include "adaptive/buckets.h"
#include "adaptive/types.h"

namespace wirewise {
namespace {

constexpr int kBcast = 0, kReduce = 1, kAllGather = 2, kReduceScatter = 3, kAllReduce = 4;

TEST(BusBandwidth, MatchesNcclTestsFactorsByHand) {
  // 1e9 B in 10 ms = 100 GB/s algbw; AllReduce on 8 ranks: x 2*7/8 = 1.75.
  EXPECT_DOUBLE_EQ(busBandwidthGBs(kAllReduce, 1'000'000'000, 10'000'000, 8), 175.0);
  // AllGather total buffer 8e8 B in 4 ms = 200 GB/s; x 7/8.
  EXPECT_DOUBLE_EQ(busBandwidthGBs(kAllGather, 800'000'000, 4'000'000, 8), 175.0);
  // ReduceScatter 4 ranks: 4e6 B in 100 us = 40 GB/s; x 3/4.
  EXPECT_DOUBLE_EQ(busBandwidthGBs(kReduceScatter, 4'000'000, 100'000, 4), 30.0);
  // Broadcast and Reduce: factor 1. 1e6 B in 10 us = 100 GB/s.
  EXPECT_DOUBLE_EQ(busBandwidthGBs(kBcast, 1'000'000, 10'000, 16), 100.0);
  EXPECT_DOUBLE_EQ(busBandwidthGBs(kReduce, 1'000'000, 10'000, 2), 100.0);
  // AllReduce on 2 ranks: factor 1.
  EXPECT_DOUBLE_EQ(busBandwidthGBs(kAllReduce, 1'000'000, 10'000, 2), 100.0);
}

TEST(BusBandwidth, DegenerateInputsGiveZero) {
  EXPECT_EQ(busBandwidthGBs(kAllReduce, 1000, 0, 8), 0.0);
  EXPECT_EQ(busBandwidthGBs(kAllReduce, 1000, 10, 0), 0.0);
  EXPECT_EQ(busBandwidthGBs(kAllReduce, 1000, 10, 1), 0.0);  // one rank moves nothing
  EXPECT_EQ(busBandwidthGBs(-1, 1000, 10, 8), 0.0);
  EXPECT_EQ(busBandwidthGBs(5, 1000, 10, 8), 0.0);
}

CollSample sample(int coll, uint64_t bytes, uint64_t ns, int algo = kAlgoRing, int proto = kProtoSimple, int ch = 4) {
  CollSample s;
  s.coll = static_cast<int8_t>(coll);
  s.bytes = bytes;
  s.durationNs = ns;
  s.algo = static_cast<int8_t>(algo);
  s.proto = static_cast<int8_t>(proto);
  s.nChannels = static_cast<uint8_t>(ch);
  return s;
}

TEST(Aggregator, PercentilesAndBandwidthForOneKey) {
  Aggregator agg(8);
  std::vector<uint64_t> us(100);
  std::iota(us.begin(), us.end(), 1);  // 1..100 us
  std::shuffle(us.begin(), us.end(), std::mt19937(42));
  for (uint64_t u : us) agg.add(sample(kAllReduce, 1 << 20, u * 1000));
  auto rows = agg.takeSummary();
  ASSERT_EQ(rows.size(), 1u);
  const SummaryRow& r = rows[0];
  EXPECT_EQ(r.coll, kAllReduce);
  EXPECT_EQ(r.bucket, SizeBuckets::index(1 << 20));
  EXPECT_EQ(r.algo, kAlgoRing);
  EXPECT_EQ(r.proto, kProtoSimple);
  EXPECT_EQ(r.nChannels, 4);
  EXPECT_EQ(r.count, 100u);
  EXPECT_EQ(r.bytesMin, 1u << 20);
  EXPECT_EQ(r.bytesMax, 1u << 20);
  EXPECT_DOUBLE_EQ(r.p50Us, 50.0);  // nearest rank: the 50th of 100
  EXPECT_DOUBLE_EQ(r.p99Us, 99.0);
  // 1048576 B / 50000 ns = 20.97152 GB/s, x 1.75 on 8 ranks.
  EXPECT_NEAR(r.busBwGBs, 36.70016, 1e-9);
}

TEST(Aggregator, RowsAreSeparatedAndSortedByKey) {
  Aggregator agg(4);
  agg.add(sample(kAllReduce, 4096, 10'000, kAlgoTree, kProtoLL));
  agg.add(sample(kAllReduce, 4096, 10'000, kAlgoRing, kProtoLL));
  agg.add(sample(kAllReduce, 1 << 20, 10'000, kAlgoRing, kProtoSimple));
  agg.add(sample(kAllGather, 4096, 10'000, kAlgoRing, kProtoLL));
  agg.add(sample(kAllReduce, 4096, 10'000, kAlgoRing, kProtoLL, 8));
  agg.add(sample(-1, 4096, 10'000));  // unknown collective: ignored
  auto rows = agg.takeSummary();
  ASSERT_EQ(rows.size(), 5u);
  EXPECT_EQ(rows[0].coll, kAllGather);
  for (size_t i = 1; i < rows.size(); ++i) {
    auto key = [](const SummaryRow& r) { return std::tuple(r.coll, r.bucket, r.algo, r.proto, r.nChannels); };
    EXPECT_LT(key(rows[i - 1]), key(rows[i]));
  }
  EXPECT_TRUE(agg.takeSummary().empty());  // a new interval starts empty
}

TEST(Aggregator, MeanSizeWithinABucket) {
  Aggregator agg(2);
  // Two sizes in the same quarter-octave bucket, same time: busbw uses the mean size.
  ASSERT_EQ(SizeBuckets::index(1 << 20), SizeBuckets::index((1 << 20) + 4096));
  agg.add(sample(kBcast, 1 << 20, 100'000));
  agg.add(sample(kBcast, (1 << 20) + 4096, 100'000));
  auto rows = agg.takeSummary();
  ASSERT_EQ(rows.size(), 1u);
  EXPECT_EQ(rows[0].bytesMin, 1u << 20);
  EXPECT_EQ(rows[0].bytesMax, (1u << 20) + 4096);
  EXPECT_DOUBLE_EQ(rows[0].busBwGBs, ((1 << 20) + 2048) / 100'000.0);
}

TEST(Aggregator, DecimationBoundsMemoryAndKeepsPercentilesClose) {
  Aggregator agg(8);
  const uint64_t n = 10'000;
  for (uint64_t i = 1; i <= n; ++i) agg.add(sample(kAllReduce, 65536, i * 100));
  auto rows = agg.takeSummary();
  ASSERT_EQ(rows.size(), 1u);
  EXPECT_EQ(rows[0].count, n);
  // Exact nearest-rank values would be 500 us and 990 us; decimation keeps every 4th sample here.
  EXPECT_NEAR(rows[0].p50Us, 500.0, 1.0);
  EXPECT_NEAR(rows[0].p99Us, 990.0, 1.0);
}

}  // namespace
}  // namespace wirewise
