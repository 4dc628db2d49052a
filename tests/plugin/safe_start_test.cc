// What a process is told at start, through the NCCL-faithful loader and the real library: a tuner without
// the profiler face (NCCL_PROFILER_PLUGIN unset: NCCL initialises the profiler first and finds none), a
// tuner bound at v2..v4, a planted log symlink, the per-user default log directory, a refused job-key
// file. Every test counts NCCL's WARN lines: one clear line each, never one per communicator.
//
// This binary exports ncclGetVersion (ENABLE_EXPORTS), as a process running NCCL does, so that the plugin
// can name the NCCL version it runs on.
#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdarg>
#include <mutex>
#include <random>

#include "tests/free_port.h"
#include "tests/wait_until.h"
#include "tests/plugin/plugin_fixture.h"
#include "tests/runtime/log_lines.h"

// The NCCL this "process" runs: 2.27.5, an NCCL that binds tuner v4.
extern "C" __attribute__((visibility("default"))) ncclResult_t ncclGetVersion(int* version) {
  *version = 22705;
  return ncclSuccess;
}

namespace wirewise::testing {
namespace {

std::mutex gMu;
std::vector<std::pair<int, std::string>> gLines;

// NCCL's logger stand-in (the plugin keeps the first non-null logger of the process: every test passes it).
void capture(ncclDebugLogLevel level, unsigned long, const char*, int, const char* fmt, ...) {
  char buf[2048];
  va_list ap;
  va_start(ap, fmt);
  std::vsnprintf(buf, sizeof buf, fmt, ap);
  va_end(ap);
  std::lock_guard<std::mutex> lock(gMu);
  gLines.emplace_back(level, buf);
}

// Lines at `level` that contain every part.
std::vector<std::string> linesWith(int level, const std::vector<std::string>& parts) {
  std::lock_guard<std::mutex> lock(gMu);
  std::vector<std::string> out;
  for (const auto& [l, text] : gLines) {
    bool all = l == level;
    for (const auto& p : parts) all = all && text.find(p) != std::string::npos;
    if (all) out.push_back(text);
  }
  return out;
}

std::string allLines() {
  std::lock_guard<std::mutex> lock(gMu);
  std::string out;
  for (const auto& [l, text] : gLines) out += (l == NCCL_LOG_WARN ? "WARN " : "INFO ") + text + "\n";
  return out;
}

class SafeStart : public PluginTest {
 protected:
  void SetUp() override {
    PluginTest::SetUp();
    for (const char* v : {"WIREWISE_SYNC", "WIREWISE_POLICY", "WIREWISE_COORDINATOR", "WIREWISE_JOB_KEY",
                          "WIREWISE_JOB_KEY_FILE", "NCCL_PROFILER_PLUGIN"})
      unsetenv(v);
    setenv("WIREWISE_COLLECT_MS", "0", 1);
    std::lock_guard<std::mutex> lock(gMu);
    gLines.clear();
  }
  void TearDown() override {
    for (const char* v : {"WIREWISE_SYNC", "WIREWISE_POLICY", "WIREWISE_COORDINATOR", "WIREWISE_JOB_KEY",
                          "WIREWISE_JOB_KEY_FILE", "NCCL_PROFILER_PLUGIN", "WIREWISE_COLLECT_MS", "WIREWISE_MODE"})
      unsetenv(v);
    PluginTest::TearDown();
  }
  // Agreement with the adaptive policy, on a coordinator of this test's own (a free port, a fresh key).
  void askForAdaptation() {
    setenv("WIREWISE_SYNC", "on", 1);
    setenv("WIREWISE_POLICY", "adaptive", 1);
    setenv("WIREWISE_COORDINATOR", ("127.0.0.1:" + std::to_string(wirewise::freeLoopbackPort())).c_str(), 1);
    setenv("WIREWISE_JOB_KEY", std::to_string(std::random_device{}()).c_str(), 1);
  }
  // One communicator's init as NCCL 2.28 runs it: the profiler library first, then the tuner's.
  struct Comm {
    loader::ProfilerComm prof;
    loader::TunerComm tuner;
  };
  void initComm(loader::ProfilerLibrary& profLib, loader::TunerLibrary& tunerLib, Comm* c, uint64_t id) {
    profLib.initComm(&c->prof, id, "comm", 1, 8, 0, capture);
    tunerLib.load(&c->tuner);
    ASSERT_NE(c->tuner.tuner, nullptr) << tunerLib.why();
    ncclNvlDomainInfo_v5_t nvl{1, 8, 8};
    ncclTunerConstants_v5_t constants{};
    ASSERT_EQ(c->tuner.tuner->init(&c->tuner.context, id, 8, 1, capture, &nvl, &constants), ncclSuccess);
  }
  void finalizeComm(loader::ProfilerLibrary& profLib, loader::TunerLibrary& tunerLib, Comm* c) {
    c->tuner.tuner->finalize(c->tuner.context);
    tunerLib.unload(&c->tuner);
    profLib.finalizeComm(&c->prof);
  }
  // Two communicators with the profiler library NCCL would find for `profilerEnv` (nullopt: unset).
  void runTwoComms(std::optional<std::string> profilerEnv) {
    loader::ProfilerLibrary profLib(profilerEnv, std::nullopt);
    loader::TunerLibrary tunerLib(std::string(WW_TUNER_SO), std::nullopt);
    Comm a, b;
    initComm(profLib, tunerLib, &a, 0x5afe01);
    initComm(profLib, tunerLib, &b, 0x5afe02);
    EXPECT_EQ(profLib.profiler() != nullptr, profilerEnv == std::string(WW_PROFILER_SO)) << profLib.why();
    finalizeComm(profLib, tunerLib, &b);
    finalizeComm(profLib, tunerLib, &a);
  }
  std::optional<bool> profilerFaceInPluginStart() const {
    auto starts = logEvents("plugin_start");
    if (starts.size() != 1 || !starts[0].contains("profiler_face")) return std::nullopt;
    return starts[0]["profiler_face"].get<bool>();
  }
};

constexpr const char* kNoProfiler = "no profiler face";

TEST_F(SafeStart, NoProfilerFaceIsOneWarnAtTheFirstInitAndInPluginStart) {
  askForAdaptation();
  runTwoComms(std::nullopt);
  auto warns = linesWith(NCCL_LOG_WARN, {kNoProfiler});
  ASSERT_EQ(warns.size(), 1u) << allLines();
  for (const char* part : {"NCCL_PROFILER_PLUGIN is unset", "nothing adapts", "NCCL's own choices",
                           "adaptation needs NCCL_PROFILER_PLUGIN=wirewise"})
    EXPECT_NE(warns[0].find(part), std::string::npos) << part << " in: " << warns[0];
  EXPECT_EQ(profilerFaceInPluginStart(), std::optional<bool>(false));
}

TEST_F(SafeStart, NoProfilerFaceNamesTheStaticTableThatStands) {
  askForAdaptation();
  useConfig(R"({"version": 1, "rules": []})");
  runTwoComms(std::nullopt);
  auto warns = linesWith(NCCL_LOG_WARN, {kNoProfiler, "its static table from " + dir_ + "/table.json"});
  EXPECT_EQ(warns.size(), 1u) << allLines();
}

TEST_F(SafeStart, NoProfilerFaceNamesAnotherProfilerPlugin) {
  setenv("WIREWISE_MODE", "observe", 1);
  setenv("NCCL_PROFILER_PLUGIN", "inspector", 1);
  runTwoComms(std::string("inspector"));
  auto warns = linesWith(NCCL_LOG_WARN, {kNoProfiler, "NCCL_PROFILER_PLUGIN=inspector loaded no wirewise profiler",
                                         "observe mode measures nothing"});
  EXPECT_EQ(warns.size(), 1u) << allLines();
}

// Adaptation is on by default: with only NCCL_TUNER_PLUGIN set, the missing profiler face is worth a WARN.
TEST_F(SafeStart, ByDefaultNoProfilerFaceIsOneWarn) {
  runTwoComms(std::nullopt);
  EXPECT_EQ(linesWith(NCCL_LOG_WARN, {kNoProfiler, "adaptation needs NCCL_PROFILER_PLUGIN=wirewise"}).size(), 1u)
      << allLines();
  EXPECT_EQ(profilerFaceInPluginStart(), std::optional<bool>(false));
}

TEST_F(SafeStart, WithoutAdaptationAskedNoProfilerFaceIsOnlyAnInfo) {
  setenv("WIREWISE_SYNC", "off", 1);
  runTwoComms(std::nullopt);  // apply mode, agreement off: the static table needs no measurements
  EXPECT_TRUE(linesWith(NCCL_LOG_WARN, {kNoProfiler}).empty()) << allLines();
  EXPECT_EQ(linesWith(NCCL_LOG_INFO, {kNoProfiler}).size(), 1u) << allLines();
  EXPECT_EQ(profilerFaceInPluginStart(), std::optional<bool>(false));
}

TEST_F(SafeStart, WithTheProfilerFaceNothingIsSaid) {
  askForAdaptation();
  runTwoComms(std::string(WW_PROFILER_SO));
  EXPECT_TRUE(linesWith(NCCL_LOG_WARN, {kNoProfiler}).empty()) << allLines();
  EXPECT_TRUE(linesWith(NCCL_LOG_INFO, {kNoProfiler}).empty()) << allLines();
  EXPECT_EQ(profilerFaceInPluginStart(), std::optional<bool>(true));
}

// NCCL before 2.28.3 binds an older tuner; this binary's ncclGetVersion says 2.27.5.
class LegacyTuner : public SafeStart, public ::testing::WithParamInterface<int> {};

TEST_P(LegacyTuner, OneWarnThatAdaptationNeedsTunerV5NamingTheNcclVersion) {
  askForAdaptation();
  std::string why;
  auto tuner = loader::Tuner::loadVersion(pluginHandle(), GetParam(), &why);
  auto prof = loader::Profiler::loadVersion(pluginHandle(), 5, &why);
  ASSERT_TRUE(tuner && prof) << why;
  void *p1 = nullptr, *p2 = nullptr, *t1 = nullptr, *t2 = nullptr;
  int mask = 0;
  ASSERT_EQ(prof->init(&p1, 1, &mask, "a", 1, 8, 0, capture), ncclSuccess);
  ASSERT_EQ(tuner->init(&t1, 1, 8, 1, capture, nullptr, nullptr), ncclSuccess);
  ASSERT_EQ(prof->init(&p2, 2, &mask, "b", 1, 8, 0, capture), ncclSuccess);
  ASSERT_EQ(tuner->init(&t2, 2, 8, 1, capture, nullptr, nullptr), ncclSuccess);
  for (void* c : {t1, t2}) tuner->finalize(c);
  for (void* c : {p1, p2}) prof->finalize(c);
  const std::string v = "tuner v" + std::to_string(GetParam());
  auto warns = linesWith(NCCL_LOG_WARN, {v});
  if (GetParam() == 5) {
    EXPECT_TRUE(warns.empty()) << allLines();
    return;
  }
  ASSERT_EQ(warns.size(), 1u) << allLines();
  for (const char* part : {"2.27.5", "no communicator id", "adaptation needs tuner v5", "NCCL 2.28.3 or later"})
    EXPECT_NE(warns[0].find(part), std::string::npos) << part << " in: " << warns[0];
  EXPECT_TRUE(linesWith(NCCL_LOG_WARN, {kNoProfiler}).empty()) << allLines();
}

INSTANTIATE_TEST_SUITE_P(EachVersion, LegacyTuner, ::testing::Values(2, 3, 4, 5),
                         [](const auto& param) { return "v" + std::to_string(param.param); });

TEST_F(SafeStart, AnOlderTunerWithoutAdaptationAskedIsOnlyAnInfo) {
  setenv("WIREWISE_SYNC", "off", 1);
  std::string why;
  auto tuner = loader::Tuner::loadVersion(pluginHandle(), 4, &why);
  ASSERT_TRUE(tuner) << why;
  void* t = nullptr;
  ASSERT_EQ(tuner->init(&t, 1, 8, 1, capture, nullptr, nullptr), ncclSuccess);
  tuner->finalize(t);
  EXPECT_TRUE(linesWith(NCCL_LOG_WARN, {"tuner v4"}).empty()) << allLines();
  EXPECT_EQ(linesWith(NCCL_LOG_INFO, {"tuner v4", "2.27.5"}).size(), 1u) << allLines();
}

// A communicator captured into a CUDA graph: NCCL calls the tuner while capturing only; a replay makes no
// tuner call and no profiler event. With the defaults (agreement on, the adaptive policy, a coordinator of
// this process's own) its two members, both in this process, agree on a first boundary they never reach:
// the captured choices are NCCL's, nothing waits, and finalizing does not hang.
TEST_F(SafeStart, ACapturedCommunicatorKeepsItsTableAndNeverWaits) {
  std::string why;
  auto tuner = loader::Tuner::loadVersion(pluginHandle(), 5, &why);
  ASSERT_TRUE(tuner) << why;
  void* members[2] = {nullptr, nullptr};
  for (void*& m : members) {
    ncclNvlDomainInfo_v5_t nvl{1, 2, 2};
    ncclTunerConstants_v5_t constants{};
    ASSERT_EQ(tuner->init(&m, 0xCA97u, 2, 1, capture, &nvl, &constants), ncclSuccess);
  }
  constexpr int kCaptured = 20;
  for (int i = 0; i < kCaptured; ++i)
    for (void* m : members) {
      float table[NCCL_NUM_ALGORITHMS][NCCL_NUM_PROTOCOLS];
      for (auto& row : table)
        for (float& c : row) c = 10.0f;
      int nCh = 0;
      ASSERT_EQ(tuner->getCollInfo(m, ncclFuncAllReduce, size_t{1} << 20, 1, table, 0, &nCh), ncclSuccess);
      EXPECT_EQ(nCh, 0) << "a captured collective was changed";
    }
  // The replays: no calls. The schedule is agreed meanwhile (verdict 0 reaches the members; the process
  // logs it once, for both)...
  ASSERT_TRUE(waitUntil([&] { return !logEvents("verdict").empty(); }, std::chrono::seconds(20))) << allLines();
  EXPECT_EQ(logEvents("verdict").size(), 1u) << allLines();
  EXPECT_GT(logEvents("verdict")[0]["boundary"].get<uint64_t>(), static_cast<uint64_t>(kCaptured));
  // ...and the comm ends without waiting for anything.
  const auto t0 = std::chrono::steady_clock::now();
  for (void* m : members) tuner->finalize(m);
  EXPECT_LT(std::chrono::steady_clock::now() - t0, std::chrono::seconds(2));
  auto ends = logEvents("comm_finalize");
  ASSERT_EQ(ends.size(), 2u);
  for (const auto& e : ends) {
    EXPECT_EQ(e["collectives"].get<uint64_t>(), static_cast<uint64_t>(kCaptured));
    EXPECT_EQ(e["waited_us"].get<uint64_t>(), 0u);
    EXPECT_EQ(e["applied"].get<uint64_t>(), 0u);
  }
}

// One tuner v5 communicator, initialised and finalised: the runtime starts and stops once. Unless a test
// asked for agreement, it is off: the tests that use this count WARN lines about files, and a tuner loaded
// without the profiler face (NCCL_PROFILER_PLUGIN is unset here) would add the WARN that nothing adapts.
void oneComm() {
  setenv("WIREWISE_SYNC", "off", 0);
  std::string why;
  auto tuner = loader::Tuner::loadVersion(pluginHandle(), 5, &why);
  ASSERT_TRUE(tuner) << why;
  void* t = nullptr;
  ASSERT_EQ(tuner->init(&t, 7, 8, 1, capture, nullptr, nullptr), ncclSuccess);
  tuner->finalize(t);
}

TEST_F(SafeStart, APlantedLogSymlinkIsRefusedWithOneWarn) {
  const std::string victim = dir_ + "/victim";
  std::ofstream(victim) << "precious\n";
  ASSERT_EQ(::symlink(victim.c_str(), logPath_.c_str()), 0);
  oneComm();
  auto warns = linesWith(NCCL_LOG_WARN, {logPath_, "symbolic link", "remove it", "WIREWISE_LOG"});
  EXPECT_EQ(warns.size(), 1u) << allLines();
  EXPECT_EQ(linesWith(NCCL_LOG_WARN, {}).size(), 1u) << allLines();
  std::ifstream in(victim);
  std::stringstream text;
  text << in.rdbuf();
  EXPECT_EQ(text.str(), "precious\n");  // nothing appended through the link
}

TEST_F(SafeStart, TheDefaultLogLiesInAPrivateDirectoryOfTheUser) {
  unsetenv("WIREWISE_LOG");
  setenv("TMPDIR", dir_.c_str(), 1);
  oneComm();
  unsetenv("TMPDIR");
  const std::string own = dir_ + "/wirewise-" + std::to_string(::geteuid());
  struct stat st{};
  ASSERT_EQ(::stat(own.c_str(), &st), 0) << allLines();
  EXPECT_EQ(st.st_mode & 0777, 0700u);
  char host[256] = {};
  ::gethostname(host, sizeof host - 1);
  const std::string log = own + "/" + host + "-" + std::to_string(::getpid()) + ".jsonl";
  ASSERT_EQ(::stat(log.c_str(), &st), 0) << allLines();
  EXPECT_EQ(st.st_mode & 0777, 0600u);
  EXPECT_FALSE(readLog(log).empty());
  EXPECT_TRUE(linesWith(NCCL_LOG_WARN, {}).empty()) << allLines();
}

TEST_F(SafeStart, ADefaultLogDirectoryOfAnotherUserIsRefusedAndTheLogIsOff) {
  if (::geteuid() != 0) GTEST_SKIP() << "needs root to give a directory to another user (chown)";
  unsetenv("WIREWISE_LOG");
  setenv("TMPDIR", dir_.c_str(), 1);
  const std::string own = dir_ + "/wirewise-" + std::to_string(::geteuid());
  ASSERT_EQ(::mkdir(own.c_str(), 0755), 0);
  ASSERT_EQ(::chown(own.c_str(), 4242, 4242), 0);
  oneComm();
  unsetenv("TMPDIR");
  auto warns = linesWith(NCCL_LOG_WARN, {own, "belongs to uid 4242", "remove it", "WIREWISE_LOG"});
  EXPECT_EQ(warns.size(), 1u) << allLines();
  EXPECT_EQ(linesWith(NCCL_LOG_WARN, {}).size(), 1u) << allLines();
  EXPECT_TRUE(std::filesystem::is_empty(own));  // nothing written into it
}

TEST_F(SafeStart, AKeyFileOthersCanReadIsRefusedAndNoCoordinatorIsJoined) {
  askForAdaptation();
  unsetenv("WIREWISE_JOB_KEY");
  const std::string key = dir_ + "/job.key";
  std::ofstream(key) << "s3cret\n";
  ASSERT_EQ(::chmod(key.c_str(), 0644), 0);
  setenv("WIREWISE_JOB_KEY_FILE", key.c_str(), 1);
  runTwoComms(std::string(WW_PROFILER_SO));
  auto warns = linesWith(NCCL_LOG_WARN, {"WIREWISE_JOB_KEY_FILE=" + key, "refused", "chmod 600 " + key,
                                         "joins no coordinator"});
  EXPECT_EQ(warns.size(), 1u) << allLines();
  EXPECT_EQ(linesWith(NCCL_LOG_WARN, {}).size(), 1u) << allLines();
  EXPECT_TRUE(logEvents("control_start").empty());  // no control plane, no coordinator
  EXPECT_EQ(allLines().find("s3cret"), std::string::npos);
}

TEST_F(SafeStart, AKeyFileOfTheOwnerAloneIsTheKey) {
  askForAdaptation();
  unsetenv("WIREWISE_JOB_KEY");
  const std::string key = dir_ + "/job.key";
  std::ofstream(key) << "s3cret\n";
  ASSERT_EQ(::chmod(key.c_str(), 0600), 0);
  setenv("WIREWISE_JOB_KEY_FILE", key.c_str(), 1);
  runTwoComms(std::string(WW_PROFILER_SO));
  EXPECT_TRUE(linesWith(NCCL_LOG_WARN, {}).empty()) << allLines();
  auto started = logEvents("control_start");
  ASSERT_EQ(started.size(), 1u);
  EXPECT_EQ(started[0].value("job_key", ""), "WIREWISE_JOB_KEY_FILE");
  std::ifstream in(logPath_);
  std::stringstream text;
  text << in.rdbuf();
  EXPECT_EQ(text.str().find("s3cret"), std::string::npos);  // the path is echoed, the key never
}

}  // namespace
}  // namespace wirewise::testing
