#include "common/settings.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
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

// The default log's directory is per user: "wirewise-<effective uid>".
const std::string kUid = std::to_string(::geteuid());

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
  EXPECT_EQ(s.logPath, "/tmp/wirewise-" + kUid + "/node7-4242.jsonl");
  EXPECT_EQ(s.summaryMs, 10000);
  EXPECT_EQ(s.eventPool, 1024);
  EXPECT_EQ(s.logQueue, 8192);
}

TEST(Settings, DefaultLogFollowsTmpdir) {
  FakeEnv env{{{"TMPDIR", "/scratch"}}};
  std::vector<std::string> w;
  EXPECT_EQ(read(env, &w).logPath, "/scratch/wirewise-" + kUid + "/node7-4242.jsonl");
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

TEST(Settings, PathsExpandTheUserId) {
  FakeEnv env{{{"WIREWISE_LOG", "/logs/%u/%h.jsonl"}}};
  std::vector<std::string> w;
  EXPECT_EQ(read(env, &w).logPath, "/logs/" + kUid + "/node7.jsonl");
  EXPECT_EQ(expandSettingPath("a-%u-%%u", env.source(), "h", 1), "a-" + kUid + "-%u");
}

// One file per rank and job, named by what torchrun, srun or mpirun set; torchrun's default run id "none"
// names no job and is passed over.
TEST(Settings, PathsExpandTheLaunchersRankAndJob) {
  std::vector<std::string> w;
  FakeEnv torchrun{{{"WIREWISE_LOG", "/logs/%j/rank%r-%h.jsonl"}, {"RANK", "12"}, {"TORCHELASTIC_RUN_ID", "run/7"}}};
  EXPECT_EQ(read(torchrun, &w).logPath, "/logs/run_7/rank12-node7.jsonl");
  FakeEnv srun{{{"RANK", ""}, {"SLURM_PROCID", "3"}, {"TORCHELASTIC_RUN_ID", "none"}, {"SLURM_JOB_ID", "4242"}}};
  EXPECT_EQ(expandSettingPath("%j-%r", srun.source(), "h", 1), "4242-3");
  FakeEnv mpirun{{{"OMPI_COMM_WORLD_RANK", "5"}, {"PMIX_NAMESPACE", "prterun-x-1@1"}}};
  EXPECT_EQ(expandSettingPath("%j-%r", mpirun.source(), "h", 1), "prterun-x-1@1-5");
  FakeEnv none{{}};
  EXPECT_EQ(expandSettingPath("%j-%r-%%r", none.source(), "h", 1), "nojob-norank-%r");
  EXPECT_TRUE(w.empty());
}

// The key file's path is a setting like any other (the file is read, with its checks, by the rendezvous);
// its path is echoed, never its content.
TEST(Settings, TheJobKeyFileIsAPath) {
  std::vector<std::string> w;
  Settings s = read(FakeEnv{{{"WIREWISE_JOB_KEY_FILE", "/home/u/.wirewise-key"}}}, &w);
  EXPECT_TRUE(w.empty());
  EXPECT_EQ(s.jobKeyFile, "/home/u/.wirewise-key");
  EXPECT_EQ(settingsEcho(s).at("WIREWISE_JOB_KEY_FILE"), "/home/u/.wirewise-key");
  EXPECT_STREQ(settingName(&Settings::jobKeyFile), "WIREWISE_JOB_KEY_FILE");
  s = read(FakeEnv{{{"WIREWISE_JOB_KEY_FILE", ""}}}, &w);
  EXPECT_EQ(s.jobKeyFile, "");
  ASSERT_EQ(w.size(), 1u);
  EXPECT_THAT(w[0], HasSubstr("WIREWISE_JOB_KEY_FILE is set but empty"));
  EXPECT_THAT(w[0], HasSubstr("chmod 600"));
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
  EXPECT_EQ(s.logPath, "/tmp/wirewise-" + kUid + "/node7-4242.jsonl");
}

TEST(Settings, BadEnumValuesAreCaseInsensitiveAndNameTheListedValues) {
  std::vector<std::string> w;
  EXPECT_EQ(read(FakeEnv{{{"WIREWISE_SYNC", "Deterministic"}}}, &w).sync, SyncMode::Deterministic);
  EXPECT_TRUE(w.empty());
  Settings s = read(FakeEnv{{{"WIREWISE_SYNC", "maybe"}}}, &w);
  EXPECT_EQ(s.sync, SyncMode::On);
  ASSERT_EQ(w.size(), 1u);
  EXPECT_EQ(w[0], "ignoring WIREWISE_SYNC=\"maybe\": accepted values are off, on, deterministic; using the default on");
}

// On by default (issue: only NCCL_TUNER_PLUGIN and NCCL_PROFILER_PLUGIN set): agreement in production mode
// and the adaptive policy; one variable turns it to measuring only.
TEST(Settings, AdaptationIsOnByDefault) {
  std::vector<std::string> w;
  Settings s = read(FakeEnv{}, &w);
  EXPECT_TRUE(w.empty());
  EXPECT_EQ(s.mode, Mode::Apply);
  EXPECT_EQ(s.sync, SyncMode::On);
  EXPECT_EQ(s.policy, PolicyKind::Adaptive);
  EXPECT_EQ(read(FakeEnv{{{"WIREWISE_MODE", "observe"}}}, &w).mode, Mode::Observe);
}

// random-test changes tables at every boundary: the tests need it, a user must never be offered it.
TEST(Settings, TheTestPolicyIsAcceptedButNeverOffered) {
  std::vector<std::string> w;
  EXPECT_EQ(read(FakeEnv{{{"WIREWISE_POLICY", "random-test"}}}, &w).policy, PolicyKind::RandomTest);
  EXPECT_TRUE(w.empty());
  for (const SettingSpec& spec : settingSpecs()) {
    EXPECT_EQ(settingAccepted(spec).find("random-test"), std::string::npos) << spec.name;
    EXPECT_EQ(std::string(spec.doc).find("random-test"), std::string::npos) << spec.name;
  }
  read(FakeEnv{{{"WIREWISE_POLICY", "bandit"}}}, &w);
  ASSERT_EQ(w.size(), 1u);
  EXPECT_THAT(w[0], HasSubstr("accepted values are static, adaptive;"));
}

TEST(Settings, ZeroTurnsOffWhereTheRangeSaysSo) {
  std::vector<std::string> w;
  EXPECT_EQ(read(FakeEnv{{{"WIREWISE_COLLECT_MS", "0"}}}, &w).collectMs, 0);
  EXPECT_TRUE(w.empty());
  EXPECT_EQ(read(FakeEnv{{{"WIREWISE_COLLECT_MS", "50"}}}, &w).collectMs, 1000);
  ASSERT_EQ(w.size(), 1u);
  EXPECT_THAT(w[0], HasSubstr("accepted range is 0, or 100 .. 600000; using the default 1000"));
  w.clear();
  EXPECT_EQ(read(FakeEnv{{{"WIREWISE_BOUNDARY_SPACING", "4"}}}, &w).boundarySpacing, 0);
  EXPECT_EQ(w.size(), 1u);
  w.clear();
  EXPECT_EQ(read(FakeEnv{{{"WIREWISE_EVENT_POOL", "0"}}}, &w).eventPool, 1024) << "0 is no off switch here";
  EXPECT_EQ(w.size(), 1u);
}

// Asking to give up after 500 ms is a clear intent with an unsafe amount: it is raised, not dropped.
TEST(Settings, AGiveUpTooShortIsRaisedToTheFloor) {
  std::vector<std::string> w;
  Settings s = read(FakeEnv{{{"WIREWISE_SYNC_GIVE_UP_MS", "500"}}}, &w);
  EXPECT_EQ(s.syncGiveUpMs, 1000);
  ASSERT_EQ(w.size(), 1u);
  EXPECT_THAT(w[0], HasSubstr("WIREWISE_SYNC_GIVE_UP_MS=500 is below 1000"));
  w.clear();
  EXPECT_EQ(read(FakeEnv{{{"WIREWISE_SYNC_GIVE_UP_MS", "0"}}}, &w).syncGiveUpMs, 0);
  EXPECT_EQ(read(FakeEnv{{{"WIREWISE_SYNC_GIVE_UP_MS", "5000"}}}, &w).syncGiveUpMs, 5000);
  EXPECT_TRUE(w.empty());
  // A bad value falls back to the default, which gives up after 5 minutes: well inside PyTorch's 10-minute
  // NCCL timeout, so that a lost coordinator fails the collective instead of hanging it unseen.
  EXPECT_EQ(read(FakeEnv{{{"WIREWISE_SYNC_GIVE_UP_MS", "-3"}}}, &w).syncGiveUpMs, 300000);
  EXPECT_EQ(w.size(), 1u);
  EXPECT_EQ(read(FakeEnv{}, &w).syncGiveUpMs, 300000);
}

TEST(Settings, RealsAndSwitches) {
  std::vector<std::string> w;
  Settings s = read(FakeEnv{{{"WIREWISE_EXPLORE_SHARE", "0.05"}, {"WIREWISE_CUPTI", "ON"}, {"WIREWISE_NET_ENGINE", "0"}}},
                    &w);
  EXPECT_TRUE(w.empty());
  EXPECT_DOUBLE_EQ(s.exploreShare, 0.05);
  EXPECT_TRUE(s.cupti);
  EXPECT_FALSE(s.netEngine);
  s = read(FakeEnv{{{"WIREWISE_EXPLORE_SHARE", "0.5"}, {"WIREWISE_CUPTI", "yes"}}}, &w);
  EXPECT_DOUBLE_EQ(s.exploreShare, defaults::kExploreShare);
  EXPECT_FALSE(s.cupti);
  ASSERT_EQ(w.size(), 2u);
  EXPECT_THAT(w[0], HasSubstr("accepted range is 0 .. 0.2; using the default 0.015"));
  EXPECT_THAT(w[1], HasSubstr("accepted values are on, off; using the default off"));
}

// The job key authenticates the control plane: it is used, never echoed.
TEST(Settings, TheJobKeyIsKeptButNeverEchoed) {
  std::vector<std::string> w;
  Settings s = read(FakeEnv{{{"WIREWISE_JOB_KEY", "hunter2"}}}, &w);
  EXPECT_EQ(s.jobKey.value, "hunter2");
  nlohmann::json echo = settingsEcho(s);
  EXPECT_EQ(echo.at("WIREWISE_JOB_KEY"), "(set)");
  EXPECT_EQ(echo.dump().find("hunter2"), std::string::npos);
  EXPECT_EQ(settingsEcho(read(FakeEnv{}, &w)).at("WIREWISE_JOB_KEY"), "(derived)");
}

TEST(Settings, TheEchoHasEveryRowAndTheValuesInForce) {
  std::vector<std::string> w;
  Settings s = read(FakeEnv{{{"WIREWISE_NET_HEDGE", "4"}, {"WIREWISE_MODE", "observe"}}}, &w);
  nlohmann::json echo = settingsEcho(s);
  EXPECT_EQ(echo.size(), settingSpecs().size());
  for (const SettingSpec& spec : settingSpecs()) EXPECT_TRUE(echo.contains(spec.name)) << spec.name;
  EXPECT_EQ(echo.at("WIREWISE_NET_HEDGE"), "4");
  EXPECT_EQ(echo.at("WIREWISE_MODE"), "observe");
  EXPECT_EQ(echo.at("WIREWISE_EXPLORE_SHARE"), "0.015000");  // as the echo has always printed reals
  EXPECT_EQ(echo.at("WIREWISE_LOG"), "/tmp/wirewise-" + kUid + "/node7-4242.jsonl");
}

// Names outside the table come from settingName; one for every member, each distinct.
TEST(Settings, EveryMemberHasOneName) {
  EXPECT_STREQ(settingName(&Settings::sync), "WIREWISE_SYNC");
  EXPECT_STREQ(settingName(&Settings::jobKey), "WIREWISE_JOB_KEY");
  EXPECT_STREQ(settingName(&Settings::netEngine), "WIREWISE_NET_ENGINE");
  EXPECT_STREQ(settingName(&Settings::policy), "WIREWISE_POLICY");
  std::vector<std::string> names;
  for (const SettingSpec& spec : settingSpecs()) names.push_back(spec.name);
  std::sort(names.begin(), names.end());
  EXPECT_EQ(std::adjacent_find(names.begin(), names.end()), names.end()) << "a name used twice";
  // One row per member: the table and the struct cannot drift apart silently.
  EXPECT_EQ(settingSpecs().size(), 37u) << "a member was added to Settings or a row to the table: keep both";
}

TEST(Settings, OnlyTheNetFacesRowsAreItsOwn) {
  std::vector<SettingProblem> p;
  FakeEnv env{{{"WIREWISE_NET_STREAMS", "99"}, {"WIREWISE_SUMMARY_MS", "1"}}};
  readSettings(env.source(), "h", 1, &p);
  ASSERT_EQ(p.size(), 2u);
  for (const SettingProblem& x : p)
    EXPECT_EQ(x.spec->group == SettingGroup::Net, std::string(x.spec->name).starts_with("WIREWISE_NET_")) << x.message;
}

TEST(Settings, PlainDocDropsTheMarkup) {
  EXPECT_EQ(plainDoc("see [policy.md](policy.md#x) and `0`"), "see policy.md and 0");
  EXPECT_EQ(plainDoc("a [bracket without link"), "a [bracket without link");
}

// docs/settings.md carries the table generated from the rows; regenerate with
// `build/bin/wirewise settings --format markdown` (tools/settings_doc.py --write does it in place).
TEST(Settings, TheDocumentedTableIsTheGeneratedOne) {
  std::ifstream f(std::string(WW_SOURCE_DIR) + "/docs/settings.md");
  ASSERT_TRUE(f.good()) << "docs/settings.md is missing";
  std::stringstream ss;
  ss << f.rdbuf();
  EXPECT_NE(ss.str().find(settingsMarkdownTable()), std::string::npos)
      << "docs/settings.md is stale: run python3 tools/settings_doc.py --write build/bin/wirewise";
}

}  // namespace
}  // namespace wirewise
