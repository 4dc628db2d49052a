#include "sim/model/nccl_model.h"

#include <gtest/gtest.h>

#include "tests/sim/model/test_clusters.h"

namespace wirewise::sim {
namespace {

using testing::cluster;
using testing::world;

constexpr size_t kMiB = size_t{1} << 20;

TEST(NcclModelTest, GraphSearchMatchesDerivedChannelCounts) {
  // model.md §2.4: 8xH100 6x60 -> dup 12x30 -> 24 comm channels; NVLS 8 heads x 40.
  auto h = cluster(GpuKind::H100Sxm, 1, 8);
  NcclModel m(h, world(h));
  EXPECT_EQ(m.graph(kAlgoRing).nChannels, 12);
  EXPECT_DOUBLE_EQ(m.graph(kAlgoRing).bwIntra, 30);
  EXPECT_EQ(m.commChannels(), 24);
  EXPECT_EQ(m.graph(kAlgoNvls).nChannels, 8);
  EXPECT_DOUBLE_EQ(m.graph(kAlgoNvls).bwIntra, 40);
  EXPECT_EQ(m.nvlsChannels(), 16);
  // 8xA100: 6x40 -> 12x20, 24 channels, no NVLS.
  auto a = cluster(GpuKind::A100Sxm, 1, 8);
  NcclModel ma(a, world(a));
  EXPECT_EQ(ma.graph(kAlgoRing).nChannels, 12);
  EXPECT_DOUBLE_EQ(ma.graph(kAlgoRing).bwIntra, 20);
  EXPECT_FALSE(ma.nvlsSupport());
  // 2x8 H100 + 8x400G: 8 x 48, no dup, 16 comm channels ("Channel xx/16", nccl#1453).
  auto h2 = cluster(GpuKind::H100Sxm, 2, 8);
  NcclModel m2(h2, world(h2));
  EXPECT_EQ(m2.graph(kAlgoRing).nChannels, 8);
  EXPECT_DOUBLE_EQ(m2.graph(kAlgoRing).bwIntra, 48);
  EXPECT_EQ(m2.commChannels(), 16);
}

TEST(NcclModelTest, SingleNodeH100TableMatchesModelMd) {
  // model.md §7 (2.27 numbers; only NVLS changes in 2.28, §9: 476 busBw-eq -> algBw 272).
  auto h = cluster(GpuKind::H100Sxm, 1, 8);
  NcclModel m(h, world(h));
  const auto ar = CollType::AllReduce;
  EXPECT_NEAR(m.latency(ar, kAlgoRing, kProtoLL), 15.0, 0.05);
  EXPECT_NEAR(m.latency(ar, kAlgoRing, kProtoLL128), 40.6, 0.05);
  EXPECT_NEAR(m.latency(ar, kAlgoRing, kProtoSimple), 56.0, 0.05);
  EXPECT_NEAR(m.bandwidth(ar, kAlgoRing, kProtoLL), 80.6, 0.1);
  EXPECT_NEAR(m.bandwidth(ar, kAlgoRing, kProtoLL128), 189.3, 0.1);
  EXPECT_NEAR(m.bandwidth(ar, kAlgoRing, kProtoSimple), 205.7, 0.1);
  EXPECT_NEAR(m.bandwidth(ar, kAlgoTree, kProtoSimple), 165.6, 0.1);
  EXPECT_NEAR(m.latency(ar, kAlgoTree, kProtoSimple), 64.4, 0.05);
  EXPECT_NEAR(m.bandwidth(ar, kAlgoNvls, kProtoSimple), 476.0 * 8 / 14, 0.1);
  EXPECT_NEAR(m.latency(ar, kAlgoNvls, kProtoSimple), 25.0, 0.01);
}

TEST(NcclModelTest, TwoNodeH100TableMatchesModelMd) {
  auto h = cluster(GpuKind::H100Sxm, 2, 8);
  NcclModel m(h, world(h));
  const auto ar = CollType::AllReduce;
  EXPECT_NEAR(m.latency(ar, kAlgoRing, kProtoLL), 40.0, 0.05);
  EXPECT_NEAR(m.latency(ar, kAlgoRing, kProtoSimple), 131.6, 0.05);
  EXPECT_NEAR(m.latency(ar, kAlgoTree, kProtoLL), 25.2, 0.05);
  EXPECT_NEAR(m.latency(ar, kAlgoTree, kProtoSimple), 92.4, 0.05);
  EXPECT_NEAR(m.bandwidth(ar, kAlgoRing, kProtoSimple) * 30 / 16, 384, 0.1);
  EXPECT_NEAR(m.bandwidth(ar, kAlgoTree, kProtoSimple) * 30 / 16, 310.5, 0.1);
  // NVLSTree (2.28): min(40*.85*7/8*2, 2*48, 57.7) = 57.7 per channel, 8 channels, ratio n/nsteps.
  EXPECT_NEAR(m.bandwidth(ar, kAlgoNvlsTree, kProtoSimple), 8 * 57.7 * 16 / 30, 0.1);
  EXPECT_NEAR(m.latency(ar, kAlgoNvlsTree, kProtoSimple), 25 + 2 * 20.9, 0.01);
}

TEST(NcclModelTest, DisabledCombinationsAreMinusOne) {
  float t[kNumAlgos][kNumProtos];
  auto h1 = cluster(GpuKind::H100Sxm, 1, 8);
  NcclModel single(h1, world(h1));
  auto h2 = cluster(GpuKind::H100Sxm, 2, 8);
  NcclModel multi(h2, world(h2));
  for (size_t bytes : {size_t{8}, 64 * size_t{1024}, 16 * kMiB, 1024 * kMiB}) {
    for (int coll = 0; coll < kNumCollTypes; ++coll) {
      for (const NcclModel* m : {&single, &multi}) {
        m->costTableUs(static_cast<CollType>(coll), bytes, t);
        for (int p = 0; p < kNumProtos; ++p) {
          EXPECT_EQ(t[kAlgoCollNetDirect][p], -1.0f);  // no CollNet on the simulated fabrics
          EXPECT_EQ(t[kAlgoCollNetChain][p], -1.0f);
          EXPECT_EQ(t[kAlgoPat][p], -1.0f);  // PAT needs one GPU per node
          if (p != kProtoSimple) {
            EXPECT_EQ(t[kAlgoNvls][p], -1.0f);
            EXPECT_EQ(t[kAlgoNvlsTree][p], -1.0f);
          }
        }
        if (coll != static_cast<int>(CollType::AllReduce)) {
          for (int p = 0; p < kNumProtos; ++p) EXPECT_EQ(t[kAlgoTree][p], -1.0f);
          EXPECT_EQ(t[kAlgoNvlsTree][kProtoSimple], -1.0f);
        }
        for (int p = 0; p < kNumProtos; ++p) EXPECT_GT(t[kAlgoRing][p], 0.0f);
      }
      single.costTableUs(static_cast<CollType>(coll), bytes, t);
      EXPECT_EQ(t[kAlgoNvlsTree][kProtoSimple], -1.0f);  // NVLSTree disabled on one node
      multi.costTableUs(static_cast<CollType>(coll), bytes, t);
      EXPECT_EQ(t[kAlgoNvls][kProtoSimple], -1.0f);  // NVLS across nodes needs CollNet
    }
  }
  single.costTableUs(CollType::AllReduce, 16 * kMiB, t);
  EXPECT_GT(t[kAlgoNvls][kProtoSimple], 0.0f);
  multi.costTableUs(CollType::AllReduce, 16 * kMiB, t);
  EXPECT_GT(t[kAlgoNvlsTree][kProtoSimple], 0.0f);
}

TEST(NcclModelTest, Ll128AndNvlsRulesPerArchAndLinks) {
  float t[kNumAlgos][kNumProtos];
  auto a = cluster(GpuKind::A100Sxm, 1, 8);
  NcclModel ma(a, world(a));
  ma.costTableUs(CollType::AllReduce, kMiB, t);
  EXPECT_EQ(t[kAlgoNvls][kProtoSimple], -1.0f);   // SM80: no NVLS
  EXPECT_GT(t[kAlgoRing][kProtoLL128], 0.0f);      // NVLink: LL128 on
  auto p = cluster(GpuKind::Pcie, 1, 8);
  NcclModel mp(p, world(p));
  mp.costTableUs(CollType::AllReduce, kMiB, t);
  EXPECT_EQ(t[kAlgoRing][kProtoLL128], -1.0f);     // PCI intra path: LL128 off
  EXPECT_EQ(t[kAlgoTree][kProtoLL128], -1.0f);
  auto s = cluster(GpuKind::H100Sxm, 2, 8);
  s.transport = Transport::Socket;
  NcclModel ms(s, world(s));
  ms.costTableUs(CollType::AllReduce, kMiB, t);
  EXPECT_EQ(t[kAlgoRing][kProtoLL128], -1.0f);     // host-path NIC: beyond PXN
  auto h = cluster(GpuKind::H100Sxm, 1, 8);
  h.nvls = false;
  NcclModel mh(h, world(h));
  mh.costTableUs(CollType::AllReduce, kMiB, t);
  EXPECT_EQ(t[kAlgoNvls][kProtoSimple], -1.0f);
}

TEST(NcclModelTest, PatOnlyWithOneGpuPerNode) {
  auto c = cluster(GpuKind::H100Sxm, 4, 8);
  NcclModel m(c, makeCommLayout(c, {0, 8, 16, 24}));
  float t[kNumAlgos][kNumProtos];
  m.costTableUs(CollType::AllGather, kMiB, t);
  EXPECT_GT(t[kAlgoPat][kProtoSimple], 0.0f);
  EXPECT_EQ(t[kAlgoPat][kProtoLL], -1.0f);
  m.costTableUs(CollType::AllReduce, kMiB, t);
  EXPECT_EQ(t[kAlgoPat][kProtoSimple], -1.0f);
}

TEST(NcclModelTest, DefaultChoicesArePlausible) {
  auto h = cluster(GpuKind::H100Sxm, 1, 8);
  NcclModel m(h, world(h));
  auto small = m.defaultChoice(CollType::AllReduce, 8);
  EXPECT_EQ(small.algo, kAlgoRing);
  EXPECT_EQ(small.proto, kProtoLL);
  EXPECT_EQ(small.nChannels, 1);  // §6: channels drop while bytes < nc x nt x threshold
  auto mid = m.defaultChoice(CollType::AllReduce, 16 * kMiB);
  EXPECT_EQ(mid.algo, kAlgoNvls);  // model.md §7: NVLS above ~1.1 MB
  EXPECT_EQ(mid.nChannels, 16);
  auto one = m.defaultChoice(CollType::AllReduce, kMiB);
  EXPECT_EQ(one.algo, kAlgoRing);
  EXPECT_EQ(one.nChannels, 24);
  // 2x8: Tree/LL for small, NVLSTree at large sizes.
  auto h2 = cluster(GpuKind::H100Sxm, 2, 8);
  NcclModel m2(h2, world(h2));
  EXPECT_EQ(m2.defaultChoice(CollType::AllReduce, 4096).algo, kAlgoTree);
  EXPECT_EQ(m2.defaultChoice(CollType::AllReduce, 256 * kMiB).algo, kAlgoNvlsTree);
  // Without NVLS the large 2-node choice is Ring/Simple (model.md §7).
  h2.nvls = false;
  NcclModel m3(h2, world(h2));
  auto big = m3.defaultChoice(CollType::AllReduce, 1024 * kMiB);
  EXPECT_EQ(big.algo, kAlgoRing);
  EXPECT_EQ(big.proto, kProtoSimple);
  EXPECT_EQ(big.nChannels, 16);
}

TEST(NcclModelTest, CostTableIsLatencyPlusBytesOverBandwidth) {
  auto a = cluster(GpuKind::A100Sxm, 1, 8);
  NcclModel m(a, world(a));
  float t[kNumAlgos][kNumProtos];
  const size_t bytes = 256 * kMiB;
  float best = m.costTableUs(CollType::AllGather, bytes, t);
  double expect = m.latency(CollType::AllGather, kAlgoRing, kProtoSimple) +
                  bytes / (1000.0 * m.bandwidth(CollType::AllGather, kAlgoRing, kProtoSimple));
  EXPECT_NEAR(t[kAlgoRing][kProtoSimple], expect, expect * 1e-5);
  EXPECT_EQ(best, t[kAlgoRing][kProtoSimple]);
  // FP8 rings beyond 8 ranks are relegated x1024.
  auto h = cluster(GpuKind::H100Sxm, 2, 8);
  NcclModel m2(h, world(h));
  float f32[kNumAlgos][kNumProtos], f8[kNumAlgos][kNumProtos];
  m2.costTableUs(CollType::AllReduce, kMiB, f32, DType::F32);
  m2.costTableUs(CollType::AllReduce, kMiB, f8, DType::F8);
  EXPECT_NEAR(f8[kAlgoRing][kProtoSimple], 1024 * f32[kAlgoRing][kProtoSimple], f8[kAlgoRing][kProtoSimple] * 1e-5);
  EXPECT_EQ(f8[kAlgoTree][kProtoSimple], f32[kAlgoTree][kProtoSimple]);
}

TEST(NcclModelTest, SingleRankCommIsRingSimpleZero) {
  auto h = cluster(GpuKind::H100Sxm, 1, 8);
  NcclModel m(h, makeCommLayout(h, {3}));
  float t[kNumAlgos][kNumProtos];
  EXPECT_EQ(m.costTableUs(CollType::AllReduce, kMiB, t), 0.0f);
  EXPECT_EQ(t[kAlgoRing][kProtoSimple], 0.0f);
  EXPECT_EQ(t[kAlgoRing][kProtoLL], -1.0f);
}

}  // namespace
}  // namespace wirewise::sim
