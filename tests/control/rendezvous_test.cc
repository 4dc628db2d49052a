#include "control/rendezvous.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <map>

namespace wirewise::control {
namespace {

EnvSource envOf(std::map<std::string, std::string> m) {
  auto vars = std::make_shared<std::map<std::string, std::string>>(std::move(m));
  return [vars](const char* name) -> const char* {
    auto it = vars->find(name);
    return it == vars->end() ? nullptr : it->second.c_str();
  };
}

// Our own variables reach the rendezvous through the settings, the launcher's straight from the environment.
Rendezvous rendezvousOf(const EnvSource& env) {
  std::vector<std::string> warnings;
  return resolveRendezvous(readSettings(env, "host", 1, &warnings), env);
}

JobKey jobKeyOf(const EnvSource& env, long uid) {
  std::vector<std::string> warnings;
  return resolveJobKey(readSettings(env, "host", 1, &warnings), env, uid);
}

TEST(Rendezvous, OrderOfPrecedence) {
  auto r = rendezvousOf(
      envOf({{"WIREWISE_COORDINATOR", "10.0.0.1:7000"}, {"MASTER_ADDR", "m"}, {"MASTER_PORT", "29500"}}));
  EXPECT_EQ(r.host, "10.0.0.1");
  EXPECT_EQ(r.port, 7000);
  EXPECT_EQ(r.source, "WIREWISE_COORDINATOR");
  r = rendezvousOf(envOf({{"MASTER_ADDR", "m"}, {"MASTER_PORT", "29500"}, {"SLURM_JOB_ID", "5"}}));
  EXPECT_EQ(r.host, "m");
  EXPECT_EQ(r.port, 29500 + kPortOffset);
  r = rendezvousOf(envOf({{"SLURM_JOB_ID", "5"}, {"SLURM_JOB_NODELIST", "gpu[07-09,12]"}}));
  EXPECT_EQ(r.host, "gpu07");
  EXPECT_GE(r.port, 20000);
  EXPECT_LT(r.port, 30000);
  r = rendezvousOf(
      envOf({{"OMPI_MCA_ess_base_jobid", "77"}, {"OMPI_COMM_WORLD_SIZE", "8"}, {"OMPI_COMM_WORLD_LOCAL_SIZE", "8"}}));
  EXPECT_EQ(r.host, "127.0.0.1");
  r = rendezvousOf(envOf({}));
  EXPECT_EQ(r.host, "127.0.0.1");
  EXPECT_EQ(r.port, 0);  // a coordinator of this process's own: nothing tells its job from another's
  EXPECT_EQ(r.source, kPrivateRendezvous);
  r = rendezvousOf(envOf({{"WIREWISE_JOB_KEY", "k"}, {"USER", "u"}}));
  EXPECT_EQ(r.host, "127.0.0.1");
  EXPECT_GE(r.port, 20000);  // the user named the job: its processes on this host meet on one port
  EXPECT_EQ(r.source, "loopback");
}

TEST(Rendezvous, MalformedCoordinatorFallsThroughWithAProblem) {
  for (const char* bad : {"host", "host:", "host:0", "host:70000", ":80", "host:8x"}) {
    auto r = rendezvousOf(envOf({{"WIREWISE_COORDINATOR", bad}}));
    EXPECT_EQ(r.source, kPrivateRendezvous) << bad;
    EXPECT_NE(r.problem.find("WIREWISE_COORDINATOR"), std::string::npos) << bad;
  }
  auto v6 = rendezvousOf(envOf({{"WIREWISE_COORDINATOR", "[::1]:9000"}}));
  EXPECT_EQ(v6.host, "::1");
}

TEST(Rendezvous, SlurmNodeLists) {
  EXPECT_EQ(firstSlurmHost("a,b"), "a");
  EXPECT_EQ(firstSlurmHost("solo"), "solo");
  EXPECT_EQ(firstSlurmHost("n[3,5]"), "n3");
  EXPECT_EQ(firstSlurmHost("n[]"), "");
}

TEST(JobKey, ExplicitDerivedAndDistinct) {
  auto k = jobKeyOf(envOf({{"WIREWISE_JOB_KEY", "s3cret"}}), 1000);
  EXPECT_EQ(std::string(k.key.begin(), k.key.end()), "s3cret");
  auto a = jobKeyOf(envOf({{"SLURM_JOB_ID", "1"}}), 1000);
  auto b = jobKeyOf(envOf({{"SLURM_JOB_ID", "2"}}), 1000);
  auto c = jobKeyOf(envOf({{"SLURM_JOB_ID", "1"}}), 1001);
  EXPECT_NE(a.key, b.key);
  EXPECT_NE(a.key, c.key);
  EXPECT_EQ(a.key, jobKeyOf(envOf({{"SLURM_JOB_ID", "1"}}), 1000).key);
  EXPECT_NE(a.source.find("SLURM_JOB_ID"), std::string::npos);
}

// Concurrent srun steps of one allocation are separate NCCL jobs: each step its own coordinator and key.
TEST(Rendezvous, SlurmStepsGetTheirOwnCoordinator) {
  const std::map<std::string, std::string> job = {{"SLURM_JOB_ID", "5"}, {"SLURM_JOB_NODELIST", "gpu[07-09]"}};
  auto with = [&](std::map<std::string, std::string> extra) {
    extra.insert(job.begin(), job.end());
    return rendezvousOf(envOf(extra));
  };
  auto step0 = with({{"SLURM_STEP_ID", "0"}}), step1 = with({{"SLURM_STEP_ID", "1"}}), none = with({});
  EXPECT_EQ(step0.host, "gpu07");
  EXPECT_NE(step0.port, step1.port);
  EXPECT_NE(step0.port, none.port);
  EXPECT_EQ(step0.port, with({{"SLURM_STEP_ID", "0"}}).port);
  EXPECT_EQ(step0.port, with({{"SLURM_STEPID", "0"}}).port);  // the older spelling
  EXPECT_NE(step0.source.find("SLURM_STEP_ID"), std::string::npos);
  EXPECT_EQ(none.source.find("SLURM_STEP_ID"), std::string::npos);
}

TEST(JobKey, SlurmStepsHaveDistinctKeys) {
  auto k0 = jobKeyOf(envOf({{"SLURM_JOB_ID", "5"}, {"SLURM_STEP_ID", "0"}}), 1000);
  auto k1 = jobKeyOf(envOf({{"SLURM_JOB_ID", "5"}, {"SLURM_STEP_ID", "1"}}), 1000);
  auto job = jobKeyOf(envOf({{"SLURM_JOB_ID", "5"}}), 1000);
  EXPECT_NE(k0.key, k1.key);
  EXPECT_NE(k0.key, job.key);
  EXPECT_EQ(k0.key, jobKeyOf(envOf({{"SLURM_JOB_ID", "5"}, {"SLURM_STEPID", "0"}}), 1000).key);
  EXPECT_EQ(k0.source, "derived from SLURM_JOB_ID/SLURM_STEP_ID");
}

// torchrun's default rendezvous id is "none" for every job that names none: it identifies nothing.
TEST(JobKey, TorchrunsNoneRunIdIsAbsent) {
  auto a = jobKeyOf(envOf({{"TORCHELASTIC_RUN_ID", "none"}, {"MASTER_ADDR", "m"}, {"MASTER_PORT", "29500"}}), 1000);
  auto b = jobKeyOf(envOf({{"TORCHELASTIC_RUN_ID", "none"}, {"MASTER_ADDR", "m"}, {"MASTER_PORT", "29501"}}), 1000);
  EXPECT_NE(a.key, b.key);  // two jobs, told apart by their master port, not merged by "none"
  EXPECT_EQ(a.source, "derived from MASTER_ADDR");
  EXPECT_EQ(a.key, jobKeyOf(envOf({{"MASTER_ADDR", "m"}, {"MASTER_PORT", "29500"}}), 1000).key);
  auto s = jobKeyOf(envOf({{"TORCHELASTIC_RUN_ID", "none"}, {"SLURM_JOB_ID", "5"}}), 1000);
  EXPECT_EQ(s.source, "derived from SLURM_JOB_ID");
  auto named = jobKeyOf(envOf({{"TORCHELASTIC_RUN_ID", "run7"}, {"MASTER_ADDR", "m"}, {"MASTER_PORT", "29500"}}), 1000);
  EXPECT_EQ(named.source, "derived from TORCHELASTIC_RUN_ID");
  EXPECT_NE(named.key, a.key);
}

class KeyFile : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/ww-key-file-XXXXXX";
    ASSERT_NE(::mkdtemp(tmpl), nullptr);
    dir_ = tmpl;
    path_ = dir_ + "/job.key";
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }
  void write(const std::string& content, mode_t mode) {
    std::ofstream(path_) << content;
    ASSERT_EQ(::chmod(path_.c_str(), mode), 0);
  }
  JobKey keyWith(std::map<std::string, std::string> env) {
    env["WIREWISE_JOB_KEY_FILE"] = path_;
    return jobKeyOf(envOf(env), static_cast<long>(::geteuid()));
  }
  std::string dir_, path_;
};

