#include "telemetry/collectors/ib_collector.h"

#include <gtest/gtest.h>

#include "tests/telemetry/collectors/fake_sysfs.h"

namespace wirewise::collectors {
namespace {

constexpr int64_t kSec = 1'000'000'000;
const std::string kP = "class/infiniband/mlx5_0/ports/1/";

const LinkHealth* find(const IbCollector& c, const std::string& id) {
  for (const LinkHealth& l : c.links()) {
    if (l.id == id) return &l;
  }
  return nullptr;
}

TEST(IbCollector, RatesFromFourByteWordsOverInjectedClock) {
  testing::FakeSysfs fs;
  fs.ibPort("mlx5_0", 1);
  IbCollector c(fs.root(), "", /*tau=*/0.0);
  c.discover();
  ASSERT_EQ(c.portCount(), 1u);
  c.sample(10 * kSec);
  const LinkHealth* l = find(c, "mlx5_0:1");
  ASSERT_NE(l, nullptr);
  EXPECT_EQ(l->kind, LinkKind::kInfiniBand);
  EXPECT_TRUE(l->up);
  EXPECT_DOUBLE_EQ(l->nominalBps, 50e9);
  EXPECT_FALSE(l->rateValid);  // one reading is only a baseline
  fs.write(kP + "counters/port_xmit_data", 2'500'000'000ull);  // 10 GB in 4-byte words
  fs.write(kP + "counters/port_rcv_data", 250'000'000ull);     // 1 GB
  fs.write(kP + "counters/port_xmit_wait", 1000ull);
  c.sample(12 * kSec);  // 2 s later
  EXPECT_TRUE(l->rateValid);
  EXPECT_DOUBLE_EQ(l->txBps, 5e9);
  EXPECT_DOUBLE_EQ(l->rxBps, 0.5e9);
  EXPECT_STREQ(l->congestionUnit, "xmit_wait_ticks/s");
  EXPECT_DOUBLE_EQ(l->congestionPerSec, 500.0);
  EXPECT_FALSE(l->congested);
  EXPECT_EQ(l->state, LinkState::kUp);
  EXPECT_EQ(l->errorsPerSec, 0.0);
}

TEST(IbCollector, ErrorsDegradeAndStateAndRateChangesAreSeen) {
  testing::FakeSysfs fs;
  fs.ibPort("mlx5_0", 1);
  IbCollector c(fs.root(), "", 0.0);
  c.discover();
  c.sample(1 * kSec);
  fs.write(kP + "counters/symbol_error", 3ull);
  fs.write(kP + "counters/link_error_recovery", 1ull);
  c.sample(2 * kSec);
  const LinkHealth* l = find(c, "mlx5_0:1");
  EXPECT_DOUBLE_EQ(l->errorsPerSec, 4.0);
  EXPECT_EQ(l->state, LinkState::kDegraded);
  EXPECT_EQ(l->lastChangeNs, 2 * kSec);
  c.sample(3 * kSec);  // no new errors
  EXPECT_EQ(l->state, LinkState::kUp);
  fs.write(kP + "rate", "200 Gb/sec (2X NDR)\n");  // downtrained to half width
  c.sample(4 * kSec);
  EXPECT_DOUBLE_EQ(l->nominalBps, 25e9);
  EXPECT_EQ(l->state, LinkState::kDegraded);
  fs.write(kP + "state", "1: DOWN\n");
  c.sample(5 * kSec);
  EXPECT_FALSE(l->up);
  EXPECT_EQ(l->state, LinkState::kDown);
  EXPECT_EQ(l->lastChangeNs, 5 * kSec);
}

TEST(IbCollector, LegacyThirtyTwoBitCounterWrapsAndSaturates) {
  testing::FakeSysfs fs;
  fs.ibPort("hfi1_0", 1);
  const std::string p = "class/infiniband/hfi1_0/ports/1/counters/";
  fs.write(p + "port_xmit_data", 0xFFFFF000ull);
  IbCollector c(fs.root(), "", 0.0);
  c.discover();
  c.sample(1 * kSec);
  fs.write(p + "port_xmit_data", 0x00000F00ull);  // wrapped: 0x1000 + 0xF00 words
  c.sample(2 * kSec);
  const LinkHealth& l = c.links()[0];
  EXPECT_DOUBLE_EQ(l.txBps, (0x1000 + 0xF00) * 4.0);
  EXPECT_TRUE(l.rateValid);
  EXPECT_EQ(l.counterAnomalies, 1u);
  fs.write(p + "port_xmit_data", 0xFFFFFFFFull);
  c.sample(3 * kSec);
  fs.write(p + "port_xmit_data", 0xFFFFFFFFull);  // saturated: the rate is unknown, not zero
  c.sample(4 * kSec);
  EXPECT_FALSE(l.rateValid);
}

TEST(IbCollector, VanishingAndGarbageCountersAndPorts) {
  testing::FakeSysfs fs;
  fs.ibPort("mlx5_0", 1);
  fs.ibPort("mlx5_1", 1);
  IbCollector c(fs.root(), "", 0.0);
  c.discover();
  ASSERT_EQ(c.portCount(), 2u);
  c.sample(1 * kSec);
  fs.remove(kP + "counters/port_xmit_data");
  fs.write(kP + "counters/port_rcv_data", "garbage\n");
  c.sample(2 * kSec);
  const LinkHealth* l = find(c, "mlx5_0:1");
  EXPECT_FALSE(l->rateValid);
  fs.write(kP + "counters/port_xmit_data", 1000ull);  // back: a new baseline, not a huge jump
  fs.write(kP + "counters/port_rcv_data", 1000ull);
  c.sample(3 * kSec);
  EXPECT_FALSE(l->rateValid);
  fs.write(kP + "counters/port_xmit_data", 1250ull);
  fs.write(kP + "counters/port_rcv_data", 1500ull);
  c.sample(4 * kSec);
  EXPECT_TRUE(l->rateValid);
  EXPECT_DOUBLE_EQ(l->txBps, 1000.0);
  EXPECT_DOUBLE_EQ(l->rxBps, 2000.0);
  EXPECT_GE(l->counterAnomalies, 2u);
  // Whole device vanishes (driver unbound): kept in the list as not present, down.
  fs.remove("class/infiniband/mlx5_1");
  c.sample(5 * kSec);
  const LinkHealth* gone = find(c, "mlx5_1:1");
  ASSERT_NE(gone, nullptr);
  EXPECT_FALSE(gone->present);
  EXPECT_EQ(gone->state, LinkState::kDown);
  c.discover();  // rescan does not duplicate or resurrect it
  EXPECT_EQ(c.portCount(), 2u);
}

TEST(IbCollector, PartialTreeAndGarbageRateAndState) {
  testing::FakeSysfs fs;
  // A port with only data counters (no error counters, no rate, unreadable state).
  const std::string p = "class/infiniband/rxe0/ports/1/";
  fs.write(p + "counters/port_xmit_data", 0ull);
  fs.write(p + "counters/port_rcv_data", 0ull);
  fs.write(p + "state", "ACTIVE but not really\n");
  fs.write(p + "rate", "lots\n");
  fs.write("class/infiniband/rxe0/ports/notaport/state", "4: ACTIVE\n");
  IbCollector c(fs.root(), "", 0.0);
  c.discover();
  ASSERT_EQ(c.portCount(), 1u);
  c.sample(1 * kSec);
  fs.write(p + "counters/port_xmit_data", 100ull);
  fs.write(p + "counters/port_rcv_data", 100ull);
  c.sample(2 * kSec);
  const LinkHealth& l = c.links()[0];
  EXPECT_FALSE(l.up);  // unparsable state is not assumed active
  EXPECT_EQ(l.nominalBps, 0.0);
  EXPECT_TRUE(l.rateValid);
  EXPECT_DOUBLE_EQ(l.txBps, 400.0);
  EXPECT_EQ(l.errorsPerSec, 0.0);
}

TEST(IbCollector, RoceCongestionAndLossHwCounters) {
  testing::FakeSysfs fs;
  fs.ibPort("mlx5_2", 1, "Ethernet", "100 Gb/sec (4X EDR)");
  const std::string p = "class/infiniband/mlx5_2/ports/1/hw_counters/";
  fs.write(p + "np_cnp_sent", 0ull);
  fs.write(p + "rp_cnp_handled", 0ull);
  fs.write(p + "local_ack_timeout_err", 0ull);
  fs.write(p + "lifespan", 10ull);
  fs.write(p + "rx_write_requests", 0ull);
  IbCollector c(fs.root(), "=mlx5_2:1", 0.0);
  c.discover();
  c.sample(1 * kSec);
  const LinkHealth& l = c.links()[0];
  EXPECT_EQ(l.kind, LinkKind::kRoce);
  EXPECT_STREQ(l.congestionUnit, "cnp/s");
  EXPECT_FALSE(l.congested);
  fs.write(p + "np_cnp_sent", 30ull);
  fs.write(p + "rp_cnp_handled", 10ull);
  fs.write(p + "rx_write_requests", 1'000'000ull);  // not a congestion signal
  c.sample(3 * kSec);
  EXPECT_DOUBLE_EQ(l.congestionPerSec, 20.0);
  EXPECT_TRUE(l.congested);
  EXPECT_EQ(l.state, LinkState::kDegraded);
  fs.write(p + "local_ack_timeout_err", 4ull);
  c.sample(5 * kSec);
  EXPECT_DOUBLE_EQ(l.lossPerSec, 2.0);
  EXPECT_FALSE(l.congested);
}

TEST(IbCollector, NcclIbHcaFilterSemantics) {
  EXPECT_TRUE(IbPortFilter("").matches("mlx5_0", 1));
  IbPortFilter prefix("mlx5_1");  // a prefix, as in NCCL: also selects mlx5_10
  EXPECT_TRUE(prefix.matches("mlx5_1", 1));
  EXPECT_TRUE(prefix.matches("mlx5_10", 2));
  EXPECT_FALSE(prefix.matches("mlx5_2", 1));
  IbPortFilter exact("=mlx5_1:1,mlx5_2");
  EXPECT_TRUE(exact.matches("mlx5_1", 1));
  EXPECT_FALSE(exact.matches("mlx5_1", 2));
  EXPECT_FALSE(exact.matches("mlx5_10", 1));
  EXPECT_TRUE(exact.matches("mlx5_2", 2));
  IbPortFilter excl("^=mlx5_1,mlx5_4:2");
  EXPECT_FALSE(excl.matches("mlx5_1", 1));
  EXPECT_TRUE(excl.matches("mlx5_10", 1));
  EXPECT_TRUE(excl.matches("mlx5_4", 1));
  EXPECT_FALSE(excl.matches("mlx5_4", 2));
  IbPortFilter bad("mlx5_0:x");  // an unparsable port selects nothing of that device
  EXPECT_FALSE(bad.matches("mlx5_0", 1));
}

TEST(IbCollector, FilterSelectsDevicesAndPorts) {
  testing::FakeSysfs fs;
  fs.ibPort("mlx5_0", 1);
  fs.ibPort("mlx5_0", 2);
  fs.ibPort("mlx5_1", 1);
  IbCollector a(fs.root(), "mlx5_0", 0.0);
  a.discover();
  EXPECT_EQ(a.portCount(), 2u);
  IbCollector b(fs.root(), "=mlx5_1:1,mlx5_9", 0.0);
  b.discover();
  EXPECT_EQ(b.portCount(), 1u);
  IbCollector c(fs.root(), "^mlx5_0:2", 0.0);
  c.discover();
  EXPECT_EQ(c.portCount(), 2u);
  IbCollector none(fs.root() + "/nothing", "", 0.0);
  EXPECT_FALSE(none.rootPresent());
  none.discover();
  EXPECT_EQ(none.portCount(), 0u);
}

}  // namespace
}  // namespace wirewise::collectors
