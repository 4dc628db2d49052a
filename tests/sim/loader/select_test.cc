// NCCL's choice after getCollInfo returns: the minimum qualifying cost, and the channel count it schedules.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include "sim/loader/nccl_loader.h"

namespace wirewise::loader {
namespace {

struct DisabledTable {
  float t[7][3];
  DisabledTable() {
    for (auto& row : t)
      for (float& v : row) v = -1.0f;
  }
};

const CommChannels kComm{/*nChannels=*/16, /*nvlsChannels=*/24, /*nNodes=*/1};

TEST(SelectAlgo, PicksTheMinimumEnabledEntry) {
  DisabledTable d;
  d.t[NCCL_ALGO_RING][NCCL_PROTO_SIMPLE] = 30.0f;
  d.t[NCCL_ALGO_TREE][NCCL_PROTO_LL] = 12.0f;
  d.t[NCCL_ALGO_PAT][NCCL_PROTO_SIMPLE] = 11.5f;
  const Selection s = selectAlgo(d.t, 0, 8, kComm);
  ASSERT_TRUE(s.ok);
  EXPECT_EQ(s.algo, NCCL_ALGO_PAT);
  EXPECT_EQ(s.proto, NCCL_PROTO_SIMPLE);
  EXPECT_EQ(s.cost, 11.5f);
}

TEST(SelectAlgo, AllDisabledFails) {
  DisabledTable d;
  const Selection s = selectAlgo(d.t, 0, 8, kComm);
  EXPECT_FALSE(s.ok);
  EXPECT_EQ(s.algo, NCCL_ALGO_UNDEF);
  EXPECT_EQ(s.proto, NCCL_PROTO_UNDEF);
}

TEST(SelectAlgo, NegativeHugeAndNanEntriesNeverWin) {
  DisabledTable d;
  d.t[NCCL_ALGO_TREE][NCCL_PROTO_LL] = -2.0f;
  d.t[NCCL_ALGO_TREE][NCCL_PROTO_LL128] = -0.5f;
  d.t[NCCL_ALGO_RING][NCCL_PROTO_LL] = 3.6e9f;
  d.t[NCCL_ALGO_RING][NCCL_PROTO_LL128] = std::numeric_limits<float>::infinity();
  d.t[NCCL_ALGO_NVLS][NCCL_PROTO_SIMPLE] = std::nanf("");
  EXPECT_FALSE(selectAlgo(d.t, 0, 8, kComm).ok);
  // Just below the cut-off qualifies, and zero (the v2 shim's marker) beats everything positive.
  d.t[NCCL_ALGO_RING][NCCL_PROTO_SIMPLE] = 3.5999997e9f;
  Selection s = selectAlgo(d.t, 0, 8, kComm);
  ASSERT_TRUE(s.ok);
  EXPECT_EQ(s.algo, NCCL_ALGO_RING);
  EXPECT_EQ(s.proto, NCCL_PROTO_SIMPLE);
  d.t[NCCL_ALGO_COLLNET_CHAIN][NCCL_PROTO_LL] = 0.0f;
  s = selectAlgo(d.t, 0, 8, kComm);
  EXPECT_EQ(s.algo, NCCL_ALGO_COLLNET_CHAIN);
  EXPECT_EQ(s.cost, 0.0f);
}

TEST(SelectAlgo, TiesKeepTheFirstInAlgoThenProtoOrder) {
  DisabledTable d;
  d.t[NCCL_ALGO_NVLS][NCCL_PROTO_LL] = 5.0f;
  d.t[NCCL_ALGO_RING][NCCL_PROTO_SIMPLE] = 5.0f;
  d.t[NCCL_ALGO_RING][NCCL_PROTO_LL128] = 5.0f;
  const Selection s = selectAlgo(d.t, 0, 8, kComm);
  EXPECT_EQ(s.algo, NCCL_ALGO_RING);
  EXPECT_EQ(s.proto, NCCL_PROTO_LL128);
}

Selection ringWith(int pluginChannels, int ncclDefault, CommChannels comm = kComm) {
  DisabledTable d;
  d.t[NCCL_ALGO_RING][NCCL_PROTO_SIMPLE] = 1.0f;
  return selectAlgo(d.t, pluginChannels, ncclDefault, comm);
}

TEST(SelectAlgo, ZeroChannelsKeepsNcclsChoice) {
  const Selection s = ringWith(0, 6);
  EXPECT_EQ(s.storedChannels, 6);
  EXPECT_EQ(s.nChannels, 6);
}

TEST(SelectAlgo, PluginChannelsOverrideAndAreClampedToTheComm) {
  EXPECT_EQ(ringWith(3, 6).nChannels, 3);
  const Selection s = ringWith(40, 6);
  EXPECT_EQ(s.storedChannels, 40);
  EXPECT_EQ(s.nChannels, 16);
  EXPECT_FALSE(s.isCollnet);
  EXPECT_FALSE(s.isNvls);
}

TEST(SelectAlgo, ChannelCountWrapsInTheSigned8BitField) {
  EXPECT_EQ(ringWith(127, 6).storedChannels, 127);
  EXPECT_EQ(ringWith(128, 6).storedChannels, -128);
  const Selection s = ringWith(200, 6);
  EXPECT_EQ(s.storedChannels, -56);
  EXPECT_EQ(s.nChannels, -56) << "min() does not rescue a wrapped value";
  EXPECT_EQ(ringWith(256 + 5, 6).storedChannels, 5);
  EXPECT_EQ(ringWith(-1, 6).storedChannels, -1) << "negative is not 0: NCCL's default is not used";
}

TEST(SelectAlgo, NvlsUsesNvlsChannelsOnOneNodeAndIsUnclampedAcrossNodes) {
  DisabledTable d;
  d.t[NCCL_ALGO_NVLS][NCCL_PROTO_SIMPLE] = 1.0f;
  Selection s = selectAlgo(d.t, 60, 8, CommChannels{16, 24, 1});
  EXPECT_TRUE(s.isNvls);
  EXPECT_FALSE(s.isCollnet);
  EXPECT_EQ(s.nChannels, 24);
  s = selectAlgo(d.t, 60, 8, CommChannels{16, 24, 2});
  EXPECT_TRUE(s.isCollnet);
  EXPECT_EQ(s.nChannels, 60);
  // NVLS_TREE is never CollNet-class.
  DisabledTable t;
  t.t[NCCL_ALGO_NVLS_TREE][NCCL_PROTO_SIMPLE] = 1.0f;
  s = selectAlgo(t.t, 60, 8, CommChannels{16, 24, 2});
  EXPECT_FALSE(s.isCollnet);
  EXPECT_EQ(s.nChannels, 24);
}

TEST(SelectAlgo, CollNetChannelsAreNotClamped) {
  for (int algo : {NCCL_ALGO_COLLNET_DIRECT, NCCL_ALGO_COLLNET_CHAIN}) {
    DisabledTable d;
    d.t[algo][NCCL_PROTO_SIMPLE] = 1.0f;
    const Selection s = selectAlgo(d.t, 50, 8, kComm);
    EXPECT_TRUE(s.isCollnet);
    EXPECT_EQ(s.nChannels, 50) << algo;
  }
}

}  // namespace
}  // namespace wirewise::loader
