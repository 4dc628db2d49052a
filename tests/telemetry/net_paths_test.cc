// NetPathsReporter: the net_paths event carries each interval's deltas, only for paths that moved.
#include "telemetry/net_paths.h"

#include <gtest/gtest.h>

namespace wirewise::testing {
namespace {

void* startOp(ProxySink& sink, int channel, int peer, bool isSend, uint64_t t) {
  ProfEvent ev;
  ev.type = kEvProxyOp;
  ev.channelId = static_cast<uint8_t>(channel);
  ev.peer = peer;
  ev.isSend = isSend;
  ev.nSteps = 1;
  ev.chunkSize = 4096;
  return sink.startOp(ev, t);
}

// One op with one send step: SendWait at t+100 with `bytes`, stop at t+100+netNs.
void transfer(ProxySink& sink, int channel, int peer, uint64_t t, uint64_t bytes, uint64_t netNs) {
  void* op = startOp(sink, channel, peer, true, t);
  ASSERT_NE(op, nullptr);
  ProfEvent st;
  st.type = kEvProxyStep;
  st.parent = op;
  void* s = ProxySink::startChild(st, t);
  ASSERT_NE(s, nullptr);
  sink.recordState(s, kStateSendWait, bytes, t + 100);
  sink.stop(s, t + 100 + netNs);
  sink.stop(op, t + 200 + netNs);
}

TEST(NetPathsReporter, ReportsIntervalDeltasOfThePathsThatMoved) {
  ProxySink sink(0x5, 2, 16, 64);
  NetPathsReporter rep;
  EXPECT_TRUE(rep.take(sink, "0x5", 100).is_null());  // nothing yet

  transfer(sink, 0, 1, 0, 1000, 500);
  transfer(sink, 1, 1, 0, 3000, 1000);
  nlohmann::json a = rep.take(sink, "0x5", 100);
  ASSERT_FALSE(a.is_null());
  EXPECT_EQ(a["event"], "net_paths");
  EXPECT_EQ(a["comm"], "0x5");
  EXPECT_EQ(a["rank"], 2);
  EXPECT_EQ(a["interval_ms"], 100);
  EXPECT_EQ(a["ops"], 2);
  EXPECT_EQ(a["steps"], 2);
  ASSERT_EQ(a["paths"].size(), 2u);
  EXPECT_EQ(a["paths"][0]["channel"], 1);  // busiest first
  EXPECT_EQ(a["paths"][0]["bytes"], 3000);
  EXPECT_DOUBLE_EQ(a["paths"][0]["net_us"].get<double>(), 1.0);
  EXPECT_DOUBLE_EQ(a["paths"][0]["net_gbs"].get<double>(), 3.0);  // 3000 B / 1000 ns
  EXPECT_DOUBLE_EQ(a["paths"][0]["wait_us"]["send_wait"].get<double>(), 1.0);
  EXPECT_EQ(a["paths"][1]["bytes"], 1000);

  EXPECT_TRUE(rep.take(sink, "0x5", 100).is_null());  // nothing moved since

  transfer(sink, 0, 1, 10000, 500, 250);  // the same path again
  transfer(sink, 2, 9, 10000, 100, 100);  // a new one
  nlohmann::json b = rep.take(sink, "0x5", 100);
  ASSERT_FALSE(b.is_null());
  EXPECT_EQ(b["ops"], 2);
  ASSERT_EQ(b["paths"].size(), 2u);
  EXPECT_EQ(b["paths"][0]["channel"], 0);
  EXPECT_EQ(b["paths"][0]["bytes"], 500);  // the interval's, not the total 1500
  EXPECT_EQ(b["paths"][0]["steps"], 1);
  EXPECT_DOUBLE_EQ(b["paths"][0]["net_us"].get<double>(), 0.25);
  EXPECT_EQ(b["paths"][1]["peer"], 9);
}

TEST(NetPathsReporter, CounterMovesAloneStillReport) {
  ProxySink sink(0x5, 0, 16, 64);
  NetPathsReporter rep;
  void* op = startOp(sink, 0, 1, true, 0);
  sink.stop(op, 10);
  ASSERT_FALSE(rep.take(sink, "0x5", 100).is_null());
  sink.stop(op, 20);  // a late duplicate stop: the only news of this interval
  nlohmann::json j = rep.take(sink, "0x5", 100);
  ASSERT_FALSE(j.is_null());
  EXPECT_TRUE(j["paths"].empty());
  EXPECT_EQ(j["drops"]["stale"], 1);
  EXPECT_EQ(j["ops"], 0);
}

}  // namespace
}  // namespace wirewise::testing
