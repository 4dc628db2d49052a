// Each strategy's collectives for one training step, generated from the model: sizes, order, the communicator
// each runs on, and which compute it waits for or overlaps (backward all-reduce buckets, FSDP prefetch, tensor
// parallel all-reduces that block the layer). Pure; docs/advise.md §4 describes every sequence.
//
// The step is split into FSDP-style units: unit 0 is the "root" (embeddings, output head, final norm), units
// 1..L the transformer layers. Forward runs units 0..L, backward L..0; each unit's compute is its share of the
// micro batch's FLOPs.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string_view>
#include <vector>

#include "adaptive/types.h"
#include "advise/memory.h"
#include "advise/model_spec.h"
#include "sim/model/scenario.h"

namespace wirewise::advise {

enum class Phase : uint8_t { Forward, Backward, Optimizer };
// Dp: the data-parallel ranks (all ranks with one tensor-parallel index); Shard / Replica: HSDP's two groups;
// Tp: the tensor-parallel group inside a node.
enum class CommGroup : uint8_t { Dp, Shard, Replica, Tp };
std::string_view phaseName(Phase p);
std::string_view commGroupName(CommGroup g);

struct CommOp {
  CommGroup group = CommGroup::Dp;
  CollType coll = CollType::AllReduce;
  size_t bytes = 0;  // NCCL's nBytes: the whole buffer (all-gather output, reduce-scatter input)
  Phase phase = Phase::Backward;
  int unit = -1;
  // Ops run in list order on one communication stream. An op starts once the previous op is done and the
  // compute task `afterCompute` has started (afterStart: a prefetch) or ended; -1 = from the start of the pass.
  int afterCompute = -1;
  bool afterStart = false;
  // >= 0: a blocking op that runs inside that compute task (tensor parallel); not on the communication stream.
  int inlineWith = -1;
};

struct ComputeTask {
  Phase phase = Phase::Forward;
  int unit = 0;
  double share = 0;   // of the micro batch's compute time (all tasks sum to 1)
  int waitComm = -1;  // the op (index into comms) whose result this task needs first, e.g. its all-gather
};

// One forward + backward of a micro batch.
struct MicroPlan {
  std::vector<ComputeTask> compute;
  std::vector<CommOp> comms;
};

// A step: `accumulate` runs microBatches - 1 times (gradient accumulation, no DDP sync), `last` once, then the
// optimizer-phase ops (ZeRO-1/2's parameter all-gather) run exposed.
struct StepPlan {
  int microBatches = 1;
  std::vector<double> unitParams;  // parameters per unit, before tensor parallelism
  MicroPlan accumulate;
  MicroPlan last;
  std::vector<CommOp> optimizer;
};

// Micro batches per step: ceil(globalBatch / (microBatch x dp)).
int microBatchesPerStep(const TrainingSpec& t, int dp);
sim::DType commDtype(const TrainingSpec& t);
StepPlan buildStepPlan(const ModelSpec& m, const TrainingSpec& t, const Strategy& s);

// Per-step bytes of the ops in `ops` that match (group, coll, phase); any = no filter on that field.
struct OpFilter {
  int group = -1, coll = -1, phase = -1;
};
size_t sumBytes(const std::vector<CommOp>& ops, OpFilter f = {});
size_t countOps(const std::vector<CommOp>& ops, OpFilter f = {});
inline OpFilter byColl(CollType c) { return {-1, static_cast<int>(c), -1}; }
inline OpFilter byGroupColl(CommGroup g, CollType c) { return {static_cast<int>(g), static_cast<int>(c), -1}; }
inline OpFilter byPhaseColl(Phase p, CollType c) { return {-1, static_cast<int>(c), static_cast<int>(p)}; }

// Data-parallel traffic per GPU of one step in units of parameters, the ZeRO paper's way (§7: an all-reduce moves
// 2 elements per element, a reduce-scatter or an all-gather 1): DDP 2, ZeRO-1/2 2, ZeRO-3 and FULL_SHARD 3
// (one micro batch, tp = 1). Tensor-parallel ops are left out.
double dataParallelVolumeInParams(const StepPlan& plan, const TrainingSpec& t, double params);

}  // namespace wirewise::advise
