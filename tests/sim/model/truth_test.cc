#include "sim/model/truth.h"

#include <gtest/gtest.h>

#include "tests/sim/model/test_clusters.h"

namespace wirewise::sim {
namespace {

using testing::cluster;
using testing::world;

constexpr size_t kMiB = size_t{1} << 20;

struct Combo {
  CollType coll;
  int algo, proto;
};

// Every supported (coll, algo, proto) on a cluster.
std::vector<Combo> combos(const ClusterSpec& c, const CommLayout& l) {
  std::vector<Combo> out;
  for (int coll = 0; coll < kNumCollTypes; ++coll) {
    for (int a = 0; a < kNumAlgos; ++a) {
      for (int p = 0; p < kNumProtos; ++p) {
        if (truthSupports(c, l, static_cast<CollType>(coll), a, p)) out.push_back({static_cast<CollType>(coll), a, p});
      }
    }
  }
  return out;
}

double timeOf(const ClusterSpec& c, const CommLayout& l, const LinkState& s, Combo k, size_t bytes, int nCh) {
  TruthQuery q;
  q.coll = k.coll;
  q.algo = k.algo;
  q.proto = k.proto;
  q.nBytes = bytes;
  q.nChannels = nCh;
  return truthTimeUs(c, l, s, q);
}

// Every way of hurting one link, applied to a healthy state.
std::vector<LinkState> hurtStates(const ClusterSpec& c) {
  std::vector<LinkState> out;
  const LinkState h = healthyLinkState(c);
  for (int node = 0; node < c.nodes; ++node) {
    for (int i = 0; i < c.nicsPerNode; ++i) {
      LinkState s = h;
      s.nodes[node].nicMult[i] = 0.25;
      out.push_back(s);
      s = h;
      s.nodes[node].nicFlows[i] = 3;
      out.push_back(s);
      s = h;
      s.nodes[node].nicAddUs[i] = 10;
      out.push_back(s);
    }
    for (int g = 0; g < c.gpusPerNode; ++g) {
      LinkState s = h;
      s.nodes[node].nvlinkMult[g] = 0.5;
      out.push_back(s);
      s = h;
      s.nodes[node].nvlinkFlows[g] = 2;
      out.push_back(s);
      s = h;
      s.nodes[node].pcieMult[g] = 0.5;
      out.push_back(s);
    }
  }
  return out;
}

TEST(TruthTest, HurtingAnyLinkNeverMakesAnythingFaster) {
  for (const ClusterSpec& c : {cluster(GpuKind::H100Sxm, 1, 8), cluster(GpuKind::H100Sxm, 2, 8),
                               cluster(GpuKind::A100Sxm, 4, 8, 4, 25), cluster(GpuKind::Pcie, 1, 4)}) {
    CommLayout l = world(c);
    LinkState healthy = healthyLinkState(c);
    auto hurt = hurtStates(c);
    for (Combo k : combos(c, l)) {
      for (size_t bytes : {size_t{4096}, kMiB, 64 * kMiB}) {
        for (int nCh : {1, 4, 16, 24}) {
          double base = timeOf(c, l, healthy, k, bytes, nCh);
          ASSERT_GT(base, 0);
          for (const LinkState& s : hurt) {
            EXPECT_GE(timeOf(c, l, s, k, bytes, nCh), base * (1 - 1e-12));
          }
        }
      }
    }
  }
}

TEST(TruthTest, RingTimeTracksTheSlowestChannel) {
  auto c = cluster(GpuKind::H100Sxm, 2, 8);
  CommLayout l = world(c);
  LinkState s = healthyLinkState(c);
  s.nodes[1].nicMult[3] = 0.25;  // rail 3: channels 3 and 11 of 16
  TruthQuery q;
  q.algo = kAlgoRing;
  q.proto = kProtoSimple;
  q.nChannels = 16;
  q.nBytes = 256 * kMiB;
  auto b = truthBreakdown(c, l, s, q);
  EXPECT_TRUE(b.slowestChannel == 3 || b.slowestChannel == 11) << b.slowestChannel;
  EXPECT_LT(b.channelGBps[3], 0.5 * b.channelGBps[0]);
  EXPECT_DOUBLE_EQ(b.bandwidthUs, static_cast<double>(q.nBytes) / 16 / (b.channelGBps[3] * 1e3));
  auto healthy = truthBreakdown(c, l, healthyLinkState(c), q);
  // model.md §10: one NIC at 1/4 makes a large ring all-reduce several times slower.
  EXPECT_GT(b.totalUs, 2.5 * healthy.totalUs);
  // With 3 channels the ring uses rails 0-2 only: the rail-3 fault does not touch it.
  q.nChannels = 3;
  EXPECT_DOUBLE_EQ(truthTimeUs(c, l, s, q), truthTimeUs(c, l, healthyLinkState(c), q));
}

TEST(TruthTest, MoreCompetingFlowsMeanASmallerShare) {
  auto c = cluster(GpuKind::H100Sxm, 2, 8);
  CommLayout l = world(c);
  TruthQuery q;
  q.nChannels = 16;
  q.nBytes = 256 * kMiB;
  double prevRate = 1e30, prevTime = 0;
  for (int flows : {0, 1, 2, 4, 8, 16}) {
    LinkState s = healthyLinkState(c);
    for (int i = 0; i < 8; ++i) s.nodes[0].nicFlows[i] = flows;
    auto b = truthBreakdown(c, l, s, q);
    EXPECT_LT(b.channelGBps[0], prevRate) << flows;
    EXPECT_GT(b.totalUs, prevTime) << flows;
    prevRate = b.channelGBps[0];
    prevTime = b.totalUs;
  }
  // §10: 2 NCCL flows vs 1 greedy flow on every NIC -> 2/3 of the NIC for the ring.
  LinkState one = healthyLinkState(c);
  for (int i = 0; i < 8; ++i) one.nodes[0].nicFlows[i] = 1;
  auto healthy = truthBreakdown(c, l, healthyLinkState(c), q);
  auto shared = truthBreakdown(c, l, one, q);
  double nicShare = 50 * 0.95 / 3;  // per channel with one competitor
  EXPECT_NEAR(shared.channelGBps[0], nicShare / (2.0 * 15 / 16), 1e-6);
  EXPECT_GT(healthy.channelGBps[0], shared.channelGBps[0]);
}

TEST(TruthTest, LatencyFaultAddsTimePerHop) {
  auto c = cluster(GpuKind::H100Sxm, 2, 8);
  CommLayout l = world(c);
  TruthQuery q;
  q.algo = kAlgoRing;
  q.proto = kProtoLL;
  q.nChannels = 8;
  q.nBytes = 4096;
  LinkState s = healthyLinkState(c);
  double base = truthTimeUs(c, l, s, q);
  for (auto& n : s.nodes) std::fill(n.nicAddUs.begin(), n.nicAddUs.end(), 20.0);
  // A ring all-reduce over 2 nodes crosses the network 2(N-1) = 2 times.
  EXPECT_NEAR(truthTimeUs(c, l, s, q) - base, 2 * 20.0, 1e-9);
  q.algo = kAlgoTree;
  double treeHurt = truthTimeUs(c, l, s, q);
  EXPECT_NEAR(treeHurt - truthTimeUs(c, l, healthyLinkState(c), q), 2 * 20.0, 1e-9);  // up and down, log2(2)=1
}

TEST(TruthTest, NvlsSlowsWithAnyBundleWhileChannelsShareEverything) {
  auto c = cluster(GpuKind::H100Sxm, 1, 8);
  CommLayout l = world(c);
  TruthQuery q;
  q.algo = kAlgoNvls;
  q.nChannels = 16;
  q.nBytes = 1024 * kMiB;
  double healthy = truthBreakdown(c, l, healthyLinkState(c), q).bandwidthUs;
  LinkState s = healthyLinkState(c);
  s.nodes[0].nvlinkMult[5] = 17.0 / 18.0;  // one lane of 18 down (§10: about +6%)
  double hurt = truthBreakdown(c, l, s, q).bandwidthUs;
  EXPECT_NEAR(hurt / healthy, 18.0 / 17.0, 1e-9);
}

TEST(TruthTest, FewerChannelsAreCtaBound) {
  auto c = cluster(GpuKind::H100Sxm, 1, 8);
  CommLayout l = world(c);
  LinkState s = healthyLinkState(c);
  TruthQuery q;
  q.nBytes = 1024 * kMiB;
  q.nChannels = 4;
  double four = truthTimeUs(c, l, s, q);
  q.nChannels = 24;
  double full = truthTimeUs(c, l, s, q);
  EXPECT_GT(four, 2 * full);
}

TEST(TruthTest, UnsupportedAndDeterministic) {
  auto c = cluster(GpuKind::A100Sxm, 1, 8);
  CommLayout l = world(c);
  LinkState s = healthyLinkState(c);
  TruthQuery q;
  q.algo = kAlgoNvls;
  EXPECT_LT(truthTimeUs(c, l, s, q), 0);
  q.algo = kAlgoCollNetDirect;
  EXPECT_LT(truthTimeUs(c, l, s, q), 0);
  q.algo = kAlgoTree;
  q.coll = CollType::AllGather;
  EXPECT_LT(truthTimeUs(c, l, s, q), 0);
  q.algo = kAlgoRing;
  q.nBytes = 12345678;
  q.nChannels = 7;
  double a = truthTimeUs(c, l, s, q);
  EXPECT_GT(a, 0);
  for (int i = 0; i < 5; ++i) EXPECT_EQ(truthTimeUs(c, l, s, q), a);
}

TEST(LinkStateTest, ScheduleAppliesFaultsIncludingFlap) {
  std::string error;
  auto sc = parseScenario(R"({
    "name": "f", "cluster": { "nodes": 2, "gpus_per_node": 8, "gpu": "h100-sxm" },
    "comms": [ { "name": "w", "ranks": "all" } ],
    "workload": { "steps": 100, "step": [ { "comm": "w", "coll": "allreduce", "bytes": 1024 } ] },
    "faults": [
      { "kind": "degrade", "link": "nic", "node": 1, "index": 3, "factor": 0.25, "from_step": 10, "to_step": 20 },
      { "kind": "degrade", "link": "nic", "node": 1, "index": 3, "factor": 0.5, "from_step": 15, "to_step": 30 },
      { "kind": "contention", "link": "nic", "node": 0, "flows": 8, "from_step": 40, "to_step": 50 },
      { "kind": "latency", "link": "net", "add_us": 20, "from_step": 60 },
      { "kind": "flap", "link": "nvlink", "node": 0, "index": 5, "factor": 0.5, "period_steps": 4, "from_step": 2 }
    ] })",
                          &error);
  ASSERT_TRUE(sc) << error;
  EXPECT_EQ(linkStateAt(*sc, 0), healthyLinkState(sc->cluster));
  EXPECT_EQ(linkStateAt(*sc, 9).nodes[1].nicMult[3], 1.0);
  EXPECT_EQ(linkStateAt(*sc, 10).nodes[1].nicMult[3], 0.25);
  EXPECT_EQ(linkStateAt(*sc, 10).nodes[0].nicMult[3], 1.0);
  EXPECT_EQ(linkStateAt(*sc, 16).nodes[1].nicMult[3], 0.125);  // faults compose
  EXPECT_EQ(linkStateAt(*sc, 20).nodes[1].nicMult[3], 0.5);    // to_step is exclusive
  EXPECT_EQ(linkStateAt(*sc, 30).nodes[1].nicMult[3], 1.0);
  EXPECT_EQ(linkStateAt(*sc, 45).nodes[0].nicFlows[7], 8);
  EXPECT_EQ(linkStateAt(*sc, 45).nodes[1].nicFlows[7], 0);
  EXPECT_EQ(linkStateAt(*sc, 99).nodes[1].nicAddUs[0], 20.0);
  // Flap from step 2, period 4: degraded on [2,6), healthy on [6,10), degraded on [10,14) ...
  for (int step : {0, 1, 6, 9, 14, 17}) EXPECT_EQ(linkStateAt(*sc, step).nodes[0].nvlinkMult[5], 1.0) << step;
  for (int step : {2, 5, 10, 13, 18}) EXPECT_EQ(linkStateAt(*sc, step).nodes[0].nvlinkMult[5], 0.5) << step;
}

}  // namespace
}  // namespace wirewise::sim
