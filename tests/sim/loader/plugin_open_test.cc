// Library resolution: NCCL 2.28.9's candidate names, "none", STATIC_PLUGIN and the net-library fallback.
// Tests of bare names rerun themselves in a child process whose LD_LIBRARY_PATH is the fake plugin directory,
// since the dynamic loader reads that variable only at startup.
#include <dlfcn.h>
#include <spawn.h>
#include <sys/wait.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>

#include "sim/loader/nccl_loader.h"
#include "tests/sim/loader/loader_test_util.h"

namespace wirewise::loader {
namespace {

using ::testing::ElementsAre;

struct Closer {
  OpenResult r;
  ~Closer() {
    if (r.handle != nullptr) dlclose(r.handle);
  }
};

constexpr const char* kChildFlag = "WW_LOADER_SEARCH_PATH_CHILD";

// Reruns only the current test in a child with LD_LIBRARY_PATH set; returns its exit status (0 = passed).
int rerunWithLibraryPath() {
  const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
  const std::string filter = std::string("--gtest_filter=") + info->test_suite_name() + "." + info->name();
  const std::string libPath = std::string("LD_LIBRARY_PATH=") + WW_FAKE_PLUGIN_DIR;
  const std::string flag = std::string(kChildFlag) + "=1";
  std::string exe = std::filesystem::read_symlink("/proc/self/exe").string();
  char* argv[] = {exe.data(), const_cast<char*>(filter.c_str()), nullptr};
  char* envp[] = {const_cast<char*>(libPath.c_str()), const_cast<char*>(flag.c_str()), nullptr};
  pid_t pid = 0;
  if (posix_spawn(&pid, exe.c_str(), nullptr, nullptr, argv, envp) != 0) return -1;
  int status = 0;
  if (waitpid(pid, &status, 0) != pid) return -1;
  return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

// In the parent: run the test body in a child and report its result. Returns true in the child.
#define WW_IN_SEARCH_PATH_CHILD()                                                    \
  if (std::getenv(kChildFlag) == nullptr) {                                          \
    EXPECT_EQ(rerunWithLibraryPath(), 0) << "the child run of this test failed"; \
    return;                                                                          \
  }

bool samePath(const std::string& a, const std::string& b) {
  std::error_code ec;
  return std::filesystem::equivalent(a, b, ec);
}

TEST(CandidateNames, UnsetOrEmptyMeansDefaultLibrary) {
  EXPECT_THAT(candidateNames(PluginKind::Tuner, nullptr), ElementsAre("libnccl-tuner.so"));
  EXPECT_THAT(candidateNames(PluginKind::Tuner, ""), ElementsAre("libnccl-tuner.so"));
  EXPECT_THAT(candidateNames(PluginKind::Profiler, nullptr), ElementsAre("libnccl-profiler.so"));
  EXPECT_THAT(candidateNames(PluginKind::Net, nullptr), ElementsAre("libnccl-net.so"));
}

TEST(CandidateNames, ShortNameIsTriedVerbatimThenWithPrefix) {
  EXPECT_THAT(candidateNames(PluginKind::Tuner, "foo"), ElementsAre("foo", "libnccl-tuner-foo.so"));
  EXPECT_THAT(candidateNames(PluginKind::Profiler, "foo"), ElementsAre("foo", "libnccl-profiler-foo.so"));
}

TEST(CandidateNames, PathsAndLibSoNamesAreNeverRewritten) {
  EXPECT_THAT(candidateNames(PluginKind::Tuner, "/opt/x/libfoo.so"), ElementsAre("/opt/x/libfoo.so"));
  EXPECT_THAT(candidateNames(PluginKind::Tuner, "./foo"), ElementsAre("./foo"));
  EXPECT_THAT(candidateNames(PluginKind::Tuner, "libfoo.so"), ElementsAre("libfoo.so"));
  EXPECT_THAT(candidateNames(PluginKind::Tuner, "lib.so"), ElementsAre("lib.so"));
}

TEST(CandidateNames, OnlyBothLibAndSoSuppressTheRewrite) {
  EXPECT_THAT(candidateNames(PluginKind::Tuner, "libfoo"), ElementsAre("libfoo", "libnccl-tuner-libfoo.so"));
  EXPECT_THAT(candidateNames(PluginKind::Tuner, "foo.so"), ElementsAre("foo.so", "libnccl-tuner-foo.so.so"));
  EXPECT_THAT(candidateNames(PluginKind::Tuner, "libfoo.so.1"),
              ElementsAre("libfoo.so.1", "libnccl-tuner-libfoo.so.1.so"));
}

TEST(CandidateNames, NamesAreTruncatedLikeNcclsBuffer) {
  const std::string longName(300, 'x');
  const auto names = candidateNames(PluginKind::Tuner, longName.c_str());
  ASSERT_EQ(names.size(), 2u);
  EXPECT_EQ(names[0], std::string(254, 'x'));
  EXPECT_EQ(names[1], "libnccl-tuner-" + std::string(240, 'x'));
}

TEST(StaticPluginName, AnyCaseInsensitivePrefixMatches) {
  EXPECT_TRUE(isStaticPluginName("STATIC_PLUGIN"));
  EXPECT_TRUE(isStaticPluginName("static_plugin"));
  EXPECT_TRUE(isStaticPluginName("Stat"));
  EXPECT_TRUE(isStaticPluginName("s"));
  EXPECT_FALSE(isStaticPluginName(""));
  EXPECT_FALSE(isStaticPluginName("STATIC_PLUGINX"));
  EXPECT_FALSE(isStaticPluginName("statx"));
}

TEST(OpenPlugin, DefaultNameResolvesThroughTheSearchPath) {
  WW_IN_SEARCH_PATH_CHILD();
  Closer c{openPlugin(PluginKind::Tuner, nullptr, nullptr)};
  ASSERT_NE(c.r.handle, nullptr) << c.r.error;
  EXPECT_EQ(c.r.name, "libnccl-tuner.so");
  EXPECT_TRUE(samePath(c.r.path, WW_FAKE_TUNER_DEFAULT)) << c.r.path;
  EXPECT_THAT(c.r.tried, ElementsAre("libnccl-tuner.so"));
  EXPECT_FALSE(c.r.viaNetFallback);
}

TEST(OpenPlugin, VerbatimAbsolutePathIsUsedAsGiven) {
  Closer c{openPlugin(PluginKind::Tuner, WW_FAKE_TUNER_V2, nullptr)};
  ASSERT_NE(c.r.handle, nullptr) << c.r.error;
  EXPECT_EQ(c.r.name, WW_FAKE_TUNER_V2);
  EXPECT_EQ(c.r.path, WW_FAKE_TUNER_V2);
  EXPECT_THAT(c.r.tried, ElementsAre(WW_FAKE_TUNER_V2));
}

TEST(OpenPlugin, ShortNameFallsBackToPrefixedLibrary) {
  WW_IN_SEARCH_PATH_CHILD();
  Closer c{openPlugin(PluginKind::Tuner, "fakev2", nullptr)};
  ASSERT_NE(c.r.handle, nullptr) << c.r.error;
  EXPECT_THAT(c.r.tried, ElementsAre("fakev2", "libnccl-tuner-fakev2.so"));
  EXPECT_EQ(c.r.name, "libnccl-tuner-fakev2.so");
  EXPECT_TRUE(samePath(c.r.path, WW_FAKE_TUNER_V2)) << c.r.path;
  EXPECT_NE(c.r.error.find("fakev2"), std::string::npos) << "the failed verbatim attempt is reported";
}

TEST(OpenPlugin, ProfilerKindUsesProfilerPrefix) {
  WW_IN_SEARCH_PATH_CHILD();
  Closer c{openPlugin(PluginKind::Profiler, "fakev5", nullptr)};
  ASSERT_NE(c.r.handle, nullptr) << c.r.error;
  EXPECT_THAT(c.r.tried, ElementsAre("fakev5", "libnccl-profiler-fakev5.so"));
  EXPECT_TRUE(samePath(c.r.path, WW_FAKE_PROF_V5));
}

TEST(OpenPlugin, LibSoNameIsOnlyTriedVerbatim) {
  WW_IN_SEARCH_PATH_CHILD();
  // A lib*.so name is tried verbatim through the search path and never rewritten, found or not.
  Closer ok{openPlugin(PluginKind::Tuner, "libnccl-tuner-fakev3.so", nullptr)};
  ASSERT_NE(ok.r.handle, nullptr) << ok.r.error;
  EXPECT_THAT(ok.r.tried, ElementsAre("libnccl-tuner-fakev3.so"));
  Closer missing{openPlugin(PluginKind::Tuner, "libmissing.so", nullptr)};
  EXPECT_EQ(missing.r.handle, nullptr);
  EXPECT_THAT(missing.r.tried, ElementsAre("libmissing.so"));
}

TEST(OpenPlugin, NameWithSlashIsNotRewritten) {
  const std::string rel = std::string(WW_FAKE_PLUGIN_DIR) + "/fakev2";  // libnccl-tuner-fakev2.so exists beside
  Closer c{openPlugin(PluginKind::Tuner, rel.c_str(), nullptr)};
  EXPECT_EQ(c.r.handle, nullptr);
  EXPECT_THAT(c.r.tried, ElementsAre(rel));
}

TEST(OpenPlugin, NoneDisablesEverythingIncludingNetFallback) {
  for (const char* v : {"none", "NONE", "None"}) {
    Closer c{openPlugin(PluginKind::Tuner, v, WW_FAKE_NET)};
    EXPECT_EQ(c.r.handle, nullptr) << v;
    EXPECT_TRUE(c.r.disabled) << v;
    EXPECT_TRUE(c.r.tried.empty()) << v;
  }
  EXPECT_FALSE(isDisabled("nonex"));
  EXPECT_FALSE(isDisabled(nullptr));
}

TEST(OpenPlugin, FailureWithoutNetLibraryReturnsNothing) {
  Closer c{openPlugin(PluginKind::Tuner, "missing", nullptr)};
  EXPECT_EQ(c.r.handle, nullptr);
  EXPECT_THAT(c.r.tried, ElementsAre("missing", "libnccl-tuner-missing.so"));
  EXPECT_NE(c.r.error.find("libnccl-tuner-missing.so"), std::string::npos);
}

TEST(OpenPlugin, TunerAndProfilerFallBackToTheNetLibrary) {
  for (PluginKind kind : {PluginKind::Tuner, PluginKind::Profiler}) {
    Closer c{openPlugin(kind, "missing", WW_FAKE_NET)};
    ASSERT_NE(c.r.handle, nullptr) << c.r.error;
    EXPECT_TRUE(c.r.viaNetFallback);
    EXPECT_EQ(c.r.name, WW_FAKE_NET);
    EXPECT_EQ(c.r.path, WW_FAKE_NET);
    ASSERT_EQ(c.r.tried.size(), 3u);
    EXPECT_EQ(c.r.tried[2], WW_FAKE_NET);
  }
  // The default (unset) name falls back too; the net kind never does.
  Closer unset{openPlugin(PluginKind::Profiler, nullptr, WW_FAKE_NET)};
  EXPECT_TRUE(unset.r.viaNetFallback);
  Closer net{openPlugin(PluginKind::Net, "missing", WW_FAKE_NET)};
  EXPECT_EQ(net.r.handle, nullptr);
}

TEST(OpenPlugin, NetFallbackIsNotUsedWhenThePluginOpens) {
  Closer c{openPlugin(PluginKind::Tuner, WW_FAKE_TUNER_V4, WW_FAKE_NET)};
  ASSERT_NE(c.r.handle, nullptr);
  EXPECT_FALSE(c.r.viaNetFallback);
  EXPECT_EQ(c.r.path, WW_FAKE_TUNER_V4);
}

TEST(OpenPlugin, StaticPluginOpensTheMainProgram) {
  void* self = dlopen(nullptr, RTLD_NOW);
  ASSERT_NE(self, nullptr);
  for (const char* v : {"STATIC_PLUGIN", "static_plugin", "Stat"}) {
    Closer c{openPlugin(PluginKind::Tuner, v, nullptr)};
    EXPECT_EQ(c.r.handle, self) << v;
    EXPECT_EQ(c.r.path, "") << v;
  }
  dlclose(self);
}

}  // namespace
}  // namespace wirewise::loader
