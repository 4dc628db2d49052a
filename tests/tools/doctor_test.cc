// `wirewise doctor`: each check on an injected host (environment, nccl.conf files, sysfs, libraries), and the
// command's exit code and JSON through the built binary.
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <string>

#include "tests/tools/cli_runner.h"
#include "tools/doctor.h"

namespace wirewise::tools {
namespace {

namespace fs = std::filesystem;
const std::string kLib = WW_PLUGIN_LIB;      // the built libnccl-tuner-wirewise.so
const std::string kFakeNccl = WW_FAKE_NCCL;  // ncclGetVersion = 2.27.2

// A host with nothing set: its own temporary home, /etc and sysfs, no network probes.
struct Host {
  std::map<std::string, std::string> vars;
  fs::path dir;
  DoctorInput in;
  Host() {
    dir = fs::path(::testing::TempDir()) / ("ww_doctor_" + std::to_string(::getpid()) + "_" +
                                            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir);
    fs::create_directories(dir / "home");
    fs::create_directories(dir / "sys/class");
    vars["TMPDIR"] = (dir / "tmp").string();
    in.homeDir = (dir / "home").string();
    in.siteConf = (dir / "etc-nccl.conf").string();
    in.sysfsRoot = (dir / "sys").string();
    in.host = "node01";
    in.uid = static_cast<long>(::geteuid());
    in.probeNetwork = false;
  }
  ~Host() { fs::remove_all(dir); }
  std::vector<Finding> run() {
    in.env = [this](const char* name) -> const char* {
      auto it = vars.find(name);
      return it == vars.end() ? nullptr : it->second.c_str();
    };
    return runDoctor(in);
  }
  void write(const fs::path& p, const std::string& text) { std::ofstream(p) << text; }
};

std::vector<Finding> of(const std::vector<Finding>& all, const std::string& check) {
  std::vector<Finding> out;
  for (const Finding& f : all)
    if (f.check == check) out.push_back(f);
  return out;
}

std::string dump(const std::vector<Finding>& all) {
  std::string s;
  for (const Finding& f : all) s += std::string(levelName(f.level)) + " " + f.check + ": " + f.text + "\n";
  return s;
}

TEST(Doctor, NoPluginVariablesIsAnErrorThatSaysWhatToExport) {
  Host h;
  auto all = h.run();
  auto t = of(all, "tuner_plugin");
  ASSERT_EQ(t.size(), 1u) << dump(all);
  EXPECT_EQ(t[0].level, Level::kError);
  EXPECT_NE(t[0].text.find("libnccl-tuner.so"), std::string::npos) << t[0].text;
  EXPECT_NE(t[0].fix.find("NCCL_TUNER_PLUGIN=wirewise NCCL_PROFILER_PLUGIN=wirewise"), std::string::npos);
  EXPECT_EQ(of(all, "profiler_plugin")[0].level, Level::kError);
  EXPECT_EQ(doctorExitCode(all), 2);
}

TEST(Doctor, BothFacesResolveToOneWirewiseLibrary) {
  Host h;
  h.vars["NCCL_TUNER_PLUGIN"] = kLib;
  h.vars["NCCL_PROFILER_PLUGIN"] = fs::path(kLib).parent_path() / "libnccl-profiler-wirewise.so";
  auto all = h.run();
  auto t = of(all, "tuner_plugin"), p = of(all, "profiler_plugin");
  ASSERT_EQ(t.size(), 1u);
  EXPECT_EQ(t[0].level, Level::kOk) << dump(all);
  EXPECT_NE(t[0].text.find("wirewise tuner v7"), std::string::npos) << t[0].text;
  EXPECT_EQ(p[0].level, Level::kOk) << dump(all);
  EXPECT_NE(p[0].text.find("wirewise profiler v6"), std::string::npos) << p[0].text;
  EXPECT_TRUE(of(all, "one_instance").empty()) << dump(all);  // the symlink is the same file
}

TEST(Doctor, TwoCopiesOfTheLibraryAreTwoInstances) {
  Host h;
  const fs::path copy = h.dir / "libnccl-profiler-wirewise.so";
  fs::copy_file(kLib, copy);
  h.vars["NCCL_TUNER_PLUGIN"] = kLib;
  h.vars["NCCL_PROFILER_PLUGIN"] = copy.string();
  auto all = h.run();
  auto one = of(all, "one_instance");
  ASSERT_EQ(one.size(), 1u) << dump(all);
  EXPECT_EQ(one[0].level, Level::kWarn);
}

TEST(Doctor, NoneAndForeignLibrariesAreNamed) {
  Host h;
  h.vars["NCCL_TUNER_PLUGIN"] = "none";
  h.vars["NCCL_PROFILER_PLUGIN"] = "libm.so.6";  // loads, but is no profiler
  auto all = h.run();
  EXPECT_EQ(of(all, "tuner_plugin")[0].level, Level::kError);
  EXPECT_NE(of(all, "tuner_plugin")[0].text.find("=none"), std::string::npos);
  const Finding p = of(all, "profiler_plugin")[0];
  EXPECT_EQ(p.level, Level::kWarn) << dump(all);
  EXPECT_NE(p.text.find("not wirewise"), std::string::npos) << p.text;
}

TEST(Doctor, NcclConfIsReadAsNcclReadsIt) {
  Host h;
  h.write(h.dir / "home/.nccl.conf", "# a comment\nNCCL_TUNER_PLUGIN=" + kLib + "\nNCCL_PROTO = LL\nno equals sign\n");
  h.write(h.in.siteConf, "NCCL_TUNER_PLUGIN=none\nNCCL_PROFILER_PLUGIN=" + kLib + "\n");
  auto all = h.run();
  // The user's file comes before the site's; the environment would come before both.
  EXPECT_EQ(of(all, "tuner_plugin")[0].level, Level::kOk) << dump(all);
  EXPECT_EQ(of(all, "profiler_plugin")[0].level, Level::kOk) << dump(all);
  bool spaced = false;
  for (const Finding& f : of(all, "nccl_conf"))
    spaced |= f.level == Level::kWarn && f.text.find("'NCCL_PROTO '") != std::string::npos;
  EXPECT_TRUE(spaced) << dump(all);
  // The spaced key is not NCCL_PROTO, so it narrows nothing.
  EXPECT_EQ(of(all, "tuning_overrides")[0].level, Level::kOk) << dump(all);

  h.vars["NCCL_TUNER_PLUGIN"] = "none";  // the environment wins over both files
  EXPECT_EQ(of(h.run(), "tuner_plugin")[0].level, Level::kError);

  const auto lines = readNcclConf((h.dir / "home/.nccl.conf").string());
  ASSERT_EQ(lines.size(), 2u);
  EXPECT_EQ(lines[1].key, "NCCL_PROTO ");
  EXPECT_EQ(lines[1].value, " LL");
  EXPECT_EQ(lines[1].line, 3);
}

TEST(Doctor, SettingsThatNarrowTheChoicesWarn) {
  Host h;
  h.vars["NCCL_ALGO"] = "ring";
  h.vars["NCCL_MAX_NCHANNELS"] = "4";
  auto o = of(h.run(), "tuning_overrides");
  ASSERT_EQ(o.size(), 2u);
  EXPECT_EQ(o[0].level, Level::kWarn);
  EXPECT_NE(o[0].text.find("NCCL_ALGO=ring"), std::string::npos);
  EXPECT_NE(o[1].text.find("NCCL_MAX_NCHANNELS=4"), std::string::npos);
}

TEST(Doctor, BadWirewiseSettingsAndModesAreReported) {
  Host h;
  h.vars["WIREWISE_SUMMARY_MS"] = "abc";
  h.vars["WIREWISE_MODE"] = "off";
  auto s = of(h.run(), "settings");
  ASSERT_EQ(s.size(), 2u);
  EXPECT_NE(s[0].text.find("WIREWISE_SUMMARY_MS=\"abc\""), std::string::npos) << s[0].text;
  EXPECT_NE(s[1].text.find("WIREWISE_MODE=off"), std::string::npos);
}

TEST(Doctor, TheRendezvousIsResolvedAndPlaced) {
  Host h;
  EXPECT_EQ(of(h.run(), "rendezvous")[0].level, Level::kInfo);  // no launcher: a coordinator per process
  h.vars["MASTER_ADDR"] = "127.0.0.1";
  h.vars["MASTER_PORT"] = "29500";
  auto r = of(h.run(), "rendezvous");
  ASSERT_EQ(r.size(), 1u);
  EXPECT_EQ(r[0].level, Level::kOk);
  EXPECT_NE(r[0].text.find("127.0.0.1:29517"), std::string::npos) << r[0].text;
  EXPECT_NE(r[0].text.find("host the coordinator"), std::string::npos) << r[0].text;
  h.vars["MASTER_ADDR"] = "no-such-host.invalid";
  r = of(h.run(), "rendezvous");
  EXPECT_EQ(r[0].level, Level::kError);
}

TEST(Doctor, AKeyFileOthersCanReadIsRefused) {
  Host h;
  const fs::path key = h.dir / "key";
  h.write(key, "secret\n");
  ::chmod(key.c_str(), 0644);
  h.vars["WIREWISE_JOB_KEY_FILE"] = key.string();
  auto k = of(h.run(), "job_key");
  ASSERT_EQ(k.size(), 1u);
  EXPECT_EQ(k[0].level, Level::kError);
  ::chmod(key.c_str(), 0600);
  k = of(h.run(), "job_key");
  EXPECT_EQ(k.back().level, Level::kOk);
  EXPECT_NE(k.back().text.find("WIREWISE_JOB_KEY_FILE"), std::string::npos) << k.back().text;
}

TEST(Doctor, TheDefaultLogDirectoryMustBeOnlyThisUsers) {
  Host h;
  EXPECT_EQ(of(h.run(), "log")[0].level, Level::kOk);  // missing: created 0700 at the first start
  const fs::path dir = h.dir / "tmp" / ("wirewise-" + std::to_string(::geteuid()));
  fs::create_directories(dir);
  ::chmod(dir.c_str(), 0777);
  auto l = of(h.run(), "log");
  EXPECT_EQ(l[0].level, Level::kError) << l[0].text;
  ::chmod(dir.c_str(), 0700);
  EXPECT_EQ(of(h.run(), "log")[0].level, Level::kOk);
  h.vars["WIREWISE_LOG"] = "none";
  EXPECT_EQ(of(h.run(), "log")[0].level, Level::kInfo);
}

TEST(Doctor, NcclVersionsAreReadFromTheLibraries) {
  Host h;
  h.in.ncclCandidates = {kFakeNccl};
  bool old = false;
  for (const Finding& f : of(h.run(), "nccl_version"))
    old |= f.level == Level::kWarn && f.text.find("NCCL 2.27.2") != std::string::npos;
  EXPECT_TRUE(old);
}

TEST(Doctor, InfinibandDevicesInSysfsAreCounted) {
  Host h;
  fs::create_directories(h.dir / "sys/class/infiniband/mlx5_0");
  bool counted = false;
  for (const Finding& f : of(h.run(), "telemetry")) counted |= f.text.find("1 InfiniBand/RoCE device") != std::string::npos;
  EXPECT_TRUE(counted);
}

TEST(DoctorCli, JsonAndExitCodeAgree) {
  auto r = testing::runCli("doctor --json --no-network", "env -i PATH=/usr/bin:/bin NCCL_TUNER_PLUGIN='" + kLib +
                                                             "' NCCL_PROFILER_PLUGIN='" + kLib + "' NCCL_ALGO=ring");
  auto j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j["exit"], r.status);
  EXPECT_GE(r.status, 1);  // NCCL_ALGO warns, whatever else this host has
  bool tunerOk = false;
  for (const auto& f : j["findings"]) tunerOk |= f["check"] == "tuner_plugin" && f["level"] == "ok";
  EXPECT_TRUE(tunerOk) << r.out;
  auto none = testing::runCli("doctor --no-network", "env -i PATH=/usr/bin:/bin NCCL_TUNER_PLUGIN=none");
  EXPECT_EQ(none.status, 2);
  EXPECT_NE(none.out.find("error  tuner_plugin"), std::string::npos) << none.out;
}

}  // namespace
}  // namespace wirewise::tools
