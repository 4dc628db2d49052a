// What agreement costs a job at start (label `bench`): the time each process takes to its 1,000th round
// of collectives (its communicators' init included) and the time its getCollInfo calls waited, with
// agreement on (the default, with the adaptive policy) and off, for 8, 32 and 64 processes of one job.
// No start barrier: processes come up when the scheduler lets them, and nobody may wait for the late ones.
//
// The target is a median extra time to the 1,000th round under 1 ms, on a machine with a core for each
// rank: the first row runs as many processes as this machine has cores, and says whether it is met. The
// others put up to 64 processes on those cores. Agreement adds about 0.16 million instructions to NCCL's
// thread at init (callgrind, two communicators' tunerInit: 0.46 million with WIREWISE_SYNC=off, 0.61 with
// it on), and its control-plane thread connects, joins and answers the first proposal beside it; with
// more processes than cores those threads queue for the cores, so there the median extra grows with the
// oversubscription (about procs / cores x 1 ms): the table says how far from the target this machine is.
// What fails the benchmark is what the protocol itself would cause: a rank waiting for members (seconds,
// the join timeout of old) or an init that blocks (a name lookup, a connect): more than 250 ms either way.
#include <algorithm>
#include <cstdio>
#include <thread>

#include "tests/control/multiprocess_fixture.h"

namespace wirewise::control {
namespace {

struct Figures {
  double medianMs = 0, p90Ms = 0, medianInitMs = 0, medianWaitMs = 0, maxWaitMs = 0;
};

double quantile(std::vector<double> v, double q) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  return v[static_cast<size_t>(q * static_cast<double>(v.size() - 1) + 0.5)];
}

class AgreementCost : public MultiProcess {
 protected:
  Figures measure(int procs, const std::string& sync) {
    Job job;
    job.port = freePort();
    job.procs = job.ranks = procs;
    job.comms = 2;
    job.collectives = 1000;
    job.paceUs = 20;
    job.barrier = false;
    job.sync = sync;
    job.policy = "";
    job.spacing = "0";  // production spacing from measured rates, as in a real job
    auto rec = run(job);
    checkIdentical(job, rec);
    std::vector<double> total, init, wait;
    for (int p = 0; p < procs; ++p) {
      auto [i, t] = timing(p);
      total.push_back(static_cast<double>(i + t) / 1000.0);
      init.push_back(static_cast<double>(i) / 1000.0);
      wait.push_back(static_cast<double>(waitedUs(p)) / 1000.0);
    }
    std::filesystem::remove_all(dir_);
    std::filesystem::create_directories(dir_);
    return {quantile(total, 0.5), quantile(total, 0.9), quantile(init, 0.5), quantile(wait, 0.5),
            quantile(wait, 1.0)};
  }
};

TEST_F(AgreementCost, TimeToTheThousandthCollective) {
  std::printf("processes  agreement  to 1,000th: median  p90 ms  init median ms  waited: median  max ms\n");
  const int cores = static_cast<int>(std::max(2u, std::thread::hardware_concurrency()));
  std::vector<int> sizes{cores};
  for (int procs : {8, 32, 64})
    if (procs > cores) sizes.push_back(procs);
  for (int procs : sizes) {
    // Off and on alternate, three times each: the machine's load drifts, and a pair sees the same drift.
    std::vector<double> extra;
    for (int rep = 0; rep < 3; ++rep) {
      Figures off = measure(procs, "off");
      Figures on = measure(procs, "on");
      for (const auto& [name, f] : {std::pair{"off", off}, std::pair{"on", on}})
        std::printf("%9d  %9s  %18.2f  %6.2f  %14.2f  %14.3f  %6.3f\n", procs, name, f.medianMs, f.p90Ms,
                    f.medianInitMs, f.medianWaitMs, f.maxWaitMs);
      extra.push_back(on.medianMs - off.medianMs);
      // A boundary's verdict is a round trip away; on this machine, with 64 processes, tens of ms.
      EXPECT_LE(on.maxWaitMs, 250.0) << procs << " processes: a rank waited as if for a member";
    }
    const double medianExtra = quantile(extra, 0.5);
    std::printf("%9d  median extra with agreement on: %.2f ms (target 1 ms with a core per rank: %s here, "
                "%d cores for %d processes%s)\n",
                procs, medianExtra, medianExtra <= 1.0 ? "met" : "not met", cores, procs,
                procs <= cores ? ", a core per rank" : "");
    EXPECT_LE(medianExtra, 250.0) << procs << " processes";
  }
}

}  // namespace
}  // namespace wirewise::control
