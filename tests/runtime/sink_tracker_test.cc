// The sink tracker stepped with an injected clock: one summary per sink per period, its interval measured
// from the tracker's start (not from the clock's epoch), and a final one when the sink goes.
#include "runtime/sink_tracker.h"

#include <gtest/gtest.h>

#include <set>
#include <string>
#include <vector>

#include "tests/runtime/sampler_harness.h"
#include "tests/telemetry/sink_test_util.h"

namespace wirewise {
namespace {

using namespace std::chrono_literals;

void runCollectives(EventSink& sink, uint64_t firstSeq, int n) {
  for (int i = 0; i < n; ++i) {
    void* c = sink.start(testing::collEvent(firstSeq + static_cast<uint64_t>(i), 1));
    ASSERT_NE(c, nullptr);
    ASSERT_TRUE(testing::runChannel(sink, c, 0, 1000, 51000));  // 50 us
    sink.stop(c);
  }
}

std::set<std::string> keys(const nlohmann::json& o) {
  std::set<std::string> out;
  for (auto it = o.begin(); it != o.end(); ++it) out.insert(it.key());
  return out;
}

std::vector<nlohmann::json> summaries(const std::vector<nlohmann::json>& events) {
  std::vector<nlohmann::json> out;
  for (const auto& e : events)
    if (e.value("event", "") == "summary") out.push_back(e);
  return out;
}

TEST(SinkTracker, SummariesComeEveryPeriodFromTheTrackersStart) {
  for (auto uptime : testing::uptimes()) {
    SCOPED_TRACE(std::chrono::duration_cast<std::chrono::seconds>(uptime).count());
    const SteadyTime t0 = SteadyTime{} + uptime;
    std::vector<nlohmann::json> events;
    SinkTracker tracker([&](nlohmann::json ev) { events.push_back(std::move(ev)); }, [t0] { return t0; }, 10s);
    EventSink sink(0xab, 3, 8, 64, 256);
    tracker.add(&sink);
    runCollectives(sink, 0, 5);
    tracker.step(t0 + 50ms);
    tracker.step(t0 + 10s - 1ms);
    EXPECT_TRUE(summaries(events).empty());  // drained, not yet summarized
    tracker.step(t0 + 10s);
    auto s = summaries(events);
    ASSERT_EQ(s.size(), 1u);
    EXPECT_EQ(s[0].value("interval_ms", 0), 10000);
    EXPECT_EQ(s[0].value("rank", -1), 3);
    ASSERT_EQ(s[0]["rows"].size(), 1u);
    EXPECT_EQ(s[0]["rows"][0].value("count", 0), 5);
    // The schema as docs/adaptation-log.md gives it, key for key.
    EXPECT_EQ(keys(s[0]), (std::set<std::string>{"event", "comm", "rank", "interval_ms", "rows", "drops"}));
    EXPECT_EQ(keys(s[0]["rows"][0]), (std::set<std::string>{"coll", "bucket", "min_bytes", "max_bytes", "algo", "proto",
                                                             "channels", "count", "p50_us", "p99_us", "busbw_gbs"}));
    EXPECT_EQ(keys(s[0]["drops"]), (std::set<std::string>{"pool", "ring", "incomplete", "orphan"}));
    EXPECT_EQ(s[0].value("comm", ""), "0x00000000000000ab");
    tracker.step(t0 + 20s);
    EXPECT_EQ(summaries(events).size(), 1u);  // nothing new: no summary
    runCollectives(sink, 5, 2);
    tracker.remove(&sink);  // the final summary; its interval ends now (the injected clock: t0)
    s = summaries(events);
    ASSERT_EQ(s.size(), 2u);
    EXPECT_EQ(s[1]["rows"][0].value("count", 0), 2);
  }
}

}  // namespace
}  // namespace wirewise