TEST_F(KeyFile, ItsTrimmedContentIsTheKey) {
  write("  s3cret\n", 0600);
  JobKey k = keyWith({{"SLURM_JOB_ID", "5"}});
  EXPECT_FALSE(k.refused()) << k.problem;
  EXPECT_EQ(std::string(k.key.begin(), k.key.end()), "s3cret");
  EXPECT_EQ(k.source, "WIREWISE_JOB_KEY_FILE");
  EXPECT_EQ(k.notice, "");
}

TEST_F(KeyFile, ItWinsOverTheKeySettingWithANotice) {
  write("from-file", 0600);
  JobKey k = keyWith({{"WIREWISE_JOB_KEY", "from-env"}});
  EXPECT_EQ(std::string(k.key.begin(), k.key.end()), "from-file");
  EXPECT_THAT(k.notice, ::testing::HasSubstr("WIREWISE_JOB_KEY is ignored: WIREWISE_JOB_KEY_FILE=" + path_));
  EXPECT_EQ(k.notice.find("from-env"), std::string::npos);
}

// Refused: no key at all (the process joins no coordinator), never a derived one.
TEST_F(KeyFile, AFileOthersCanReadIsRefusedNotReplacedByADerivedKey) {
  write("s3cret", 0644);
  JobKey k = keyWith({{"SLURM_JOB_ID", "5"}, {"WIREWISE_JOB_KEY", "from-env"}});
  EXPECT_TRUE(k.refused());
  EXPECT_TRUE(k.key.empty());
  EXPECT_THAT(k.problem, ::testing::HasSubstr("WIREWISE_JOB_KEY_FILE=" + path_ + " is refused"));
  EXPECT_THAT(k.problem, ::testing::HasSubstr("chmod 600 " + path_));
  EXPECT_THAT(k.problem, ::testing::HasSubstr("joins no coordinator"));
  EXPECT_EQ(k.problem.find("s3cret"), std::string::npos);
}

