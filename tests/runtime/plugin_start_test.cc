// plugin_start echoes the effective value of every registered WIREWISE_* setting, so that a log shows
// what a run was configured with. The echo is written by hand in runtime.cc; this test catches a setting
// added to the registry (runtime/settings.cc) and forgotten there.
#include <gtest/gtest.h>

#include <map>
#include <nlohmann/json.hpp>
#include <string>

#include "runtime/runtime.h"
#include "common/settings.h"
#include "tests/runtime/log_lines.h"
#include "tests/telemetry/collectors/fake_sysfs.h"

namespace wirewise {
namespace {

TEST(PluginStart, EchoesEveryRegisteredSetting) {
  collectors::testing::FakeSysfs sys;
  const std::string log = sys.root() + "/wirewise.jsonl";
  std::map<std::string, std::string> env = {{"WIREWISE_SYSFS_ROOT", sys.root()},
                                            {"WIREWISE_COLLECT_MS", "0"},
                                            {"WIREWISE_NET_HEDGE", "4"},
                                            {"WIREWISE_LOG", log}};
  ASSERT_EQ(Runtime::references(), 0);
  Runtime::acquire([&](const char* k) -> const char* {
    auto it = env.find(k);
    return it == env.end() ? nullptr : it->second.c_str();
  });
  Runtime::release();
  int starts = 0;
  for (const auto& e : testing::readLog(log)) {
    if (e.value("event", "") != "plugin_start") continue;
    ++starts;
    const auto& s = e["settings"];
    for (const SettingSpec& d : settingSpecs()) EXPECT_TRUE(s.contains(d.name)) << d.name << " is not echoed";
    EXPECT_EQ(s.size(), settingSpecs().size()) << s.dump();
    EXPECT_EQ(s.value("WIREWISE_NET_HEDGE", ""), "4");
  }
  EXPECT_EQ(starts, 1);
}

}  // namespace
}  // namespace wirewise
