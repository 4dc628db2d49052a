#include <gtest/gtest.h>

#include "telemetry/wiring/analysis.h"
#include "telemetry/wiring/nominal.h"
#include "tests/telemetry/wiring/wiring_test_util.h"

namespace wirewise::wiring {
namespace {

using testing::countFlags;
using testing::findFlag;
using testing::loadMap;

TEST(WiringNominal, NvlinkFromNvmlCountAndSpeed) {
  WiringMap m = loadMap("h100x4_degraded.json");
  Nominal n = pairNominal(m, *m.pair(0, 1));
  EXPECT_DOUBLE_EQ(n.gbps, 18 * 25.0);
  EXPECT_NE(n.basis.find("18 NVLink(s)"), std::string::npos) << n.basis;
  // One GPU with links down: the NVSwitch path is limited by the fewer active links.
  m.gpus[1].nvlinksUp = 9;
  EXPECT_DOUBLE_EQ(pairNominal(m, *m.pair(0, 1)).gbps, 9 * 25.0);
  // Without NVML the generation's SXM defaults apply.
  for (auto& g : m.gpus) {
    g.nvlinksUp = -1;
    g.nvlinkGbpsPerLink = -1;
  }
  n = pairNominal(m, *m.pair(0, 1));
  EXPECT_DOUBLE_EQ(n.gbps, nvlinkDefaultLinks(9) * nvlinkLinkGbps(9));
  EXPECT_NE(n.basis.find("NVLink4"), std::string::npos) << n.basis;
}

TEST(WiringNominal, PcieUsesTheNarrowerTrainedLink) {
  WiringMap m = loadMap("pcie_a100x4_trained_down.json");
  EXPECT_NEAR(pairNominal(m, *m.pair(0, 2)).gbps, 16 * 1.969, 1e-9);
  EXPECT_NEAR(pairNominal(m, *m.pair(0, 1)).gbps, 8 * 1.969, 1e-9) << "gpu1 trained at x8";
  EXPECT_NE(pairNominal(m, *m.pair(0, 1)).basis.find("Gen4 x8"), std::string::npos);
  PairResult unknown = *m.pair(0, 2);
  unknown.link = LinkType::kUnknown;
  EXPECT_FALSE(pairNominal(m, unknown).known());
  EXPECT_LT(pcieLaneGbps(9), 0);
}

TEST(WiringNominal, MemoryBandwidthByProductName) {
  GpuInfo g;
  g.name = "NVIDIA H200";
  EXPECT_DOUBLE_EQ(memoryNominal(g).gbps, 4800);
  g.name = "NVIDIA H100 PCIe";
  EXPECT_DOUBLE_EQ(memoryNominal(g).gbps, 2000) << "the specific name wins over 'H100'";
  g.name = "NVIDIA H100 80GB HBM3";
  EXPECT_DOUBLE_EQ(memoryNominal(g).gbps, 3350);
  g.name = "Tesla T4";
  EXPECT_FALSE(memoryNominal(g).known());
}

TEST(WiringAnalysis, DegradedNvlinkMapFlagsExactlyItsFaults) {
  WiringMap m = loadMap("h100x4_degraded.json");
  Analysis a = analyze(m);

  // The asymmetric pair: gpu0->gpu2 at 40% of nominal, its reverse healthy.
  const Flag* weak = findFlag(a, FlagKind::kUnidirectional, 0, 2);
  ASSERT_NE(weak, nullptr);
  EXPECT_NEAR(weak->ratio, 180.1 / 450.0, 1e-9);
  EXPECT_DOUBLE_EQ(weak->measuredGbps, 180.1);
  EXPECT_DOUBLE_EQ(weak->referenceGbps, 450.0);
  EXPECT_NE(weak->text.find("gpu0->gpu2 unidirectional: 180.1 GB/s is 0.40 of nominal 450.0 GB/s"), std::string::npos)
      << weak->text;
  EXPECT_EQ(findFlag(a, FlagKind::kUnidirectional, 2, 0), nullptr);
  EXPECT_NEAR(a.pair(2, 0)->uniRatio, 385.2 / 450.0, 1e-9);
  EXPECT_FALSE(a.pair(2, 0)->flagged);

  // No peer access over NVLink, both directions.
  for (auto [s, d] : {std::pair{1, 3}, std::pair{3, 1}}) {
    const Flag* f = findFlag(a, FlagKind::kNoPeerAccess, s, d);
    ASSERT_NE(f, nullptr) << s << "->" << d;
    EXPECT_NE(f->text.find("although NVLink connects them"), std::string::npos) << f->text;
    EXPECT_NEAR(f->ratio, 20.4 / 450.0, 1e-9);
  }

  // The missing GPU.
  const Flag* gone = findFlag(a, FlagKind::kMissingGpu, 4, 4);
  ASSERT_NE(gone, nullptr);
  EXPECT_NE(gone->text.find("0000:DB:00.0"), std::string::npos) << gone->text;

  // gpu3's own memory copy is half what the others reach.
  const Flag* self = findFlag(a, FlagKind::kSelfCopy, 3, 3);
  ASSERT_NE(self, nullptr);
  EXPECT_NEAR(self->ratio, 1502.6 / 3350.0, 1e-9);
  EXPECT_EQ(findFlag(a, FlagKind::kSelfCopy, 0, 0), nullptr);

  // Nothing else: the healthy pairs (0.80-0.87 of nominal) stay unflagged.
  EXPECT_EQ(a.flags.size(), 5u);
  for (const Flag& f : a.flags) EXPECT_FALSE(f.text.empty());
  EXPECT_FALSE(a.pair(0, 1)->flagged);
  EXPECT_EQ(countFlags(a, FlagKind::kBidirectional), 0) << "the 0<->2 sum is explained by the weak direction";
}

TEST(WiringAnalysis, ThresholdIsAnOption) {
  WiringMap m = loadMap("h100x4_degraded.json");
  AnalysisOptions strict;
  strict.flagBelow = 0.9;  // every healthy pair (~0.86) now falls under it
  Analysis a = analyze(m, strict);
  EXPECT_NE(findFlag(a, FlagKind::kUnidirectional, 0, 1), nullptr);
  AnalysisOptions lax;
  lax.flagBelow = 0.3;
  Analysis b = analyze(m, lax);
  EXPECT_EQ(findFlag(b, FlagKind::kUnidirectional, 0, 2), nullptr) << "0.40 is above a 0.3 threshold";
}

TEST(WiringAnalysis, PcieMapFlagsTrainingAndTheWeakPair) {
  WiringMap m = loadMap("pcie_a100x4_trained_down.json");
  Analysis a = analyze(m);
  const Flag* trained = findFlag(a, FlagKind::kPcieTrainedDown, 1, 1);
  ASSERT_NE(trained, nullptr);
  EXPECT_DOUBLE_EQ(trained->ratio, 0.5);
  EXPECT_NE(trained->text.find("Gen4 x8"), std::string::npos) << trained->text;

  const Flag* weak = findFlag(a, FlagKind::kUnidirectional, 2, 3);
  ASSERT_NE(weak, nullptr);
  EXPECT_NEAR(weak->ratio, 9.0 / (16 * 1.969), 1e-9);
  EXPECT_EQ(findFlag(a, FlagKind::kUnidirectional, 3, 2), nullptr);

  // Pairs through gpu1 reach 0.83 of their (x8) nominal: the training flag explains them, no pair flag.
  EXPECT_EQ(findFlag(a, FlagKind::kUnidirectional, 0, 1), nullptr);
  EXPECT_EQ(countFlags(a, FlagKind::kBelowPeers), 0);
  EXPECT_EQ(a.flags.size(), 2u);
}

TEST(WiringAnalysis, WithoutNominalsTheWeakPairIsFlaggedAgainstItsPeers) {
  WiringMap m = loadMap("h100x4_degraded.json");
  for (auto& p : m.pairs) p.link = LinkType::kUnknown;  // no NVML, no CUDA attribute: nothing to compare with
  Analysis a = analyze(m);
  EXPECT_EQ(countFlags(a, FlagKind::kUnidirectional), 0);
  const Flag* f = findFlag(a, FlagKind::kBelowPeers, 0, 2);
  ASSERT_NE(f, nullptr);
  EXPECT_GT(f->referenceGbps, 380.0) << "the median of the peer-access pairs";
  EXPECT_NEAR(f->ratio, 180.1 / f->referenceGbps, 1e-9);
  EXPECT_NE(f->text.find("the median of unknown pairs"), std::string::npos) << f->text;
  EXPECT_EQ(countFlags(a, FlagKind::kBelowPeers), 1);
}

TEST(WiringAnalysis, BidirectionalFlaggedOncePerPair) {
  WiringMap m = loadMap("pcie_a100x4_trained_down.json");
  // 0<->3: both directions healthy, the sum at half of twice nominal.
  for (auto& p : m.pairs) {
    if ((p.src == 0 && p.dst == 3) || (p.src == 3 && p.dst == 0)) p.bidirGbps = 0.5 * 2 * 16 * 1.969;
  }
  Analysis a = analyze(m);
  EXPECT_EQ(countFlags(a, FlagKind::kBidirectional), 1);
  const Flag* f = findFlag(a, FlagKind::kBidirectional, 0, 3);
  ASSERT_NE(f, nullptr);
  EXPECT_NEAR(f->ratio, 0.5, 1e-9);
  // 2<->3 has a weak direction: its bidirectional figure (34.1, 0.54) is not flagged separately.
  EXPECT_EQ(findFlag(a, FlagKind::kBidirectional, 2, 3), nullptr);
}

TEST(WiringAnalysis, VerifyFailureAndUnmeasuredPairs) {
  WiringMap m = loadMap("pcie_a100x4_trained_down.json");
  for (auto& p : m.pairs) {
    if (p.src == 0 && p.dst == 2) p.verify = "failed";
    if (p.src == 3 && p.dst == 0) {
      p.ceGbps = p.smWriteGbps = p.smReadGbps = -1;
      p.error = "copy engine: an illegal memory access was encountered";
    }
  }
  Analysis a = analyze(m);
  EXPECT_NE(findFlag(a, FlagKind::kVerifyFailed, 0, 2), nullptr);
  const Flag* nm = findFlag(a, FlagKind::kNotMeasured, 3, 0);
  ASSERT_NE(nm, nullptr);
  EXPECT_NE(nm->text.find("illegal memory access"), std::string::npos) << nm->text;
}

TEST(WiringAnalysis, SingleGpuHasNoPairFlags) {
  WiringMap m = loadMap("h200x1_single.json");
  Analysis a = analyze(m);
  EXPECT_TRUE(a.flags.empty());
  ASSERT_EQ(a.gpus.size(), 1u);
  EXPECT_NEAR(a.gpus[0].selfCopyRatio, 4290.8 / 4800.0, 1e-9);
}

}  // namespace
}  // namespace wirewise::wiring