TEST_F(KeyFile, AMissingOrEmptyFileIsRefused) {
  JobKey missing = keyWith({});
  EXPECT_TRUE(missing.refused());
  EXPECT_THAT(missing.problem, ::testing::HasSubstr("cannot open " + path_));
  write("\n", 0600);
  JobKey empty = keyWith({});
  EXPECT_TRUE(empty.refused());
  EXPECT_THAT(empty.problem, ::testing::HasSubstr("is empty"));
}

TEST_F(KeyFile, AFileOfAnotherUserIsRefused) {
  if (::geteuid() != 0) GTEST_SKIP() << "needs root to give a file to another user (chown)";
  write("s3cret", 0600);
  ASSERT_EQ(::chown(path_.c_str(), 4242, 4242), 0);
  JobKey k = keyWith({});
  EXPECT_TRUE(k.refused());
  EXPECT_THAT(k.problem, ::testing::HasSubstr("belongs to uid 4242"));
}

// The loopback port is chosen from the file's path, not its content: without reading it, the same for
// every process given that file.
TEST_F(KeyFile, TheLoopbackPortFollowsThePath) {
  auto a = rendezvousOf(envOf({{"WIREWISE_JOB_KEY_FILE", "/a/key"}, {"USER", "u"}}));
  auto b = rendezvousOf(envOf({{"WIREWISE_JOB_KEY_FILE", "/b/key"}, {"USER", "u"}}));
  EXPECT_EQ(a.source, "loopback");
  EXPECT_NE(a.port, b.port);
}

}  // namespace
}  // namespace wirewise::control
