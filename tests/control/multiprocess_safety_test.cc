// Safety through real processes and the real library.
// - The heterogeneity guard: half of the ranks see NCCL cost tables that prefer Tree, the other half Ring (a
//   mixed cluster, the NVIDIA/nccl #1136 hang). Without wirewise they diverge on every collective; with it,
//   from the boundary after their cost tables were reported, every rank runs the one pinned choice, and the
//   coordinator says so.
// - WIREWISE_SYNC_GIVE_UP_MS: with the coordinator gone, members stop waiting at the next boundary and every
//   later getCollInfo returns an error (NCCL fails the collective) instead of waiting for ever.
#include "tests/control/multiprocess_fixture.h"

namespace wirewise::control {
namespace {

// How many collectives (over all comms) a process ran differently from process 0 before collective `to`.
size_t differencesBefore(const Job& job, const std::vector<std::vector<uint8_t>>& rec, size_t p, long to) {
  size_t n = 0;
  for (size_t i = 0; i + 2 < rec[p].size() && i + 2 < rec[0].size(); i += 3)
    if (static_cast<long>((i / 3) % static_cast<size_t>(job.collectives)) < to &&
        (rec[p][i] != rec[0][i] || rec[p][i + 1] != rec[0][i + 1]))
      ++n;
  return n;
}

Job mixedJob(const std::string& sync) {
  Job job;
  job.port = freePort();
  job.procs = job.ranks = 8;
  job.comms = 3;
  job.collectives = 3000;
  job.sync = sync;
  job.policy = "static";  // no configuration: every verdict keeps NCCL's choices, but for the guard's pins
  for (int p = 1; p < job.procs; p += 2) job.env[p]["WW_TEST_TREE_FIRST"] = "1";
  return job;
}

TEST_F(MultiProcess, MixedRanksArePinnedToOneChoiceDeterministic) {
  Job job = mixedJob("deterministic");
  auto rec = run(job);
  // Every (collective, size) of the drivers' sequence appears before B0 = 64 and is reported at B0; verdict 1
  // (from B1 = 64 + 8) carries the pins.
  const long b1 = static_cast<long>(kB0) + 8;
  EXPECT_GT(differencesBefore(job, rec, 1, b1), 0u) << "the mixed tables did not make ranks differ";
  checkIdentical(job, rec, b1);
  EXPECT_GT(countLog(job.procs, "defaults differ"), 0u);
  EXPECT_GT(countLog(job.procs, "every rank runs tree/ll"), 0u);
}

TEST_F(MultiProcess, MixedRanksArePinnedToOneChoiceInProduction) {
  Job job = mixedJob("on");
  auto rec = run(job);
  // Production starts at the B0 all members accepted, and decides on the reports it has after 20 ms; a late
  // report's tables reach the guard for the next verdict. Well before collective 2000 every rank runs the
  // pinned choice.
  EXPECT_GT(differencesBefore(job, rec, 1, 64), 0u);
  checkIdentical(job, rec, 2000);
  EXPECT_GT(countLog(job.procs, "defaults differ"), 0u);
}

TEST_F(MultiProcess, GiveUpTurnsALostCoordinatorIntoErrorsNotAHang) {
  Job job;
  job.port = freePort();
  job.collectives = 100000;  // far more than can finish before the coordinator goes
  for (int p = 0; p < job.procs; ++p) job.env[p]["WIREWISE_SYNC_GIVE_UP_MS"] = "1000";
  auto coord = std::make_unique<HostedCoordinator>(job.port);
  auto kids = spawn(job);
  ASSERT_TRUE(awaitVerdict(job, 20)) << "no progress";
  coord.reset();
  // No kill: every process finishes on its own, each collective after its give-up point failed.
  auto rec = finish(job, kids);
  ASSERT_EQ(rec.size(), static_cast<size_t>(job.procs));
  const size_t perComm = static_cast<size_t>(job.collectives);
  for (int p = 0; p < job.procs; ++p) {
    ASSERT_EQ(rec[p].size(), perComm * static_cast<size_t>(job.comms) * 3) << "process " << p;
    for (int c = 0; c < job.comms; ++c) {
      const uint8_t* r = rec[p].data() + static_cast<size_t>(c) * perComm * 3;
      size_t firstError = perComm;
      for (size_t i = 0; i < perComm; ++i)
        if (r[3 * i] == 0xFE) {
          firstError = i;
          break;
        }
      EXPECT_LT(firstError, perComm) << "process " << p << " comm " << c << " never gave up";
      EXPECT_GT(firstError, kB0) << "process " << p << " comm " << c;
      // Once given up, every later collective fails: the comm never resumes with a table it cannot know.
      for (size_t i = firstError; i < perComm; ++i)
        if (r[3 * i] != 0xFE) {
          ADD_FAILURE() << "process " << p << " comm " << c << ": collective " << i << " ran after giving up";
          break;
        }
      // Before giving up, every member agreed with process 0 wherever both still ran.
      const uint8_t* r0 = rec[0].data() + static_cast<size_t>(c) * perComm * 3;
      for (size_t i = 0; i < firstError; ++i)
        if (r0[3 * i] != 0xFE && std::memcmp(r + 3 * i, r0 + 3 * i, 3) != 0) {
          ADD_FAILURE() << "divergence: process " << p << " comm " << c << " collective " << i;
          break;
        }
    }
  }
  EXPECT_GE(countLog(job.procs, "gave up after", "/err", ".txt"), static_cast<size_t>(job.procs * job.comms));
}

}  // namespace
}  // namespace wirewise::control
