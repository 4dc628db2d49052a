// Agreement as users start it: with the launcher's variables only (torchrun, SLURM, Open MPI on one node),
// WIREWISE_SYNC unset (on by default), two jobs on one host, an elastic restart, and another job's
// coordinator on the port. Each job must agree on every collective and adapt where it can meet its
// coordinator, and nobody may wait or mix where it cannot.
#include "tests/control/multiprocess_fixture.h"

#include <random>

#include "control/rendezvous.h"

namespace wirewise::control {
namespace {

// A job of 4 processes as a launcher starts it: its variables in `env`, nothing of wirewise's but the
// policy (the test's random tables make every verdict visible).
Job launcherJob(const std::map<std::string, std::string>& env) {
  Job job;
  job.launcher = true;
  job.sync = "";
  job.procs = job.ranks = 4;
  job.collectives = 1500;
  for (int p = 0; p < job.procs; ++p) job.env[p] = env;
  return job;
}

// As torchrun starts it: MASTER_ADDR/MASTER_PORT and a run id.
Job torchrunJob(uint16_t masterPort, const std::string& runId) {
  return launcherJob(
      {{"MASTER_ADDR", "127.0.0.1"}, {"MASTER_PORT", std::to_string(masterPort)}, {"TORCHELASTIC_RUN_ID", runId}});
}

// A port P with P + kPortOffset also free (the coordinator's, as the rendezvous derives it).
uint16_t masterPort() {
  for (;;) {
    uint16_t p = freePort();
    if (p + kPortOffset > 65535) continue;
    asio::io_context io;
    boost::system::error_code ec;
    tcp::acceptor a(io);
    a.open(tcp::v4(), ec);
    if (!ec) a.bind(tcp::endpoint(asio::ip::make_address("127.0.0.1"), static_cast<uint16_t>(p + kPortOffset)), ec);
    if (!ec) return p;
  }
}

std::string randomId() { return std::to_string(std::random_device{}()); }

TEST_F(MultiProcess, TorchrunVariablesAloneAdaptAndAgree) {
  Job job = torchrunJob(masterPort(), "run-" + randomId());
  auto rec = run(job);
  EXPECT_GT(checkIdentical(job, rec), 0u) << "no verdict changed anything";
  EXPECT_EQ(countLog(job.procs, "\"hosting\":true"), 1u);
  EXPECT_EQ(countLog(job.procs, "\"source\":\"MASTER_ADDR/MASTER_PORT\""), static_cast<size_t>(job.procs));
}

// SLURM gives a node list of host names: the coordinator must start on the host the first name stands for
// (here "localhost"), found by resolving it, not only on a literal address. Open MPI on one node: loopback.
TEST_F(MultiProcess, SlurmAndOpenMpiVariablesAloneAdaptAndAgree) {
  const std::string id = randomId();
  for (const Job& job :
       {launcherJob({{"SLURM_JOB_ID", id}, {"SLURM_STEP_ID", "0"}, {"SLURM_JOB_NODELIST", "localhost"}}),
        launcherJob(
            {{"OMPI_MCA_ess_base_jobid", id}, {"OMPI_COMM_WORLD_SIZE", "4"}, {"OMPI_COMM_WORLD_LOCAL_SIZE", "4"}})}) {
    SCOPED_TRACE(job.env.at(0).begin()->first);
    auto rec = run(job);
    EXPECT_GT(checkIdentical(job, rec), 0u) << "no verdict changed anything";
    EXPECT_EQ(countLog(job.procs, "\"hosting\":true"), 1u);
    std::filesystem::remove_all(dir_);
    std::filesystem::create_directories(dir_);
  }
}

// Two torchrun jobs of one user on one host at once, and two jobs with no launcher variable at all: each
// agrees within itself and they never share a coordinator (the latter each keep to their own process, so
// their multi-process communicators never start a schedule, and nobody waits).
TEST_F(MultiProcess, TwoJobsOnOneHostStayApart) {
  Job a = torchrunJob(masterPort(), "a-" + randomId());
  Job b = torchrunJob(masterPort(), "b-" + randomId());
  b.first = 100;
  auto ka = spawn(a);
  auto kb = spawn(b);
  auto ra = finish(a, ka);
  auto rb = finish(b, kb);
  EXPECT_GT(checkIdentical(a, ra), 0u);
  EXPECT_GT(checkIdentical(b, rb), 0u);
  EXPECT_EQ(countLog(a.procs, "\"hosting\":true"), 1u);
  EXPECT_EQ(countLog(b.procs, "\"hosting\":true", "/log", ".jsonl", b.first), 1u);

  Job c = a, d = b;
  c.first = 200, d.first = 300;
  for (Job* j : {&c, &d})
    for (auto& [p, env] : j->env) env.clear();
  c.paceUs = d.paceUs = 20;
  auto kc = spawn(c);
  auto kd = spawn(d);
  auto rc = finish(c, kc);
  auto rd = finish(d, kd);
  EXPECT_EQ(checkIdentical(c, rc), 0u);  // identical, nothing changed
  EXPECT_EQ(checkIdentical(d, rd), 0u);
  EXPECT_EQ(countLog(c.procs, "this process only", "/log", ".jsonl", c.first), static_cast<size_t>(c.procs));
  EXPECT_EQ(countLog(d.procs, "\"hosting\":true", "/log", ".jsonl", d.first), static_cast<size_t>(d.procs));
  EXPECT_EQ(countLog(d.procs, "\"waited_us\":0}", "/log", ".jsonl", d.first), static_cast<size_t>(d.procs * d.comms));
}

// An elastic restart: a new run id on the same master port. The old coordinator gone, the new job hosts
// its own and adapts. The old one still there (its process lingers), the new job's members are refused by
// it (another key) and cannot bind its port: they keep their tables and nobody waits or mixes.
TEST_F(MultiProcess, ElasticRestartOnTheSameMasterPort) {
  const uint16_t port = masterPort();
  Job first = torchrunJob(port, "elastic-1-" + randomId());
  EXPECT_GT(checkIdentical(first, run(first)), 0u);

  Job second = torchrunJob(port, "elastic-2-" + randomId());
  second.first = 100;
  EXPECT_GT(checkIdentical(second, run(second)), 0u);
  EXPECT_EQ(countLog(second.procs, "\"hosting\":true", "/log", ".jsonl", second.first), 1u);

  // The old incarnation's coordinator still holds the port, under its own (derived) key.
  HostedCoordinator lingering(static_cast<uint16_t>(port + kPortOffset), false, "the old incarnation's key");
  Job third = torchrunJob(port, "elastic-3-" + randomId());
  third.first = 200;
  third.collectives = 5000;
  third.paceUs = 20;
  auto rec = run(third);
  EXPECT_EQ(checkIdentical(third, rec), 0u);
  EXPECT_EQ(countLog(third.procs, "\"waited_us\":0}", "/log", ".jsonl", third.first),
            static_cast<size_t>(third.procs * third.comms));
  EXPECT_GE(lingering.plane->coordinatorStats().rejected, static_cast<uint64_t>(third.procs));
  EXPECT_EQ(lingering.plane->coordinatorStats().joins, 0u);
  EXPECT_EQ(countLog(third.procs, "unreachable", "/err", ".txt", third.first), static_cast<size_t>(third.procs))
      << "one WARN per process naming the coordinator and the fix";
}

}  // namespace
}  // namespace wirewise::control
