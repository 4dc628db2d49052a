// Costs a strategy's step on a simulated cluster: compute time from FLOPs, every collective's time from the
// simulator (NCCL 2.28's default choice from its frozen cost table, and wirewise's best enabled choice, both timed
// by the truth model on the given link state), and a two-stream schedule that overlaps what can overlap.
// docs/advise.md §3 and §5.
#pragma once

#include <map>
#include <memory>
#include <tuple>
#include <vector>

#include "advise/memory.h"
#include "advise/model_spec.h"
#include "advise/sequence.h"
#include "sim/model/nccl_model.h"
#include "sim/model/scenario.h"
#include "sim/model/truth.h"

namespace wirewise::advise {

// Dense 16-bit tensor-core peak per GPU, TFLOP/s (vendor datasheets): H100/H200 SXM 989, A100 SXM 312, H100 PCIe
// 756, generic 312; fp32 training runs on TF32, half of it.
double peakTflops(sim::GpuKind gpu, Precision p);
// HBM per GPU, GB: H100 80, H200 141, A100 80, H100 PCIe 80, generic 80.
double gpuMemoryGb(sim::GpuKind gpu);

struct ComputeSpec {
  double peakTflops = 0;  // per GPU
  double mfu = 0.4;       // model FLOPs utilisation
};
// One micro batch's forward + backward on one GPU, µs: trainingFlops(b x s tokens) / tp / (peak x MFU).
double microComputeUs(const ModelSpec& m, const TrainingSpec& t, const Strategy& s, const ComputeSpec& c);

// The global ranks of one representative communicator per group (rank r = node x gpusPerNode + local):
// tp = locals [0, tp) of node 0; dp = every rank whose local index is a multiple of tp; shard = the first
// shardGroup dp ranks; replica = the dp ranks at the same position of every shard group.
std::vector<int> groupRanks(const sim::ClusterSpec& c, const Strategy& s, CommGroup g);

// Two-stream schedule of one micro batch: compute tasks in order (each waits for its waitComm), communication ops
// in order on one stream (each waits for its afterCompute), blocking ops inside their compute task. Returns the
// time until both streams are idle, µs. opUs[i] is comms[i]'s time.
double scheduleUs(const MicroPlan& plan, double computeUs, const std::vector<double>& opUs);

struct StepTime {
  double stepUs = 0;
  double computeUs = 0;  // microBatches x compute of one micro batch
  double exposedUs = 0;  // stepUs - computeUs: communication nothing hides
};

// Times collectives on one cluster. Keeps NCCL models per communicator and op times per link state, so that
// costing many strategies on a few link states stays cheap; not thread-safe.
class ClusterCoster {
 public:
  explicit ClusterCoster(const sim::ClusterSpec& cluster);
  const sim::ClusterSpec& cluster() const { return cluster_; }

  // Registers a link state (healthy, faulted); returns its id for the calls below.
  int addLinkState(const sim::LinkState& links);

  struct OpTime {
    double ncclUs = 0;      // NCCL's default (algo, proto, channels), on these links
    double wirewiseUs = 0;  // the best (algo, proto, channels) among those NCCL's table enables, on these links
  };
  OpTime opTime(const std::vector<int>& ranks, CollType coll, size_t bytes, sim::DType dtype, int linkState);

  // The whole step with NCCL's default choices (wirewise = false) or wirewise's.
  StepTime stepTime(const StepPlan& plan, const Strategy& s, sim::DType dtype, double microComputeUs, int linkState,
                    bool wirewise);

 private:
  struct Comm {
    std::unique_ptr<sim::NcclModel> model;
    int concurrency = 1;  // groups like this one sharing each node's NICs at the same time
  };
  Comm& comm(const std::vector<int>& ranks);
  const sim::LinkState& scaledLinks(int linkState, int concurrency);

  sim::ClusterSpec cluster_;
  std::vector<sim::LinkState> links_;
  std::map<std::vector<int>, Comm> comms_;
  std::map<std::pair<int, int>, sim::LinkState> scaled_;
  std::map<std::tuple<const Comm*, int, size_t, int, int>, OpTime> times_;
};

}  // namespace wirewise::advise
