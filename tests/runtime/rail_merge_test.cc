// The runtime's sampler merges the net plugin's rails into the link-health model: driven through the real
// Runtime with an injected rail source (what net/rail_registry.h installs in production). A rail whose
// RTT rises fifty-fold and whose share falls is logged as degraded with the latency in its reason, becomes
// a LinkNote with both latencies for the coordinator, and its share change is one rail_shift event.
#include <gtest/gtest.h>
#include <unistd.h>

#include <chrono>
#include <fstream>
#include <map>
#include <mutex>
#include <nlohmann/json.hpp>
#include <string>
#include <thread>

#include "tests/runtime/log_lines.h"
#include "runtime/runtime.h"
#include "tests/telemetry/collectors/fake_sysfs.h"

namespace wirewise {
namespace {

std::mutex gMu;
uint32_t gRtt1 = 40;
double gShare1 = 0.5;
uint64_t gBytes = 0;

// Two rails of one comm; both keep delivering (busy), so every pass is an RTT sample.
std::vector<collectors::RailReading> fakeRails() {
  std::lock_guard<std::mutex> lock(gMu);
  gBytes += 50'000'000;
  collectors::RailReading a{9, "10.1.1.2", "eth0", 0, true, 1 - gShare1, 1e9, gBytes, 40, 0, 0};
  collectors::RailReading b{9, "10.1.1.2", "eth1", 1, true, gShare1, 1e9 * gShare1 / (1 - gShare1), gBytes, gRtt1,
                            0, 0};
  return {a, b};
}

using wirewise::testing::readLog;

TEST(RailMerge, ADegradedRailReachesTheLogAndTheBoundaryReport) {
  collectors::testing::FakeSysfs sys;  // no links of its own: only the rails
  std::string log = sys.root() + "/wirewise.jsonl";
  std::map<std::string, std::string> env = {{"WIREWISE_SYSFS_ROOT", sys.root()},
                                            {"WIREWISE_COLLECT_MS", "100"},
                                            {"WIREWISE_SUMMARY_MS", "3600000"},
                                            {"WIREWISE_LOG", log}};
  ASSERT_EQ(Runtime::references(), 0);
  Runtime::setRailSource(&fakeRails);
  Runtime* rt = Runtime::acquire([&](const char* k) -> const char* {
    auto it = env.find(k);
    return it == env.end() ? nullptr : it->second.c_str();
  });
  std::this_thread::sleep_for(std::chrono::milliseconds(800));  // ~8 busy passes at 40 us: the baseline
  EXPECT_TRUE(rt->linkNotes().empty());
  {
    std::lock_guard<std::mutex> lock(gMu);
    gRtt1 = 2000;
    gShare1 = 0.1;
  }
  std::vector<adapt::LinkNote> notes;
  for (int i = 0; i < 30 && notes.empty(); ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    notes = rt->linkNotes();
  }
  const std::string host = rt->host();
  Runtime::release();
  Runtime::setRailSource(nullptr);

  ASSERT_EQ(notes.size(), 1u);
  EXPECT_EQ(notes[0].link, (host + "/rail:eth1").substr(0, adapt::kMaxLinkName));
  EXPECT_EQ(notes[0].state, 1);  // degraded
  EXPECT_FLOAT_EQ(notes[0].rttUs, 2000.0f);
  EXPECT_FLOAT_EQ(notes[0].baselineRttUs, 40.0f);
  EXPECT_NEAR(notes[0].capacityRatio, 0.111f, 0.001f);  // 1/9 of its peer's measured rate

  int shifts = 0;
  bool degraded = false;
  for (const auto& e : readLog(log)) {
    if (e.value("event", "") == "rail_shift") {
      ++shifts;
      EXPECT_EQ(e.value("host", ""), host);
      EXPECT_EQ(e["rails"][1]["label"], "eth1");
      EXPECT_DOUBLE_EQ(e["rails"][1]["before"].get<double>(), 0.5);
      EXPECT_DOUBLE_EQ(e["rails"][1]["after"].get<double>(), 0.1);
      EXPECT_NE(e.value("reason", "").find("network latency rose from 40 µs to 2.0 ms"), std::string::npos)
          << e.dump();
    }
    if (e.value("event", "") == "link_health" && e.value("reason", "") == "changed")
      for (const auto& l : e["links"])
        if (l.value("id", "") == "rail:eth1" && l.value("state", "") == "degraded") {
          degraded = true;
          EXPECT_EQ(l.value("kind", ""), "rail");
          EXPECT_DOUBLE_EQ(l.value("baseline_rtt_us", 0.0), 40);
        }
  }
  EXPECT_EQ(shifts, 1);  // one change, one event
  EXPECT_TRUE(degraded);
}

}  // namespace
}  // namespace wirewise
