#include "telemetry/collectors/collector_set.h"

#include <sys/socket.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include "tests/telemetry/collectors/fake_sysfs.h"

namespace wirewise::collectors {
namespace {

using namespace std::chrono_literals;

CollectorConfig fakeConfig(const testing::FakeSysfs& fs) {
  CollectorConfig cfg;
  cfg.sysfsRoot = fs.root();
  cfg.nvmlLibrary = "/nonexistent/libnvidia-ml.so.1";
  cfg.smoothingSeconds = 0;
  return cfg;
}

TEST(CollectorSet, EmptyMachineDegradesToUnavailableWithReasons) {
  testing::FakeSysfs fs;
  std::vector<std::string> lines;
  auto set = CollectorSet::create(fakeConfig(fs), [&](const std::string& l) { lines.push_back(l); });
  ASSERT_NE(set, nullptr);
  std::string status = set->statusLine();
  EXPECT_NE(status.find("ib: unavailable (no " + fs.root() + "/class/infiniband)"), std::string::npos) << status;
  EXPECT_NE(status.find("nvml: unavailable (dlopen /nonexistent/libnvidia-ml.so.1 failed"), std::string::npos);
  EXPECT_NE(status.find("cupti: unavailable"), std::string::npos);
  ASSERT_EQ(lines.size(), 1u);
  EXPECT_EQ(lines[0], "collectors: " + status);
  set->sample(Clock::time_point(1s));
  EXPECT_TRUE(set->snapshot().links.empty());
  EXPECT_EQ(set->summary().links, 0);
}

TEST(CollectorSet, MergesSourcesIntoSnapshotSummaryAndJson) {
  testing::FakeSysfs fs;
  fs.ibPort("mlx5_0", 1);
  fs.ibPort("mlx5_1", 1, "InfiniBand", "400 Gb/sec (4X NDR)");
  fs.netdev("eth0", "100000");
  auto set = CollectorSet::create(fakeConfig(fs), nullptr);
  int sv[2];
  ASSERT_EQ(::socketpair(AF_UNIX, SOCK_STREAM, 0, sv), 0);
  set->addTcpSocket(sv[0], "not-tcp");  // not a TCP socket: shows as not present, never crashes
  set->sample(Clock::time_point(10s));
  fs.write("class/infiniband/mlx5_0/ports/1/counters/port_xmit_data", 6'250'000'000ull);  // 25 GB
  fs.write("class/infiniband/mlx5_1/ports/1/rate", "200 Gb/sec (2X NDR)\n");
  fs.write("class/net/eth0/statistics/tx_bytes", 1'000'000ull);
  set->sample(Clock::time_point(11s));
  LinkHealthSnapshot snap = set->snapshot();
  ASSERT_EQ(snap.links.size(), 4u);
  EXPECT_EQ(snap.passes, 2u);
  EXPECT_EQ(snap.timeNs, 11'000'000'000);
  LinkHealthSummary sum = set->summary();
  EXPECT_EQ(sum.links, 4);
  EXPECT_EQ(sum.up, 2);        // mlx5_0, eth0
  EXPECT_EQ(sum.degraded, 1);  // mlx5_1 at half its best rate
  EXPECT_EQ(sum.down, 1);      // the non-TCP socket
  EXPECT_FLOAT_EQ(sum.worstUtilization, 0.5f);  // 25 GB/s of 50 GB/s
  EXPECT_FLOAT_EQ(sum.minCapacityRatio, 0.5f);
  EXPECT_EQ(sum.lastChangeNs, 11'000'000'000);

  nlohmann::json j = toJson(snap);
  EXPECT_EQ(j["event"], "link_health");
  EXPECT_EQ(j["links"].size(), 4u);
  EXPECT_EQ(j["links"][0]["id"], "mlx5_0:1");
  EXPECT_EQ(j["links"][0]["kind"], "ib");
  EXPECT_DOUBLE_EQ(j["links"][0]["tx_gbps"].get<double>(), 25.0);
  EXPECT_EQ(j["links"][1]["state"], "degraded");
  EXPECT_DOUBLE_EQ(j["links"][1]["nominal_gbps"].get<double>(), 25.0);
  EXPECT_EQ(j["links"][3]["kind"], "tcp");
  EXPECT_FALSE(j["links"][3].contains("tx_gbps"));  // unknown rates are omitted, not zero
  EXPECT_EQ(j["sources"].size(), 5u);
  set->removeTcpSocket(sv[0]);
  set->sample(Clock::time_point(12s));
  EXPECT_EQ(set->snapshot().links.size(), 3u);
  ::close(sv[0]);
  ::close(sv[1]);
}

TEST(CollectorSet, RediscoversNewPortsPeriodically) {
  testing::FakeSysfs fs;
  fs.ibPort("mlx5_0", 1);
  CollectorConfig cfg = fakeConfig(fs);
  cfg.rediscoverEveryPasses = 2;
  cfg.netdev = false;
  auto set = CollectorSet::create(cfg, nullptr);
  set->sample(Clock::time_point(1s));
  fs.ibPort("mlx5_3", 1);  // hot-added
  set->sample(Clock::time_point(2s));
  EXPECT_EQ(set->snapshot().links.size(), 2u);
}

}  // namespace
}  // namespace wirewise::collectors
