#include "control/rendezvous.h"

#include <gtest/gtest.h>

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
  EXPECT_EQ(r.source, "loopback");
}

TEST(Rendezvous, MalformedCoordinatorFallsThroughWithAProblem) {
  for (const char* bad : {"host", "host:", "host:0", "host:70000", ":80", "host:8x"}) {
    auto r = rendezvousOf(envOf({{"WIREWISE_COORDINATOR", bad}}));
    EXPECT_EQ(r.source, "loopback") << bad;
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

}  // namespace
}  // namespace wirewise::control
