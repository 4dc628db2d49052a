#include "telemetry/collectors/netdev_collector.h"

#include <gtest/gtest.h>

#include "tests/telemetry/collectors/fake_sysfs.h"

namespace wirewise::collectors {
namespace {

constexpr int64_t kSec = 1'000'000'000;

TEST(NetdevCollector, RatesSpeedStateAndErrorsFromFakeTree) {
  testing::FakeSysfs fs;
  fs.netdev("eth0", "25000");
  fs.netdev("lo");
  fs.write("class/net/bonding_masters", "bond0\n");  // a plain file in class/net
  NetdevCollector c(fs.root(), {}, 0.0);
  c.discover();
  ASSERT_EQ(c.interfaceCount(), 1u);  // lo and the plain file are skipped
  c.sample(1 * kSec);
  fs.write("class/net/eth0/statistics/tx_bytes", 3'000'000'000ull);
  fs.write("class/net/eth0/statistics/rx_bytes", 1'000'000'000ull);
  fs.write("class/net/eth0/statistics/rx_errors", 2ull);
  fs.write("class/net/eth0/statistics/tx_dropped", 10ull);
  c.sample(3 * kSec);
  const LinkHealth& l = c.links()[0];
  EXPECT_EQ(l.id, "eth0");
  EXPECT_TRUE(l.up);
  EXPECT_DOUBLE_EQ(l.nominalBps, 25000e6 / 8);
  EXPECT_TRUE(l.rateValid);
  EXPECT_DOUBLE_EQ(l.txBps, 1.5e9);
  EXPECT_DOUBLE_EQ(l.rxBps, 0.5e9);
  EXPECT_DOUBLE_EQ(l.errorsPerSec, 1.0);
  EXPECT_DOUBLE_EQ(l.congestionPerSec, 5.0);
  EXPECT_STREQ(l.congestionUnit, "drops/s");
  EXPECT_EQ(l.state, LinkState::kDegraded);
}

TEST(NetdevCollector, UnknownSpeedDownStateGarbageAndVanishing) {
  testing::FakeSysfs fs;
  fs.netdev("veth0", "-1");  // virtual devices report -1 or fail with EINVAL
  fs.netdev("eth1");
  NetdevCollector c(fs.root(), {"veth0", "eth1", "absent0"}, 0.0);
  c.discover();
  ASSERT_EQ(c.interfaceCount(), 2u);
  c.sample(1 * kSec);
  fs.write("class/net/eth1/operstate", "down\n");
  fs.write("class/net/veth0/statistics/tx_bytes", "oops\n");
  c.sample(2 * kSec);
  const LinkHealth& veth = c.links()[1];
  ASSERT_EQ(veth.id, "veth0");
  EXPECT_EQ(veth.nominalBps, 0.0);
  EXPECT_FALSE(veth.rateValid);
  const LinkHealth& eth1 = c.links()[0];
  EXPECT_EQ(eth1.state, LinkState::kDown);
  fs.remove("class/net/veth0");
  c.sample(3 * kSec);
  EXPECT_FALSE(c.links()[1].present);
  EXPECT_EQ(c.links()[1].state, LinkState::kDown);
}

}  // namespace
}  // namespace wirewise::collectors
