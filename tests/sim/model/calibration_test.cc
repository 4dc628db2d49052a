// Healthy presets against published nccl-tests numbers (model.md §8). The truth model uses NCCL's own default
// choice (or the forced algorithm the source used) and NCCL's default channel count for it. Each point must be
// within ±15% unless listed as an exception with its reason.
#include <cmath>
#include <cstdio>

#include <gtest/gtest.h>

#include "sim/model/truth.h"
#include "tests/sim/model/test_clusters.h"

namespace wirewise::sim {
namespace {

using testing::cluster;
using testing::world;

enum class Metric { BusBw, TimeUs };
constexpr int kDefault = -1;

struct Point {
  const char* row;  // model.md §8 row
  GpuKind gpu;
  int nodes, gpus;
  size_t bytes;
  int algo, proto;  // kDefault: NCCL's own choice
  Metric metric;
  double published;
  double tolerance;     // relative
  const char* exception;  // why the tolerance is wider, or nullptr
};

constexpr size_t K = 1024, M = K * K, G = K * M;

const Point kPoints[] = {
    {"1a", GpuKind::H100Sxm, 1, 8, 8, kDefault, 0, Metric::TimeUs, 13.67, 0.15, nullptr},
    {"1a", GpuKind::H100Sxm, 1, 8, K, kDefault, 0, Metric::TimeUs, 16.9, 0.20,
     "the published 8 B -> 1 KB step (+3.2 us on one LL channel) has no counterpart in a flow model: 1 KB moves "
     "in ~0.25 us at the per-CTA LL rate that fits the 64 KB and 1 MB points; the model lands ~16% low"},
    {"1a", GpuKind::H100Sxm, 1, 8, 64 * K, kDefault, 0, Metric::BusBw, 5.87, 0.15, nullptr},
    {"1a", GpuKind::H100Sxm, 1, 8, M, kDefault, 0, Metric::BusBw, 67.0, 0.15, nullptr},
    {"1a", GpuKind::H100Sxm, 1, 8, 16 * M, kDefault, 0, Metric::BusBw, 237.2, 0.15, nullptr},
    {"1a", GpuKind::H100Sxm, 1, 8, 256 * M, kDefault, 0, Metric::BusBw, 422.3, 0.15, nullptr},
    {"1a", GpuKind::H100Sxm, 1, 8, G, kDefault, 0, Metric::BusBw, 466.3, 0.15, nullptr},
    {"1a", GpuKind::H100Sxm, 1, 8, 8 * G, kDefault, 0, Metric::BusBw, 480.2, 0.15, nullptr},
    {"1c", GpuKind::H200Sxm, 1, 8, 16 * M, kAlgoNvls, kProtoSimple, Metric::BusBw, 240.41, 0.15, nullptr},
    {"1c", GpuKind::H200Sxm, 1, 8, 256 * M, kAlgoNvls, kProtoSimple, Metric::BusBw, 432.24, 0.15, nullptr},
    {"1c", GpuKind::H200Sxm, 1, 8, G, kAlgoNvls, kProtoSimple, Metric::BusBw, 467.58, 0.15, nullptr},
    {"1c", GpuKind::H200Sxm, 1, 8, 8 * G, kAlgoNvls, kProtoSimple, Metric::BusBw, 479.98, 0.15, nullptr},
    {"1c", GpuKind::H200Sxm, 1, 8, M, kAlgoNvls, kProtoSimple, Metric::BusBw, 52.96, 0.15, nullptr},
    {"1e", GpuKind::H100Sxm, 1, 4, 16 * M, kAlgoRing, kProtoSimple, Metric::BusBw, 246.5, 0.15, nullptr},
    {"1e", GpuKind::H100Sxm, 1, 4, 256 * M, kAlgoRing, kProtoSimple, Metric::BusBw, 340.8, 0.15, nullptr},
    {"1e", GpuKind::H100Sxm, 1, 4, G, kAlgoRing, kProtoSimple, Metric::BusBw, 357.0, 0.15, nullptr},
    {"1e", GpuKind::H100Sxm, 1, 4, 8 * G, kAlgoRing, kProtoSimple, Metric::BusBw, 366.4, 0.15, nullptr},
    {"1e", GpuKind::H100Sxm, 1, 4, M, kAlgoRing, kProtoLL, Metric::BusBw, 58.2, 0.35,
     "1e is a shared cloud box run single-process -g 4 with a ~23 us eager floor (model.md §8, §11); 1a is the "
     "latency target (the model gives ~10 us at 8 B on 4 GPUs vs 22.7 published), so the 1 MB point carries a "
     "~13 us floor the model does not have and is checked only loosely (+27%)"},
    {"1f", GpuKind::H100Sxm, 1, 4, 256 * M, kAlgoTree, kProtoSimple, Metric::BusBw, 236, 0.15, nullptr},
    {"1f", GpuKind::H100Sxm, 1, 4, 8 * G, kAlgoTree, kProtoSimple, Metric::BusBw, 259, 0.15, nullptr},
    {"1f", GpuKind::H100Sxm, 1, 4, 256 * M, kAlgoNvls, kProtoSimple, Metric::BusBw, 359, 0.15, nullptr},
    {"1f", GpuKind::H100Sxm, 1, 4, 8 * G, kAlgoNvls, kProtoSimple, Metric::BusBw, 376, 0.15, nullptr},
    {"1f", GpuKind::H100Sxm, 1, 4, 256 * M, kAlgoRing, kProtoLL128, Metric::BusBw, 313, 0.15, nullptr},
    {"1f", GpuKind::H100Sxm, 1, 4, 256 * M, kAlgoRing, kProtoLL, Metric::BusBw, 147, 0.15, nullptr},
    {"2a", GpuKind::A100Sxm, 1, 8, 64 * K, kDefault, 0, Metric::BusBw, 2.70, 0.15, nullptr},
    {"2a", GpuKind::A100Sxm, 1, 8, M, kDefault, 0, Metric::BusBw, 36.22, 0.15, nullptr},
    {"2a", GpuKind::A100Sxm, 1, 8, 16 * M, kDefault, 0, Metric::BusBw, 109.22, 0.15, nullptr},
    {"2a", GpuKind::A100Sxm, 1, 8, 256 * M, kDefault, 0, Metric::BusBw, 213.87, 0.15, nullptr},
    {"2a", GpuKind::A100Sxm, 1, 8, G, kDefault, 0, Metric::BusBw, 228.10, 0.15, nullptr},
    {"2a", GpuKind::A100Sxm, 1, 8, 8 * G, kDefault, 0, Metric::BusBw, 231.58, 0.15, nullptr},
    {"3b", GpuKind::H100Sxm, 2, 8, 8 * G, kAlgoRing, kProtoSimple, Metric::BusBw, 376, 0.15, nullptr},
    {"3d", GpuKind::H100Sxm, 16, 8, 8, kDefault, 0, Metric::TimeUs, 67, 0.15, nullptr},
    {"4a", GpuKind::Pcie, 1, 8, G, kDefault, 0, Metric::BusBw, 28, 0.15, nullptr},
    {"4a", GpuKind::Pcie, 1, 8, 8 * G, kDefault, 0, Metric::BusBw, 28, 0.15, nullptr},
    {"4b", GpuKind::Pcie, 1, 8, 8, kDefault, 0, Metric::TimeUs, 41, 0.15, nullptr},
};

TEST(CalibrationTest, HealthyPresetsMatchPublishedPoints) {
  std::printf("%-4s %-9s %5s %11s %-12s %9s %9s %7s\n", "row", "gpu", "shape", "bytes", "algo/proto", "model",
              "published", "dev");
  for (const Point& p : kPoints) {
    ClusterSpec c = cluster(p.gpu, p.nodes, p.gpus);
    CommLayout l = world(c);
    NcclModel nccl(c, l);
    TruthQuery q;
    q.coll = CollType::AllReduce;
    q.nBytes = p.bytes;
    if (p.algo == kDefault) {
      NcclChoice choice = nccl.defaultChoice(q.coll, p.bytes);
      q.algo = choice.algo;
      q.proto = choice.proto;
      q.nChannels = choice.nChannels;
    } else {
      q.algo = p.algo;
      q.proto = p.proto;
      q.nChannels = nccl.defaultChannels(p.algo, p.proto, p.bytes);
    }
    double t = truthTimeUs(c, l, healthyLinkState(c), q);
    ASSERT_GT(t, 0) << p.row;
    double value = p.metric == Metric::TimeUs ? t : busBwGBps(q.coll, p.bytes, l.nRanks, t);
    double dev = value / p.published - 1;
    std::printf("%-4s %-9s %2dx%-2d %11zu %2d/%d nc%-5d %9.2f %9.2f %+6.1f%%%s\n", p.row,
                std::string(gpuKindName(p.gpu)).c_str(), p.nodes, p.gpus, p.bytes, q.algo, q.proto, q.nChannels, value,
                p.published, 100 * dev, p.exception ? " (exception)" : "");
    EXPECT_LE(std::fabs(dev), p.tolerance) << "row " << p.row << " bytes " << p.bytes << " model " << value
                                           << " published " << p.published;
    if (p.exception == nullptr) {
      EXPECT_LE(p.tolerance, 0.15) << "wider tolerances need a documented exception";
    }
  }
}

}  // namespace
}  // namespace wirewise::sim
