// The runtime's sampler merges the net plugin's rails into the link-health model, from an injected rail
// source (what net/rail_registry.h installs in production) and stepped with an injected clock at several
// uptimes. A rail whose RTT rises fifty-fold and whose share falls is logged as degraded with the latency
// in its reason, becomes a LinkNote with both latencies for the coordinator, and its share change is one
// rail_shift event.
#include <gtest/gtest.h>

#include <chrono>
#include <nlohmann/json.hpp>
#include <string>

#include "tests/runtime/sampler_harness.h"
#include "tests/telemetry/collectors/fake_sysfs.h"

namespace wirewise {
namespace {

using namespace std::chrono_literals;

// Read on the stepping thread only: no lock needed.
uint32_t gRtt1 = 40;
double gShare1 = 0.5;
uint64_t gBytes = 0;

// Two rails of one comm; both keep delivering (busy), so every pass is an RTT sample.
std::vector<collectors::RailReading> fakeRails() {
  gBytes += 50'000'000;
  collectors::RailReading a{9, "10.1.1.2", "eth0", 0, true, 1 - gShare1, 1e9, gBytes, 40, 0, 0};
  collectors::RailReading b{9, "10.1.1.2", "eth1", 1, true, gShare1, 1e9 * gShare1 / (1 - gShare1), gBytes, gRtt1,
                            0, 0};
  return {a, b};
}

TEST(RailMerge, ADegradedRailReachesTheLogAndTheBoundaryReport) {
  for (auto uptime : testing::uptimes()) {
    SCOPED_TRACE(std::chrono::duration_cast<std::chrono::seconds>(uptime).count());
    gRtt1 = 40, gShare1 = 0.5, gBytes = 0;
    collectors::testing::FakeSysfs sys;  // no links of its own: only the rails
    SamplerOptions o;
    o.fullEvery = 1h;
    o.railSource = [] { return &fakeRails; };
    testing::SamplerHarness h(sys, std::move(o));
    const SteadyTime t0 = SteadyTime{} + uptime;
    int pass = 0;
    for (; pass < 8; ++pass) h.sampler->step(t0 + pass * 100ms);  // 8 busy passes at 40 us: the baseline
    EXPECT_TRUE(h.sampler->linkNotes().empty());
    gRtt1 = 2000;
    gShare1 = 0.1;
    std::vector<adapt::LinkNote> notes;
    for (int i = 0; i < 30 && notes.empty(); ++i, ++pass) {
      h.sampler->step(t0 + pass * 100ms);
      notes = h.sampler->linkNotes();
    }

    ASSERT_EQ(notes.size(), 1u);
    EXPECT_EQ(notes[0].link, "node7/rail:eth1");
    EXPECT_EQ(notes[0].state, 1);  // degraded
    EXPECT_FLOAT_EQ(notes[0].rttUs, 2000.0f);
    EXPECT_FLOAT_EQ(notes[0].baselineRttUs, 40.0f);
    EXPECT_NEAR(notes[0].capacityRatio, 0.111f, 0.001f);  // 1/9 of its peer's measured rate

    int shifts = 0;
    bool degraded = false;
    for (const auto& e : h.events) {
      if (e.value("event", "") == "rail_shift") {
        ++shifts;
        EXPECT_EQ(e.value("host", ""), "node7");
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
}

}  // namespace
}  // namespace wirewise
