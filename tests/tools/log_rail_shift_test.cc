// `wirewise log` shows the net plugin's rail_shift events in one line each: events made by the producer
// (collectors::RailTracker, as the runtime's sampler makes them) and read back through the log reader.
#include <gtest/gtest.h>

#include <sstream>

#include "telemetry/collectors/link_health.h"
#include "tools/log_summary.h"

namespace wirewise::tools {
namespace {

constexpr int64_t kSec = 1'000'000'000;

std::string shiftLog() {
  collectors::RailTracker t;
  std::ostringstream log;
  uint64_t bytes = 0;
  auto pass = [&](double share1, uint32_t rtt1, bool up1, int64_t now) {
    bytes += 100'000'000;
    collectors::RailReading a{3, "10.0.0.2", "eth0", 0, true, 1 - share1, 1e9, bytes, 40, 0, 5};
    collectors::RailReading b{3, "10.0.0.2", "eth1", 1, up1, share1, 1e9, up1 ? bytes : 0, rtt1, 12, 5};
    t.update({a, b}, now);
    for (auto& ev : t.takeShifts()) {
      ev["pid"] = 77;
      log << ev.dump() << "\n";
    }
  };
  for (int i = 1; i <= 5; ++i) pass(0.5, 40, true, i * kSec);
  pass(0.1, 2000, true, 6 * kSec);
  pass(0.0, 2000, false, 7 * kSec);
  return log.str();
}

TEST(LogRailShift, EachShiftIsOneLineWithSharesAndLatency) {
  const std::string log = shiftLog();
  std::istringstream in(log);
  LogSummary s;
  addLog(in, &s);
  EXPECT_EQ(s.malformed, 0u) << log;
  EXPECT_EQ(s.unknown, 0u);
  ASSERT_EQ(s.railShifts.size(), 2u) << log;
  const std::string text = summaryText(s);
  const std::string first = railShiftText(s.railShifts[0]);
  EXPECT_EQ(first.find('\n'), std::string::npos);
  EXPECT_NE(text.find(first + "\n"), std::string::npos) << text;
  EXPECT_EQ(first.find("rail shift, pid 77, conn 3 to 10.0.0.2: eth0 50% -> 90%; eth1 50% -> 10% (network latency rose "
                       "from 40 µs to 2.0 ms (50x)); now "),
            0u)
      << first;
  EXPECT_NE(first.find("eth1 10% 1.00 GB/s rtt 2.0 ms (baseline 40 µs) 12 retrans"), std::string::npos) << first;
  const std::string second = railShiftText(s.railShifts[1]);
  EXPECT_NE(second.find("eth1 died"), std::string::npos) << second;
  EXPECT_NE(second.find("eth1 0% down"), std::string::npos) << second;
  EXPECT_NE(second.find("eth0 100%"), std::string::npos) << second;
  auto j = summaryJson(s);
  ASSERT_EQ(j["rail_shifts"].size(), 2u);
  EXPECT_EQ(j["rail_shifts"][0]["rails"][1]["before"], 0.5);
}

}  // namespace
}  // namespace wirewise::tools
