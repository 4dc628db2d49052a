// The runtime samples the link collectors on its own thread and logs link_health events: a full snapshot
// on the first pass, then every state change as it happens. Driven through the real Runtime with an
// injected environment and a fake sysfs tree read by the production collectors.
#include <gtest/gtest.h>
#include <unistd.h>

#include <chrono>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <thread>

#include "tests/runtime/log_lines.h"
#include "runtime/runtime.h"
#include "tests/telemetry/collectors/fake_sysfs.h"

namespace wirewise {
namespace {

using wirewise::testing::readLog;

TEST(CollectorsWiring, StateChangesReachTheLogAsTheyHappen) {
  collectors::testing::FakeSysfs sys;
  sys.ibPort("mlx5_0", 1);
  sys.ibPort("mlx5_1", 1);
  std::string log = sys.root() + "/wirewise.jsonl";
  std::map<std::string, std::string> env = {{"WIREWISE_SYSFS_ROOT", sys.root()},
                                            {"WIREWISE_COLLECT_MS", "100"},
                                            {"WIREWISE_SUMMARY_MS", "3600000"},
                                            {"WIREWISE_LOG", log}};
  ASSERT_EQ(Runtime::references(), 0);
  Runtime::acquire([&](const char* k) -> const char* {
    auto it = env.find(k);
    return it == env.end() ? nullptr : it->second.c_str();
  });
  std::this_thread::sleep_for(std::chrono::milliseconds(1000));
  // mlx5_1 trains down from 400 to 100 Gb/s: degraded, logged within a pass or two.
  sys.write("class/infiniband/mlx5_1/ports/1/rate", "100 Gb/sec (4X EDR)\n");
  std::this_thread::sleep_for(std::chrono::milliseconds(1500));
  Runtime::release();
  ASSERT_EQ(Runtime::references(), 0);

  int periodic = 0, changed = 0;
  bool sawDegraded = false, collectorsEvent = false;
  for (const auto& e : readLog(log)) {
    if (e.value("event", "") == "collectors") collectorsEvent = true;
    if (e.value("event", "") != "link_health") continue;
    if (e.value("reason", "") == "periodic") {
      ++periodic;
      EXPECT_EQ(e["links"].size(), 2u);  // the first pass lists every link
    } else if (e.value("reason", "") == "changed") {
      ++changed;
      ASSERT_EQ(e["links"].size(), 1u) << e.dump();  // only what changed
      EXPECT_EQ(e["links"][0]["id"], "mlx5_1:1");
      EXPECT_EQ(e["links"][0]["state"], "degraded");
      sawDegraded = true;
    }
  }
  EXPECT_TRUE(collectorsEvent);
  EXPECT_EQ(periodic, 1);
  EXPECT_EQ(changed, 1);
  EXPECT_TRUE(sawDegraded);
}

// WIREWISE_WIRING (with %h) seeds the link-health model with the map's GPU pairs: the flagged ones are
// degraded links in the first full snapshot, and the flags are logged once. A map from another host is
// refused: its pairs would name this host's GPUs wrongly.
std::vector<nlohmann::json> runWithMap(const std::string& mapHost, collectors::testing::FakeSysfs& sys) {
  std::ifstream in(std::string(WW_SOURCE_DIR) + "/tests/telemetry/wiring/data/h100x4_degraded.json");
  nlohmann::json map = nlohmann::json::parse(in);
  map["host"] = mapHost;
  char self[256] = {};
  ::gethostname(self, sizeof self - 1);
  std::ofstream(sys.root() + "/" + self + ".json") << map.dump();
  std::string log = sys.root() + "/wirewise.jsonl";
  std::map<std::string, std::string> env = {{"WIREWISE_SYSFS_ROOT", sys.root()},
                                            {"WIREWISE_COLLECT_MS", "100"},
                                            {"WIREWISE_WIRING", sys.root() + "/%h.json"},
                                            {"WIREWISE_LOG", log}};
  Runtime::acquire([&](const char* k) -> const char* {
    auto it = env.find(k);
    return it == env.end() ? nullptr : it->second.c_str();
  });
  std::this_thread::sleep_for(std::chrono::milliseconds(400));
  Runtime::release();
  return readLog(log);
}

TEST(CollectorsWiring, AWiringMapSeedsTheLinkHealthModel) {
  collectors::testing::FakeSysfs sys;
  sys.ibPort("mlx5_0", 1);
  char self[256] = {};
  ::gethostname(self, sizeof self - 1);
  bool prior = false;
  int pairs = 0, degraded = 0;
  for (const auto& e : runWithMap(self, sys)) {
    if (e.value("event", "") == "wiring_prior") {
      prior = true;
      EXPECT_FALSE(e["flags"].empty()) << e.dump();
    }
    if (e.value("event", "") != "link_health" || e.value("reason", "") != "periodic") continue;
    for (const auto& l : e["links"]) {
      if (l.value("id", "").find("->") == std::string::npos) continue;
      ++pairs;
      degraded += l.value("state", "") == "degraded";
    }
  }
  EXPECT_TRUE(prior);
  EXPECT_EQ(pairs, 12);  // 4 GPUs: every ordered pair
  EXPECT_GE(degraded, 1);
}

TEST(CollectorsWiring, AMapFromAnotherHostIsIgnored) {
  collectors::testing::FakeSysfs sys;
  sys.ibPort("mlx5_0", 1);
  for (const auto& e : runWithMap("some-other-host", sys)) {
    EXPECT_NE(e.value("event", ""), "wiring_prior");
    if (e.value("event", "") != "link_health") continue;
    for (const auto& l : e["links"]) EXPECT_EQ(l.value("id", "").find("->"), std::string::npos) << l.dump();
  }
}

TEST(CollectorsWiring, ZeroTurnsThemOff) {
  collectors::testing::FakeSysfs sys;
  sys.ibPort("mlx5_0", 1);
  std::string log = sys.root() + "/wirewise.jsonl";
  std::map<std::string, std::string> env = {
      {"WIREWISE_SYSFS_ROOT", sys.root()}, {"WIREWISE_COLLECT_MS", "0"}, {"WIREWISE_LOG", log}};
  Runtime::acquire([&](const char* k) -> const char* {
    auto it = env.find(k);
    return it == env.end() ? nullptr : it->second.c_str();
  });
  std::this_thread::sleep_for(std::chrono::milliseconds(150));
  Runtime::release();
  for (const auto& e : readLog(log)) {
    EXPECT_NE(e.value("event", ""), "link_health");
    EXPECT_NE(e.value("event", ""), "collectors");
  }
}

}  // namespace
}  // namespace wirewise
