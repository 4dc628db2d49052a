// `wirewise demo` and `wirewise settings` through the built binary, which loads the built plugin library.
#include <gtest/gtest.h>

#include <unistd.h>

#include <cstdio>
#include <nlohmann/json.hpp>
#include <regex>

#include "common/settings.h"
#include "tests/tools/cli_runner.h"

namespace wirewise::tools {
namespace {

using testing::runCli;
const std::string kSource = WW_SOURCE_DIR;

int countOf(const std::string& text, const std::string& needle) {
  int n = 0;
  for (size_t pos = text.find(needle); pos != std::string::npos; pos = text.find(needle, pos + 1)) ++n;
  return n;
}

// "55 choices: 20 changed, 6 disabled entry -> NCCL's stands, 29 kept"
struct Totals {
  int all = -1, changed = -1, fallback = -1, kept = -1;
};
Totals totalsOf(const std::string& out) {
  std::smatch m;
  Totals t;
  if (std::regex_search(out, m, std::regex(R"((\d+) choices: (\d+) changed, (\d+) disabled entry -> NCCL's stands, )"
                                           R"((\d+) kept)")))
    t = {std::stoi(m[1]), std::stoi(m[2]), std::stoi(m[3]), std::stoi(m[4])};
  return t;
}

TEST(DemoCli, WithoutConfigEverythingIsKept) {
  auto r = runCli("demo", "env -u WIREWISE_CONFIG -u WIREWISE_MODE");
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_NE(r.out.find("ILLUSTRATIVE cost table"), std::string::npos);
  EXPECT_NE(r.out.find("ncclTunerPlugin_v5"), std::string::npos) << r.out;
  Totals t = totalsOf(r.out);
  EXPECT_EQ(t.all, 55);  // 5 collectives x 11 sizes (1 KiB .. 1 GiB, x4)
  EXPECT_EQ(t.changed, 0);
  EXPECT_EQ(t.fallback, 0);
  EXPECT_EQ(countOf(r.out, " changed\n"), 0);
  EXPECT_NE(r.out.find("--config examples/static-table.json"), std::string::npos);
}

TEST(DemoCli, StaticTableChangesChoicesAndShowsTheDisabledEntryFallback) {
  char logPath[] = "/tmp/ww_demo_log_XXXXXX";
  int fd = mkstemp(logPath);
  ASSERT_GE(fd, 0);
  close(fd);
  auto r = runCli("demo --config " + kSource + "/examples/static-table.json --log " + logPath,
                  "env -u WIREWISE_MODE -u WIREWISE_LOG");
  ASSERT_EQ(r.status, 0) << r.err;
  Totals t = totalsOf(r.out);
  EXPECT_EQ(t.all, 55);
  EXPECT_GE(t.changed, 1);
  EXPECT_GE(t.fallback, 1);
  EXPECT_EQ(countOf(r.out, " changed\n"), t.changed);
  EXPECT_EQ(countOf(r.out, "disabled entry -> NCCL's stands\n"), t.fallback);
  // A channel-only rule: NCCL's algorithm stays, its channel count follows the rule.
  EXPECT_NE(r.out.find("4 MiB      ring/simple ch=32    any/any ch=4         ring/simple ch=4     changed"),
            std::string::npos)
      << r.out;

  // The plugin's own log of the same run agrees with what the demo printed.
  auto s = runCli(std::string("log summarize --json ") + logPath);
  unlink(logPath);
  ASSERT_EQ(s.status, 0) << s.err;
  auto j = nlohmann::json::parse(s.out);
  EXPECT_EQ(j["malformed"], 0);
  ASSERT_EQ(j["comms"].size(), 1u);
  const auto& c = j["comms"][0];
  EXPECT_EQ(c["inits"][0]["abi"], "tuner_v5");
  EXPECT_EQ(c["inits"][0]["nranks"], 16);
  EXPECT_EQ(c["tables"][0]["source"], kSource + "/examples/static-table.json");
  EXPECT_EQ(c["finalize"][0]["collectives"], 55);
  EXPECT_EQ(c["finalize"][0]["kept"], t.fallback);  // the plugin counts the calls where its rule could not apply
  EXPECT_GE(c["finalize"][0]["applied"].get<int>(), t.changed);
}

TEST(DemoCli, NcclCsvConfigWorksToo) {
  auto r = runCli("demo --config " + kSource + "/examples/nccl_tuner.conf", "env -u WIREWISE_MODE");
  ASSERT_EQ(r.status, 0) << r.err;
  Totals t = totalsOf(r.out);
  EXPECT_GE(t.changed, 1);
  EXPECT_GE(t.fallback, 1);
  EXPECT_EQ(r.err.find("WARN"), std::string::npos) << r.err;  // the example parses without problems
}

TEST(DemoCli, UnopenablePluginFailsCleanly) {
  auto r = runCli("demo --plugin /nonexistent/libnccl-tuner-x.so");
  EXPECT_EQ(r.status, 1);
  EXPECT_NE(r.err.find("cannot open the tuner library"), std::string::npos) << r.err;
}

TEST(SettingsCli, ListsEveryRegisteredSetting) {
  auto r = runCli("settings");
  ASSERT_EQ(r.status, 0) << r.err;
  ASSERT_FALSE(settingSpecs().empty());
  for (const auto& s : settingSpecs()) {
    EXPECT_NE(r.out.find(std::string(s.name) + " "), std::string::npos) << s.name;
    EXPECT_NE(r.out.find(plainDoc(settingAccepted(s))), std::string::npos) << s.name;
  }
  EXPECT_EQ(r.out.find("random-test"), std::string::npos) << "a test-only value is offered to users";
  EXPECT_EQ(r.out.find('`'), std::string::npos) << "Markdown left in the terminal table";
}

TEST(SettingsCli, NamesAndMarkdownComeFromTheSameTable) {
  auto names = runCli("settings --format names");
  ASSERT_EQ(names.status, 0) << names.err;
  std::string expected;
  for (const auto& s : settingSpecs()) expected += std::string(s.name) + "\n";
  EXPECT_EQ(names.out, expected);
  auto md = runCli("settings --format markdown");
  ASSERT_EQ(md.status, 0) << md.err;
  EXPECT_EQ(md.out, settingsMarkdownTable());
}

}  // namespace
}  // namespace wirewise::tools
