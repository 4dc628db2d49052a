#include "runtime/settings.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <fstream>
#include <map>
#include <sstream>
#include <string>

namespace wirewise {
namespace {

using ::testing::HasSubstr;

struct FakeEnv {
  std::map<std::string, std::string> vars;
  EnvSource source() const {
    return [this](const char* name) -> const char* {
      auto it = vars.find(name);
      return it == vars.end() ? nullptr : it->second.c_str();
    };
  }
};

Settings read(const FakeEnv& env, std::vector<std::string>* warnings) {
  return readSettings(env.source(), "node7", 4242, warnings);
}

TEST(Settings, DefaultsWithEmptyEnvironment) {
  FakeEnv env;
  std::vector<std::string> w;
  Settings s = read(env, &w);
  EXPECT_TRUE(w.empty());
  EXPECT_EQ(s.mode, Mode::Apply);
  EXPECT_EQ(s.config, "");
  EXPECT_EQ(s.logPath, "/tmp/wirewise/node7-4242.jsonl");
  EXPECT_EQ(s.summaryMs, 10000);
  EXPECT_EQ(s.eventPool, 1024);
  EXPECT_EQ(s.logQueue, 8192);
}

TEST(Settings, DefaultLogFollowsTmpdir) {
  FakeEnv env{{{"TMPDIR", "/scratch"}}};
  std::vector<std::string> w;
  EXPECT_EQ(read(env, &w).logPath, "/scratch/wirewise/node7-4242.jsonl");
}

TEST(Settings, GoodValuesAreTaken) {
  FakeEnv env{{{"WIREWISE_MODE", "Observe"},
               {"WIREWISE_CONFIG", "/etc/ww.json"},
               {"WIREWISE_LOG", "/logs/%h/run-%p-100%%.jsonl"},
               {"WIREWISE_SUMMARY_MS", "250"},
               {"WIREWISE_EVENT_POOL", "64"},
               {"WIREWISE_LOG_QUEUE", "16"}}};
  std::vector<std::string> w;
  Settings s = read(env, &w);
  EXPECT_TRUE(w.empty());
  EXPECT_EQ(s.mode, Mode::Observe);
  EXPECT_EQ(s.config, "/etc/ww.json");
  EXPECT_EQ(s.logPath, "/logs/node7/run-4242-100%.jsonl");
  EXPECT_EQ(s.summaryMs, 250);
  EXPECT_EQ(s.eventPool, 64);
  EXPECT_EQ(s.logQueue, 16);
}

TEST(Settings, LogCanBeDisabled) {
  for (const char* off : {"none", "off"}) {
    FakeEnv env{{{"WIREWISE_LOG", off}}};
    std::vector<std::string> w;
    EXPECT_EQ(read(env, &w).logPath, "") << off;
  }
}

struct BadCase {
  const char* name;
  const char* value;
  const char* range;
};

void PrintTo(const BadCase& c, std::ostream* os) { *os << c.name << "=" << c.value; }

class BadSetting : public ::testing::TestWithParam<BadCase> {};

TEST_P(BadSetting, WarnsNamingVariableValueAndRangeThenUsesDefault) {
  const BadCase& c = GetParam();
  FakeEnv env{{{c.name, c.value}}};
  std::vector<std::string> w;
  Settings s = read(env, &w);
  ASSERT_EQ(w.size(), 1u);
  EXPECT_THAT(w[0], HasSubstr(c.name));
  EXPECT_THAT(w[0], HasSubstr(std::string("\"") + c.value + "\""));
  EXPECT_THAT(w[0], HasSubstr(c.range));
  Settings defaults = read(FakeEnv{}, &w);
  EXPECT_EQ(s.mode, defaults.mode);
  EXPECT_EQ(s.summaryMs, defaults.summaryMs);
  EXPECT_EQ(s.eventPool, defaults.eventPool);
  EXPECT_EQ(s.logQueue, defaults.logQueue);
}

INSTANTIATE_TEST_SUITE_P(
    Values, BadSetting,
    ::testing::Values(BadCase{"WIREWISE_MODE", "adaptive", "apply, observe, off"},
                      BadCase{"WIREWISE_SUMMARY_MS", "fast", "100 .. 3600000"},
                      BadCase{"WIREWISE_SUMMARY_MS", "99", "100 .. 3600000"},
                      BadCase{"WIREWISE_SUMMARY_MS", "3600001", "100 .. 3600000"},
                      BadCase{"WIREWISE_SUMMARY_MS", "10s", "100 .. 3600000"},
                      BadCase{"WIREWISE_EVENT_POOL", "-5", "16 .. 1048576"},
                      BadCase{"WIREWISE_EVENT_POOL", "99999999999999999999999", "16 .. 1048576"},
                      BadCase{"WIREWISE_LOG_QUEUE", "0x10", "16 .. 1048576"}));

TEST(Settings, EmptyLogValueWarnsAndKeepsDefault) {
  FakeEnv env{{{"WIREWISE_LOG", ""}}};
  std::vector<std::string> w;
  Settings s = read(env, &w);
  ASSERT_EQ(w.size(), 1u);
  EXPECT_THAT(w[0], HasSubstr("WIREWISE_LOG"));
  EXPECT_EQ(s.logPath, "/tmp/wirewise/node7-4242.jsonl");
}

TEST(Settings, EveryRegisteredSettingIsDocumented) {
  std::ifstream f(std::string(WW_SOURCE_DIR) + "/docs/settings.md");
  ASSERT_TRUE(f.good()) << "docs/settings.md is missing";
  std::stringstream ss;
  ss << f.rdbuf();
  std::string doc = ss.str();
  ASSERT_GE(settingDocs().size(), 6u);
  for (const auto& d : settingDocs()) {
    EXPECT_THAT(doc, HasSubstr(d.name)) << d.name << " is not in docs/settings.md";
    EXPECT_THAT(doc, HasSubstr(d.range)) << d.name << "'s range is not in docs/settings.md";
  }
}

}  // namespace
}  // namespace wirewise
