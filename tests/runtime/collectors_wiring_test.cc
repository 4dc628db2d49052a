// The runtime's link sampler logs link_health events: a full snapshot on the first pass (whatever the
// machine's uptime), then every state change as it happens. Stepped with an injected clock over a fake
// sysfs tree read by the production collectors; the last tests run the real Runtime's sampler thread and
// wait for its first pass.
#include <gtest/gtest.h>
#include <unistd.h>

#include <chrono>
#include <fstream>
#include <map>
#include <set>
#include <nlohmann/json.hpp>
#include <string>

#include "runtime/runtime.h"
#include "tests/runtime/log_lines.h"
#include "tests/runtime/sampler_harness.h"
#include "tests/telemetry/collectors/fake_sysfs.h"

namespace wirewise {
namespace {

using namespace std::chrono_literals;
using collectors::testing::FakeSysfs;
using wirewise::testing::readLog;
using wirewise::testing::SamplerHarness;

SamplerOptions fullEvery(std::chrono::milliseconds period) {
  SamplerOptions o;
  o.fullEvery = period;
  return o;
}

std::string selfHost() {
  char self[256] = {};
  ::gethostname(self, sizeof self - 1);
  return self;
}

TEST(CollectorsWiring, StateChangesReachTheLogAsTheyHappen) {
  FakeSysfs sys;
  sys.ibPort("mlx5_0", 1);
  sys.ibPort("mlx5_1", 1);
  SamplerHarness h(sys, fullEvery(1h));
  const SteadyTime t0 = SteadyTime{} + 5min;
  for (int i = 0; i < 10; ++i) h.sampler->step(t0 + i * 100ms);
  // mlx5_1 trains down from 400 to 100 Gb/s: degraded, logged at the next pass.
  sys.write("class/infiniband/mlx5_1/ports/1/rate", "100 Gb/sec (4X EDR)\n");
  for (int i = 10; i < 25; ++i) h.sampler->step(t0 + i * 100ms);
  EXPECT_EQ(h.sampler->passes(), 25u);

  auto periodic = h.linkHealth("periodic");
  auto changed = h.linkHealth("changed");
  ASSERT_EQ(periodic.size(), 1u);
  EXPECT_EQ(periodic[0]["links"].size(), 2u);  // the first pass lists every link
  ASSERT_EQ(changed.size(), 1u);
  ASSERT_EQ(changed[0]["links"].size(), 1u) << changed[0].dump();  // only what changed
  EXPECT_EQ(changed[0]["links"][0]["id"], "mlx5_1:1");
  EXPECT_EQ(changed[0]["links"][0]["state"], "degraded");
  ASSERT_EQ(h.sampler->linkNotes().size(), 1u);
  EXPECT_EQ(h.sampler->linkNotes()[0].link, "node7/mlx5_1:1");
}

// The issue-19 bug: "the last full snapshot" started at the clock's epoch, so on a machine up for less
// than the snapshot period the first pass was logged as a change. It is "never" now.
TEST(CollectorsWiring, TheFirstFullSnapshotIsPeriodicAtAnyUptime) {
  for (auto uptime : testing::uptimes()) {
    SCOPED_TRACE(std::chrono::duration_cast<std::chrono::seconds>(uptime).count());
    FakeSysfs sys;
    sys.ibPort("mlx5_0", 1);
    SamplerHarness h(sys, fullEvery(1h));
    const SteadyTime t0 = SteadyTime{} + uptime;
    h.sampler->step(t0);
    ASSERT_EQ(h.linkHealth("periodic").size(), 1u);
    EXPECT_EQ(h.linkHealth("changed").size(), 0u);
    std::set<std::string> keys;
    for (auto it = h.events[0].begin(); it != h.events[0].end(); ++it) keys.insert(it.key());
    EXPECT_EQ(keys, (std::set<std::string>{"event", "time_ns", "passes", "links", "sources", "reason"}));
    EXPECT_EQ(h.events[0].value("time_ns", int64_t{-1}), stampNs(t0));
    h.sampler->step(t0 + 1s);
    h.sampler->step(t0 + 1h - 1ms);
    EXPECT_EQ(h.linkHealth("periodic").size(), 1u);  // nothing changed, the period has not passed
    h.sampler->step(t0 + 1h);
    EXPECT_EQ(h.linkHealth("periodic").size(), 2u);
    EXPECT_EQ(h.linkHealth("changed").size(), 0u);
  }
}

std::string writeMap(const FakeSysfs& sys, const std::string& mapHost) {
  std::ifstream in(std::string(WW_SOURCE_DIR) + "/tests/telemetry/wiring/data/h100x4_degraded.json");
  nlohmann::json map = nlohmann::json::parse(in);
  map["host"] = mapHost;
  const std::string path = sys.root() + "/" + selfHost() + ".json";
  std::ofstream(path) << map.dump();
  return path;
}

int pairsIn(const nlohmann::json& linkHealth, int* degraded) {
  int pairs = 0;
  for (const auto& l : linkHealth["links"]) {
    if (l.value("id", "").find("->") == std::string::npos) continue;
    ++pairs;
    *degraded += l.value("state", "") == "degraded";
  }
  return pairs;
}

// WIREWISE_WIRING seeds the link-health model with the map's GPU pairs: the flagged ones are degraded
// links in the first full snapshot and link notes for the coordinator, and the flags are logged once.
TEST(CollectorsWiring, AWiringMapSeedsTheLinkHealthModel) {
  FakeSysfs sys;
  sys.ibPort("mlx5_0", 1);
  std::vector<nlohmann::json> posted;
  SamplerOptions o;
  o.wiringPrior = loadWiringLinks(writeMap(sys, selfHost()), selfHost(), 0,
                                  [&](nlohmann::json ev) { posted.push_back(std::move(ev)); });
  ASSERT_EQ(posted.size(), 1u);
  EXPECT_EQ(posted[0].value("event", ""), "wiring_prior");
  EXPECT_FALSE(posted[0]["flags"].empty()) << posted[0].dump();
  SamplerHarness h(sys, std::move(o));
  h.sampler->step(SteadyTime{} + 60s);
  auto periodic = h.linkHealth("periodic");
  ASSERT_EQ(periodic.size(), 1u);
  int degraded = 0;
  EXPECT_EQ(pairsIn(periodic[0], &degraded), 12);  // 4 GPUs: every ordered pair
  EXPECT_GE(degraded, 1);
  EXPECT_EQ(h.sampler->linkNotes().size(), static_cast<size_t>(degraded));
}

// A map from another host is refused: its pairs would name this host's GPUs wrongly.
TEST(CollectorsWiring, AMapFromAnotherHostIsIgnored) {
  FakeSysfs sys;
  std::vector<nlohmann::json> posted;
  auto links = loadWiringLinks(writeMap(sys, "some-other-host"), selfHost(), 0,
                               [&](nlohmann::json ev) { posted.push_back(std::move(ev)); });
  EXPECT_TRUE(links.empty());
  EXPECT_TRUE(posted.empty());
  EXPECT_TRUE(loadWiringLinks(sys.root() + "/missing.json", selfHost(), 0, [&](nlohmann::json) { FAIL(); }).empty());
}

Runtime* acquireWith(const std::map<std::string, std::string>& env) {
  return Runtime::acquire([&](const char* k) -> const char* {
    auto it = env.find(k);
    return it == env.end() ? nullptr : it->second.c_str();
  });
}

// The real Runtime: settings to collectors, %h in WIREWISE_WIRING, its sampler thread, the log. Waits for
// the thread's first pass, at whatever the machine's uptime is.
TEST(CollectorsWiring, TheRuntimeSamplesOnItsOwnThread) {
  FakeSysfs sys;
  sys.ibPort("mlx5_0", 1);
  writeMap(sys, selfHost());
  const std::string log = sys.root() + "/wirewise.jsonl";
  ASSERT_EQ(Runtime::references(), 0);
  Runtime* rt = acquireWith({{"WIREWISE_SYSFS_ROOT", sys.root()},
                             {"WIREWISE_COLLECT_MS", "100"},
                             {"WIREWISE_SUMMARY_MS", "3600000"},
                             {"WIREWISE_WIRING", sys.root() + "/%h.json"},
                             {"WIREWISE_LOG", log}});
  ASSERT_NE(rt->sampler(), nullptr);
  EXPECT_TRUE(testing::waitUntil([&] { return rt->sampler()->passes() >= 1; }));
  EXPECT_FALSE(rt->linkNotes().empty());  // the map's degraded pairs
  Runtime::release();
  ASSERT_EQ(Runtime::references(), 0);

  bool collectorsEvent = false, prior = false;
  int periodic = 0, pairs = 0, degraded = 0;
  for (const auto& e : readLog(log)) {
    collectorsEvent |= e.value("event", "") == "collectors";
    prior |= e.value("event", "") == "wiring_prior";
    if (e.value("event", "") != "link_health") continue;
    EXPECT_EQ(e.value("reason", ""), "periodic") << e.dump();  // nothing changes in a fake tree
    if (periodic++ == 0) pairs = pairsIn(e, &degraded);
  }
  EXPECT_TRUE(collectorsEvent);
  EXPECT_TRUE(prior);
  EXPECT_EQ(periodic, 1);
  EXPECT_EQ(pairs, 12);
  EXPECT_GE(degraded, 1);
}

TEST(CollectorsWiring, ZeroTurnsThemOff) {
  FakeSysfs sys;
  sys.ibPort("mlx5_0", 1);
  const std::string log = sys.root() + "/wirewise.jsonl";
  Runtime* rt = acquireWith({{"WIREWISE_SYSFS_ROOT", sys.root()}, {"WIREWISE_COLLECT_MS", "0"}, {"WIREWISE_LOG", log}});
  EXPECT_EQ(rt->sampler(), nullptr);
  EXPECT_TRUE(rt->linkNotes().empty());
  Runtime::release();
  for (const auto& e : readLog(log)) {
    EXPECT_NE(e.value("event", ""), "link_health");
    EXPECT_NE(e.value("event", ""), "collectors");
  }
}

}  // namespace
}  // namespace wirewise
