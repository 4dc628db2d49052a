#include <gtest/gtest.h>

#include <string>

#include "telemetry/wiring/prior.h"
#include "tests/telemetry/wiring/wiring_test_util.h"

namespace wirewise::wiring {
namespace {

using collectors::LinkHealth;
using collectors::LinkKind;
using collectors::LinkState;
using testing::dataPath;
using testing::loadMap;

const LinkHealth* byId(const std::vector<LinkHealth>& links, const std::string& id) {
  for (const LinkHealth& l : links) {
    if (l.id == id) return &l;
  }
  return nullptr;
}

TEST(WiringPrior, DegradedMapBecomesLinkHealthRecords) {
  WiringMap m = loadMap("h100x4_degraded.json");
  const auto links = priorLinks(m, analyze(m), 42);
  EXPECT_EQ(links.size(), 1u + 12u) << "one record per missing GPU and per measured ordered pair";

  const LinkHealth* weak = byId(links, "gpu0->gpu2:nvlink");
  ASSERT_NE(weak, nullptr);
  EXPECT_EQ(weak->kind, LinkKind::kNvlink);
  EXPECT_EQ(weak->state, LinkState::kDegraded);
  EXPECT_NEAR(weak->nominalBps / weak->bestNominalBps, 180.1 / 450.0, 1e-9) << "the flag's ratio, as capacity";
  EXPECT_FALSE(weak->rateValid) << "the prior claims no live rates";
  EXPECT_EQ(weak->lastChangeNs, 42);

  const LinkHealth* back = byId(links, "gpu2->gpu0:nvlink");
  ASSERT_NE(back, nullptr);
  EXPECT_EQ(back->state, LinkState::kUp);
  EXPECT_DOUBLE_EQ(back->nominalBps, 450e9);

  const LinkHealth* noPeer = byId(links, "gpu1->gpu3:nvlink");
  ASSERT_NE(noPeer, nullptr);
  EXPECT_EQ(noPeer->state, LinkState::kDown) << "NVLink without peer access is unusable";

  const LinkHealth* gone = byId(links, "gpu4:wiring");
  ASSERT_NE(gone, nullptr);
  EXPECT_FALSE(gone->present);
  EXPECT_EQ(gone->state, LinkState::kDown);

  collectors::LinkHealthSnapshot snap;
  snap.links = links;
  const auto sum = collectors::summarize(snap);
  EXPECT_EQ(sum.down, 3) << "gpu4 and both directions of 1<->3";
  EXPECT_EQ(sum.degraded, 1);
  EXPECT_NEAR(sum.minCapacityRatio, 180.1 / 450.0, 1e-6);
}

TEST(WiringPrior, PciePairsWithoutPeerAccessStayUpAtTheirStagedSpeed) {
  WiringMap m = loadMap("pcie_a100x4_trained_down.json");
  for (auto& p : m.pairs) {
    if ((p.src == 0 && p.dst == 2) || (p.src == 2 && p.dst == 0)) {
      p.peerAccess = false;
      p.ceGbps = 11.0;
      p.smWriteGbps = p.smReadGbps = -1;
    }
  }
  const auto links = priorLinks(m, analyze(m), 1);
  const LinkHealth* staged = byId(links, "gpu0->gpu2:pcie");
  ASSERT_NE(staged, nullptr);
  EXPECT_EQ(staged->kind, LinkKind::kPcie);
  EXPECT_EQ(staged->state, LinkState::kUp);
  EXPECT_DOUBLE_EQ(staged->nominalBps, 11.0e9);
  const LinkHealth* weak = byId(links, "gpu2->gpu3:pcie");
  ASSERT_NE(weak, nullptr);
  EXPECT_EQ(weak->state, LinkState::kDegraded);
}

TEST(WiringPrior, UnknownLinkTypeIsNamedP2p) {
  WiringMap m = loadMap("pcie_a100x4_trained_down.json");
  for (auto& p : m.pairs) p.link = LinkType::kUnknown;
  const auto links = priorLinks(m, analyze(m), 1);
  const LinkHealth* l = byId(links, "gpu0->gpu1:p2p");
  ASSERT_NE(l, nullptr);
  EXPECT_EQ(l->kind, LinkKind::kPcie);
  EXPECT_DOUBLE_EQ(l->nominalBps, 13.1e9) << "no nominal: the measured figure is the capacity";
}

TEST(WiringPrior, LoadFromFileOrSayWhy) {
  WiringPrior prior;
  std::string err;
  ASSERT_TRUE(loadWiringPrior(dataPath("h100x4_degraded.json"), 7, &prior, &err)) << err;
  EXPECT_EQ(prior.source, dataPath("h100x4_degraded.json"));
  EXPECT_EQ(prior.links.size(), 13u);
  ASSERT_EQ(prior.flags.size(), 5u);
  EXPECT_FALSE(loadWiringPrior("/nonexistent/wiring.json", 7, &prior, &err));
  EXPECT_NE(err.find("cannot read /nonexistent/wiring.json"), std::string::npos) << err;
}

}  // namespace
}  // namespace wirewise::wiring
