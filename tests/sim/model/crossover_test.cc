// The truth model against every published figure in model.md that compares protocols or algorithms at one size on
// one box (§8 rows 1a/1b/1c, 1d, 1f, the §8 targets table, I5). Each check names its row. Forced runs use the
// channel count NCCL gives that (algorithm, protocol), as nccl-tests with NCCL_ALGO/NCCL_PROTO would get.
// Ratio tolerances are wider than a single point's where the two figures come from different boxes or runs.
#include <algorithm>
#include <cstdio>

#include <gtest/gtest.h>

#include "sim/model/truth.h"
#include "tests/sim/model/test_clusters.h"

namespace wirewise::sim {
namespace {

using testing::cluster;
using testing::world;

constexpr size_t K = 1024, M = K * K, G = K * M;
constexpr int kDefault = -1;

struct Box {
  ClusterSpec c;
  CommLayout l;
  NcclModel nccl;
  explicit Box(const ClusterSpec& spec) : c(spec), l(world(spec)), nccl(c, l) {}

  // True µs of one collective; algo == kDefault runs NCCL's own choice.
  double timeUs(CollType coll, size_t bytes, int algo, int proto = kProtoSimple) const {
    TruthQuery q;
    q.coll = coll;
    q.nBytes = bytes;
    if (algo == kDefault) {
      NcclChoice choice = nccl.defaultChoice(coll, bytes);
      q.algo = choice.algo;
      q.proto = choice.proto;
      q.nChannels = choice.nChannels;
    } else {
      q.algo = algo;
      q.proto = proto;
      q.nChannels = nccl.defaultChannels(algo, proto, bytes);
    }
    return truthTimeUs(c, l, healthyLinkState(c), q);
  }
  double busBw(CollType coll, size_t bytes, int algo, int proto = kProtoSimple) const {
    return busBwGBps(coll, bytes, l.nRanks, timeUs(coll, bytes, algo, proto));
  }
};

// model / published ratio of two ratios, printed so a failing run shows every figure.
void expectRatio(const char* row, const char* what, double model, double published, double tolerance) {
  std::printf("%-4s %-40s model %6.3f published %6.3f dev %+6.1f%%\n", row, what, model, published,
              100 * (model / published - 1));
  EXPECT_NEAR(model / published, 1.0, tolerance) << "row " << row << ": " << what;
}

// Row 1f (S10 proto_sweep.txt): 4xH100 ring all-reduce at 256 MB, busbw Simple 339.8 > LL128 313.2 > LL 146.7.
TEST(CrossoverTest, Row1fRingProtocolsAt256MiB) {
  const Box b(cluster(GpuKind::H100Sxm, 1, 4));
  const CollType ar = CollType::AllReduce;
  const double simple = b.busBw(ar, 256 * M, kAlgoRing, kProtoSimple);
  const double ll128 = b.busBw(ar, 256 * M, kAlgoRing, kProtoLL128);
  const double ll = b.busBw(ar, 256 * M, kAlgoRing, kProtoLL);
  EXPECT_GT(simple, ll128);
  EXPECT_GT(ll128, ll);
  // Same box, same run: the ratios are as good as the points (±5% LL128, ±10% for LL's small absolute figure).
  expectRatio("1f", "ring LL128/Simple busbw 256 MB", ll128 / simple, 313.213 / 339.788, 0.05);
  expectRatio("1f", "ring LL/Simple busbw 256 MB", ll / simple, 146.728 / 339.788, 0.10);
}

// Row 1f (S10 algo_sweep.txt): 4xH100 all-reduce, busbw NVLS > Ring > Tree at 256 MB, 1 GB and 8 GB.
TEST(CrossoverTest, Row1fAlgorithmsAtLargeSizes) {
  const Box b(cluster(GpuKind::H100Sxm, 1, 4));
  const CollType ar = CollType::AllReduce;
  struct Published {
    size_t bytes;
    double ring, tree, nvls;
  };
  for (const Published& p : {Published{256 * M, 339.781, 235.751, 359.19},
                             Published{G, 355.956, 250.076, 371.515},
                             Published{8 * G, 365.984, 259.331, 376.411}}) {
    const double ring = b.busBw(ar, p.bytes, kAlgoRing);
    const double tree = b.busBw(ar, p.bytes, kAlgoTree);
    const double nvls = b.busBw(ar, p.bytes, kAlgoNvls);
    EXPECT_GT(nvls, ring) << p.bytes;
    EXPECT_GT(ring, tree) << p.bytes;
    // Separate nccl-tests runs of one box: ±10% on each ratio.
    expectRatio("1f", "tree/ring busbw", tree / ring, p.tree / p.ring, 0.10);
    expectRatio("1f", "nvls/ring busbw", nvls / ring, p.nvls / p.ring, 0.10);
  }
}

// Rows 1a / 1b / 1c: on 8xH100 NVLS's fixed cost makes it slower than NCCL's default (ring LL) up to 1 MB (§10: fall
// back to ring for <= 1 MB). Published NVLS/default time ratios: 1b (forced NVLS, Azure H100) 1.51 / 2.16 / 1.53 and
// 1c (forced NVLS, H200) 1.77 / 1.58 / 1.26 at 1 KB / 64 KB / 1 MB, against 1a's default. The two NVLS boxes disagree
// by up to 37%, so the model must land inside the band they span, widened by ±15% (one exception, below).
TEST(CrossoverTest, Rows1a1bRingLlBeatsNvlsUpTo1MiB) {
  const Box b(cluster(GpuKind::H100Sxm, 1, 8));
  const CollType ar = CollType::AllReduce;
  const double n = 8;
  auto timeFromBusBw = [&](size_t bytes, double busbw) { return bytes * 2 * (n - 1) / n / (busbw * 1e3); };
  struct Published {
    size_t bytes;
    double defaultUs, nvls1b, nvls1c;  // 1a time; 1b and 1c busbw
    double tolerance;
    const char* exception;  // why the tolerance is wider, or nullptr
  };
  const Published points[] = {
      {K, 16.9, 0.07, 0.06, 0.15, nullptr},
      {64 * K, 19.5, 2.72, 3.72, 0.30,
       "64 KB: the ratio compounds two points that each sit inside their own tolerance but on opposite sides: ring LL "
       "is 13% slow (calibration 1a 64 KB) and NVLS has no ~30 us floor (its fixed cost is fit to 1b's 25.6 us at "
       "1 KB, 1c shows 30.8 us at 64 KB); the model gives ~1.2 against 1.58-2.16"},
      {M, 27.4, 43.70, 52.96, 0.15, nullptr},
  };
  for (const Published& p : points) {
    const double r1b = timeFromBusBw(p.bytes, p.nvls1b) / p.defaultUs;
    const double r1c = timeFromBusBw(p.bytes, p.nvls1c) / p.defaultUs;
    const NcclChoice choice = b.nccl.defaultChoice(ar, p.bytes);
    ASSERT_EQ(choice.algo, kAlgoRing) << p.bytes;  // the published default at these sizes is a ring
    const double ratio = b.timeUs(ar, p.bytes, kAlgoNvls) / b.timeUs(ar, p.bytes, kDefault);
    std::printf("1a1b %8zu B nvls/default time model %.2f published %.2f (1b) %.2f (1c)\n", p.bytes, ratio, r1b, r1c);
    EXPECT_GT(ratio, 1.0) << p.bytes;
    EXPECT_GE(ratio, std::min(r1b, r1c) * (1 - p.tolerance)) << p.bytes;
    EXPECT_LE(ratio, std::max(r1b, r1c) * (1 + p.tolerance)) << p.bytes;
    if (p.exception == nullptr) {
      EXPECT_LE(p.tolerance, 0.15) << "wider tolerances need a documented exception";
    }
  }
}

// Row 1d (I1) with 1a: 8xH100 at 8 GB, ring (NVLS off) ~370 busbw, NVLS ~480.
TEST(CrossoverTest, Row1dNvlsBeatsRingAtLargeSizesOn8Gpus) {
  const Box b(cluster(GpuKind::H100Sxm, 1, 8));
  const CollType ar = CollType::AllReduce;
  const double ring = b.busBw(ar, 8 * G, kAlgoRing);
  const double nvls = b.busBw(ar, 8 * G, kAlgoNvls);
  EXPECT_NEAR(ring / 370, 1.0, 0.05) << ring;
  expectRatio("1d", "nvls/ring busbw 8 GB", nvls / ring, 480.2 / 370, 0.10);
}

// §8 targets table, 8xH100 1 node, large busbw: NVLS ~480 > ring ~360-370 > tree ~260-290.
TEST(CrossoverTest, TargetsTableTreeBelowRingOn8Gpus) {
  const Box b(cluster(GpuKind::H100Sxm, 1, 8));
  const CollType ar = CollType::AllReduce;
  const double ring = b.busBw(ar, 8 * G, kAlgoRing);
  const double tree = b.busBw(ar, 8 * G, kAlgoTree);
  const double nvls = b.busBw(ar, 8 * G, kAlgoNvls);
  std::printf("targets 8xH100 8 GB busbw: nvls %.1f ring %.1f tree %.1f\n", nvls, ring, tree);
  EXPECT_GT(nvls, ring);
  EXPECT_GT(ring, tree);
  EXPECT_GE(tree, 260 * 0.9);
  EXPECT_LE(tree, 290 * 1.1);
}

// I5 (§8 targets, §10): on two nodes the tree's inter-node edge carries S/2 where the ring carries (n-1)/n of 2S, so
// when the NICs are the bottleneck tree (and NVLSTree) exceed ring's busbw, by at most 2x.
TEST(CrossoverTest, I5TreeOnTwoNodesBeatsANicBoundRingByAtMostTwice) {
  const Box b(cluster(GpuKind::H100Sxm, 2, 8, /*nics=*/2, /*nicGbps=*/50));
  const CollType ar = CollType::AllReduce;
  const double ring = b.busBw(ar, 8 * G, kAlgoRing);
  const double tree = b.busBw(ar, 8 * G, kAlgoTree);
  const double nvlsTree = b.busBw(ar, 8 * G, kAlgoNvlsTree);
  std::printf("I5 2x8 H100, 2 NICs/node, 8 GB busbw: ring %.1f tree %.1f nvlstree %.1f\n", ring, tree, nvlsTree);
  EXPECT_LE(ring, 2 * 50 * 1.0);  // the ring is held to the NIC limit (2 NICs x 50 GB/s line rate)
  EXPECT_GT(tree, ring);
  EXPECT_LE(tree, 2 * ring);
  EXPECT_GT(nvlsTree, ring);
  EXPECT_LE(nvlsTree, 2 * ring);
  // With a full DGX fabric (8 NICs) the NICs no longer bind and the ring is ahead again (3b: ring ~8 x 46-48).
  const Box full(cluster(GpuKind::H100Sxm, 2, 8));
  EXPECT_GT(full.busBw(ar, 8 * G, kAlgoRing), full.busBw(ar, 8 * G, kAlgoTree));
}

// §3 (device.h): an LL line carries 8 B of data per 16 B, so LL's bus bandwidth stays under half of Simple's on every
// NVLink box, for all-reduce and for the all-gather of the default scenario's tp comm. On one H100 node the measured
// share is lower still (row 1f: 146.7 / 339.8 at 256 MB); the model puts that loss on the NVLink bundle, so the same
// share must hold for the 8-GPU box and for all-gather (±10%, as in the 1f protocol test).
TEST(CrossoverTest, LlBusBandwidthStaysUnderHalfOfSimple) {
  for (int gpus : {4, 8}) {
    const Box b(cluster(GpuKind::H100Sxm, 1, gpus));
    for (CollType coll : {CollType::AllReduce, CollType::AllGather}) {
      const double ll = b.busBw(coll, 8 * G, kAlgoRing, kProtoLL);
      const double simple = b.busBw(coll, 8 * G, kAlgoRing, kProtoSimple);
      char what[64];
      std::snprintf(what, sizeof what, "ring LL/Simple %s 8 GB, %d GPUs",
                    coll == CollType::AllReduce ? "all-reduce" : "all-gather", gpus);
      expectRatio("1f", what, ll / simple, 146.728 / 339.788, 0.10);
    }
  }
  for (const ClusterSpec& c : {cluster(GpuKind::H100Sxm, 1, 8), cluster(GpuKind::H100Sxm, 1, 4),
                               cluster(GpuKind::A100Sxm, 1, 8), cluster(GpuKind::H100Sxm, 2, 8)}) {
    const Box b(c);
    for (CollType coll : {CollType::AllReduce, CollType::AllGather}) {
      const double ll = b.busBw(coll, 8 * G, kAlgoRing, kProtoLL);
      const double simple = b.busBw(coll, 8 * G, kAlgoRing, kProtoSimple);
      EXPECT_LE(ll, 0.5 * simple) << c.nodes << "x" << c.gpusPerNode << " coll " << static_cast<int>(coll);
    }
  }
}

}  // namespace
}  // namespace wirewise::sim
