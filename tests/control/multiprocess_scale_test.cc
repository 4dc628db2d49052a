// Scale (label `slow`): 32 and 64 processes, 4 communicators each, 1,024,000 collectives per test through
// the real library, a random table at every boundary, every decision checked; then 32 processes with
// connections cut at random.
#include "tests/control/multiprocess_fixture.h"

namespace wirewise::control {
namespace {

TEST_F(MultiProcess, ThirtyTwoProcessesOneMillionCollectives) {
  Job job;
  job.port = freePort();
  job.procs = job.ranks = 32;
  job.comms = 4;
  job.collectives = 8000;
  job.spacing = "64";
  job.paceUs = 150;
  auto rec = run(job);
  EXPECT_GT(checkIdentical(job, rec), static_cast<size_t>(job.comms * job.collectives) / 10);
}

TEST_F(MultiProcess, SixtyFourProcessesOneMillionCollectivesSpacing8) {
  Job job;
  job.port = freePort();
  job.procs = job.ranks = 64;
  job.comms = 4;
  job.collectives = 4000;
  job.spacing = "8";
  // 64 processes on a few cores: B0 is agreed after a few round trips of a loaded machine; at 300 us a
  // round the schedule starts well inside the run (at 50 us it once started after all 4,000). Changed
  // decisions prove the tables took effect; how many depends on how late B0 came (9.6% in one run with a
  // second suite building on the same 2 cores), so the bar is 1 in 20.
  job.paceUs = 300;
  auto rec = run(job);
  EXPECT_GT(checkIdentical(job, rec), static_cast<size_t>(job.comms * job.collectives) / 20);
}

// Once hung (all members alive at the 150 s limit): members' connections accepted by the proxy before later
// children were forked were inherited by those children, so the proxy's cuts of them never reached the
// member, which then waited on a dead connection (the fixture now closes inherited descriptors).
TEST_F(MultiProcess, ThirtyTwoProcessesWithConnectionsCut) {
  Job job;
  uint16_t coordPort = freePort();
  do job.port = freePort();
  while (job.port == coordPort);
  job.procs = job.ranks = 32;
  job.comms = 4;
  // Enough rounds for B0 to be agreed while connections are cut (an answer lost with its connection is
  // given again when the member joins anew).
  job.collectives = 3000;
  job.paceUs = 200;
  HostedCoordinator coord(coordPort);
  ASSERT_TRUE(coord.plane->hosting());
  CuttingProxy proxy(job.port, coordPort, 30);
  auto kids = spawn(job);
  expectNoInheritedSockets(kids);
  auto rec = finish(job, kids);
  EXPECT_GT(checkIdentical(job, rec), 0u);
  EXPECT_GT(proxy.cuts(), 5);
  EXPECT_EQ(coord.logged("observe-only"), 0u) << "some member's joins never reached the coordinator";
}

}  // namespace
}  // namespace wirewise::control
