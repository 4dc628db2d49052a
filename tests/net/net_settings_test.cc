// The net face's timing settings (WIREWISE_NET_RAIL_TIMEOUT_MS, WIREWISE_NET_QUEUE_MS) through the one
// registry: accepted values reach the transport's config, a bad one is one WARN naming the value and the
// accepted range, and the default is used. netInit reads the environment once per process, so the
// end-to-end case sets it before the first (and only) netInit of this binary.
#include <cstdlib>
#include <map>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "net/transport.h"
#include "common/settings.h"

namespace wirewise::net {
namespace {

Settings readFrom(const std::map<std::string, std::string>& vars, std::vector<std::string>* warnings) {
  EnvSource env = [&vars](const char* name) -> const char* {
    auto it = vars.find(name);
    return it == vars.end() ? nullptr : it->second.c_str();
  };
  return readSettings(env, "host", 1, warnings);
}

TEST(NetSettings, DefaultsMatchTheTransportConfig) {
  std::vector<std::string> w;
  Settings s = readFrom({}, &w);
  EXPECT_TRUE(w.empty());
  EXPECT_EQ(static_cast<uint64_t>(s.netRailTimeoutMs), TransportConfig{}.railTimeoutMs);
  EXPECT_EQ(static_cast<uint64_t>(s.netQueueMs), TransportConfig{}.queueTargetMs);
  EXPECT_EQ(static_cast<double>(s.netHedge), TransportConfig{}.hedgeFactor);
}

TEST(NetSettings, TheProgressEngineIsOnUnlessTurnedOff) {
  std::vector<std::string> w;
  EXPECT_TRUE(readFrom({}, &w).netEngine);
  EXPECT_FALSE(readFrom({{"WIREWISE_NET_ENGINE", "off"}}, &w).netEngine);
  EXPECT_FALSE(readFrom({{"WIREWISE_NET_ENGINE", "0"}}, &w).netEngine);
  EXPECT_TRUE(readFrom({{"WIREWISE_NET_ENGINE", "on"}}, &w).netEngine);
  EXPECT_TRUE(w.empty());
  EXPECT_TRUE(readFrom({{"WIREWISE_NET_ENGINE", "sometimes"}}, &w).netEngine);
  ASSERT_EQ(w.size(), 1u);
  EXPECT_NE(w[0].find("WIREWISE_NET_ENGINE=\"sometimes\""), std::string::npos) << w[0];
  EXPECT_NE(w[0].find("using the default on"), std::string::npos) << w[0];
}

TEST(NetSettings, HedgingIsOffUnlessAFactorIsGiven) {
  std::vector<std::string> w;
  EXPECT_EQ(readFrom({{"WIREWISE_NET_HEDGE", "4"}}, &w).netHedge, 4);
  EXPECT_EQ(readFrom({{"WIREWISE_NET_HEDGE", "100"}}, &w).netHedge, 100);
  EXPECT_TRUE(w.empty());
  for (const char* bad : {"-1", "101", "on", "2.5"}) {
    w.clear();
    EXPECT_EQ(readFrom({{"WIREWISE_NET_HEDGE", bad}}, &w).netHedge, 0) << bad;
    ASSERT_EQ(w.size(), 1u) << bad;
    EXPECT_NE(w[0].find("0 .. 100"), std::string::npos) << w[0];
  }
}

TEST(NetSettings, AcceptedValuesAndTheirBounds) {
  std::vector<std::string> w;
  Settings s = readFrom({{"WIREWISE_NET_RAIL_TIMEOUT_MS", "200"}, {"WIREWISE_NET_QUEUE_MS", "1000"}}, &w);
  EXPECT_TRUE(w.empty());
  EXPECT_EQ(s.netRailTimeoutMs, 200);
  EXPECT_EQ(s.netQueueMs, 1000);
  s = readFrom({{"WIREWISE_NET_RAIL_TIMEOUT_MS", "600000"}, {"WIREWISE_NET_QUEUE_MS", "1"}}, &w);
  EXPECT_TRUE(w.empty());
  EXPECT_EQ(s.netRailTimeoutMs, 600000);
  EXPECT_EQ(s.netQueueMs, 1);
}

TEST(NetSettings, EachBadValueIsOneWarningAndTheDefault) {
  const std::vector<std::pair<std::string, std::string>> bad = {
      {"WIREWISE_NET_RAIL_TIMEOUT_MS", "199"},  {"WIREWISE_NET_RAIL_TIMEOUT_MS", "600001"},
      {"WIREWISE_NET_RAIL_TIMEOUT_MS", "2s"},   {"WIREWISE_NET_RAIL_TIMEOUT_MS", "-1"},
      {"WIREWISE_NET_QUEUE_MS", "0"},           {"WIREWISE_NET_QUEUE_MS", "1001"},
      {"WIREWISE_NET_QUEUE_MS", "thirty"},      {"WIREWISE_NET_QUEUE_MS", "3.5"}};
  for (const auto& [name, value] : bad) {
    std::vector<std::string> w;
    Settings s = readFrom({{name, value}}, &w);
    ASSERT_EQ(w.size(), 1u) << name << "=" << value;
    const bool timeout = name == "WIREWISE_NET_RAIL_TIMEOUT_MS";
    EXPECT_NE(w[0].find(name + "=\"" + value + "\""), std::string::npos) << w[0];
    EXPECT_NE(w[0].find(timeout ? "200 .. 600000" : "1 .. 1000"), std::string::npos) << w[0];
    EXPECT_NE(w[0].find(timeout ? "using the default 2000" : "using the default 30"), std::string::npos) << w[0];
    EXPECT_EQ(s.netRailTimeoutMs, 2000);
    EXPECT_EQ(s.netQueueMs, 30);
  }
}

std::vector<std::string>* gLogged = nullptr;
void logTo(const char* msg) { gLogged->push_back(msg); }

// The real path: netInit reads the registry once, WARNs through NCCL's logger, configures new comms.
TEST(NetSettings, NetInitAppliesGoodValuesAndWarnsOnceForABadOne) {
  std::vector<std::string> logged;
  gLogged = &logged;
  setenv("WIREWISE_NET_RAIL_TIMEOUT_MS", "750", 1);
  setenv("WIREWISE_NET_QUEUE_MS", "fast", 1);
  ASSERT_EQ(netInit(logTo), Status::kOk);  // loopback at least, so there is a device
  unsetenv("WIREWISE_NET_RAIL_TIMEOUT_MS");
  unsetenv("WIREWISE_NET_QUEUE_MS");
  TransportConfig c = currentConfig();
  EXPECT_EQ(c.railTimeoutMs, 750u);
  EXPECT_EQ(c.queueTargetMs, 30u);
  int warnings = 0;
  for (const auto& m : logged) {
    if (m.find("WIREWISE_NET_QUEUE_MS") == std::string::npos) continue;
    ++warnings;
    EXPECT_NE(m.find("\"fast\""), std::string::npos) << m;
    EXPECT_NE(m.find("1 .. 1000"), std::string::npos) << m;
    EXPECT_NE(m.find("using the default 30"), std::string::npos) << m;
  }
  EXPECT_EQ(warnings, 1);
  for (const auto& m : logged) EXPECT_EQ(m.find("WIREWISE_NET_RAIL_TIMEOUT_MS"), std::string::npos) << m;
  gLogged = nullptr;
}

}  // namespace
}  // namespace wirewise::net
