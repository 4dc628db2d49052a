// Which links the coordinator hears of, and how: the pure link-health -> LinkNote conversion.
#include "runtime/link_notes.h"

#include <gtest/gtest.h>

#include <string>

namespace wirewise {
namespace {

using collectors::LinkHealth;
using collectors::LinkKind;
using collectors::LinkState;

LinkHealth link(const std::string& id, LinkState state) {
  LinkHealth l;
  l.kind = LinkKind::kInfiniBand;
  l.id = id;
  l.state = state;
  return l;
}

TEST(LinkNotes, AnUpLinkIsNoNews) {
  EXPECT_FALSE(linkNoteFor("h", link("mlx5_0:1", LinkState::kUp), true));
}

TEST(LinkNotes, ADownLinkIsNewsOnlyIfItWasEverUp) {
  EXPECT_FALSE(linkNoteFor("h", link("mlx5_3:1", LinkState::kDown), false));  // an unused port
  auto n = linkNoteFor("h", link("mlx5_3:1", LinkState::kDown), true);
  ASSERT_TRUE(n);
  EXPECT_EQ(n->state, 2);
  EXPECT_EQ(n->link, "h/mlx5_3:1");
}

TEST(LinkNotes, ADownTrainedLinkCarriesItsCapacityAndErrors) {
  LinkHealth l = link("mlx5_1:1", LinkState::kDegraded);
  l.nominalBps = 100e9;
  l.bestNominalBps = 400e9;
  l.errorsPerSec = 3;
  auto n = linkNoteFor("node7", l, false);
  ASSERT_TRUE(n);
  EXPECT_EQ(n->state, 1);
  EXPECT_FLOAT_EQ(n->capacityRatio, 0.25f);
  EXPECT_FLOAT_EQ(n->errorsPerSec, 3.0f);
  EXPECT_EQ(n->rttUs, 0.0f);  // only rails measure latency
  l.bestNominalBps = 0;  // speed unknown: no capacity verdict
  EXPECT_FLOAT_EQ(linkNoteFor("node7", l, false)->capacityRatio, 1.0f);
}

TEST(LinkNotes, ARailCarriesItsRateRatioRetransmitsAndLatencies) {
  LinkHealth l = link("rail:eth1", LinkState::kDegraded);
  l.kind = LinkKind::kRail;
  l.rateRatio = 0.2;
  l.congested = true;
  l.congestionPerSec = 40;
  l.errorsPerSec = 9;  // not a rail's measure
  l.rttUs = 2000;
  l.baselineRttUs = 40;
  auto n = linkNoteFor("node7", l, true);
  ASSERT_TRUE(n);
  EXPECT_FLOAT_EQ(n->capacityRatio, 0.2f);
  EXPECT_FLOAT_EQ(n->errorsPerSec, 40.0f);
  EXPECT_FLOAT_EQ(n->rttUs, 2000.0f);
  EXPECT_FLOAT_EQ(n->baselineRttUs, 40.0f);
  l.congested = false;
  l.baselineRttUs = 0;  // no baseline yet: no latencies
  n = linkNoteFor("node7", l, true);
  EXPECT_FLOAT_EQ(n->errorsPerSec, 0.0f);
  EXPECT_FLOAT_EQ(n->rttUs, 0.0f);
}

TEST(LinkNotes, TheNameIsCutAndPrintable) {
  auto n = linkNoteFor("node\x01", link(std::string(100, 'x'), LinkState::kDegraded), false);
  ASSERT_TRUE(n);
  EXPECT_EQ(n->link.size(), adapt::kMaxLinkName);
  EXPECT_EQ(n->link.substr(0, 6), "node?/");
}

}  // namespace
}  // namespace wirewise
