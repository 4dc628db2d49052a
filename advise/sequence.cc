// Per-strategy collective sequences; see sequence.h and docs/advise.md §4.
#include "advise/sequence.h"

#include <algorithm>
#include <cmath>

namespace wirewise::advise {
namespace {

// Builds one micro batch's plan: the compute tasks first, then the ops, in issue order.
class MicroBuilder {
 public:
  MicroBuilder(const std::vector<double>& unitBytes, const std::vector<double>& unitFlops, double fwdFraction)
      : bytes_(unitBytes) {
    const int units = static_cast<int>(unitBytes.size());
    double total = 0;
    for (double f : unitFlops) total += f;
    for (int u = 0; u < units; ++u) {
      plan_.compute.push_back({Phase::Forward, u, fwdFraction * unitFlops[static_cast<size_t>(u)] / total, -1});
    }
    for (int u = units - 1; u >= 0; --u) {
      plan_.compute.push_back({Phase::Backward, u, (1 - fwdFraction) * unitFlops[static_cast<size_t>(u)] / total, -1});
    }
  }
  int units() const { return static_cast<int>(bytes_.size()); }
  int fwd(int u) const { return u; }
  int bwd(int u) const { return 2 * units() - 1 - u; }  // backward runs units in reverse
  size_t unitBytes(int u) const { return static_cast<size_t>(std::llround(bytes_[static_cast<size_t>(u)])); }

  int add(CommOp op) {
    plan_.comms.push_back(op);
    return static_cast<int>(plan_.comms.size()) - 1;
  }
  void setReplicaShard(int g) { replicaShard_ = g; }
  void needs(int task, int op) { plan_.compute[static_cast<size_t>(task)].waitComm = op; }

  // Sharded parameters: every unit gathered before its forward, prefetched one unit ahead.
  void forwardGathers(CommGroup g) {
    for (int u = 0; u < units(); ++u) {
      const int op = add({g, CollType::AllGather, unitBytes(u), Phase::Forward, u, u > 0 ? fwd(u - 1) : -1, true, -1});
      needs(fwd(u), op);
    }
  }

  // FULL_SHARD / ZeRO-3 / HSDP backward: gather unit k (prefetched when unit k+1's backward starts), reduce-scatter
  // its gradients when its backward ends; HSDP then all-reduces the shard across replicas.
  void backwardShards(CommGroup g, bool gather, int replicas) {
    for (int u = units() - 1; u >= 0; --u) {
      if (gather) {
        const bool first = u == units() - 1;
        const int after = first ? fwd(units() - 1) : bwd(u + 1);
        needs(bwd(u), add({g, CollType::AllGather, unitBytes(u), Phase::Backward, u, after, !first, -1}));
      }
      // The previous unit's reduce-scatter is issued at the end of its backward, after this unit's prefetch.
      if (u < units() - 1) reduce(g, u + 1, replicas);
    }
    reduce(g, 0, replicas);
  }

  // Gradient buckets in backward order (PyTorch DDP's reverse-parameter order): a bucket is ready when the
  // backward task producing its last byte ends.
  void backwardBuckets(CommGroup g, CollType coll, size_t cap) {
    size_t filled = 0;
    for (int u = units() - 1; u >= 0; --u) {
      size_t left = unitBytes(u);
      while (left > 0) {
        const size_t take = std::min(left, cap - filled);
        filled += take;
        left -= take;
        if (filled == cap) {
          add({g, coll, cap, Phase::Backward, u, bwd(u), false, -1});
          filled = 0;
        }
      }
    }
    if (filled > 0) add({g, coll, filled, Phase::Backward, 0, bwd(0), false, -1});
  }

  // Megatron tensor parallelism: two all-reduces of the layer's activations in forward, two in backward, two more
  // when checkpointing recomputes the forward (Shoeybi et al. 2019, Fig. 4; Korthikanti et al. 2022 §3).
  void tensorParallel(size_t activationBytes, bool checkpointing) {
    for (int u = 1; u < units(); ++u) {
      for (int i = 0; i < 2; ++i)
        add({CommGroup::Tp, CollType::AllReduce, activationBytes, Phase::Forward, u, -1, false, fwd(u)});
      const int back = checkpointing ? 4 : 2;
      for (int i = 0; i < back; ++i) {
        add({CommGroup::Tp, CollType::AllReduce, activationBytes, Phase::Backward, u, -1, false, bwd(u)});
      }
    }
  }

  MicroPlan take() { return std::move(plan_); }

 private:
  void reduce(CommGroup g, int u, int replicas) {
    add({g, CollType::ReduceScatter, unitBytes(u), Phase::Backward, u, bwd(u), false, -1});
    if (replicas > 1) {
      const size_t shard = (unitBytes(u) + static_cast<size_t>(replicaShard_) - 1) / static_cast<size_t>(replicaShard_);
      add({CommGroup::Replica, CollType::AllReduce, shard, Phase::Backward, u, bwd(u), false, -1});
    }
  }

  std::vector<double> bytes_;
  int replicaShard_ = 1;  // HSDP: shard group size (the replica all-reduce moves 1/g of the unit)
  MicroPlan plan_;
};

}  // namespace

std::string_view phaseName(Phase p) {
  switch (p) {
    case Phase::Forward: return "forward";
    case Phase::Backward: return "backward";
    case Phase::Optimizer: return "optimizer";
  }
  return "?";
}

std::string_view commGroupName(CommGroup g) {
  switch (g) {
    case CommGroup::Dp: return "dp";
    case CommGroup::Shard: return "shard";
    case CommGroup::Replica: return "replica";
    case CommGroup::Tp: return "tp";
  }
  return "?";
}

int microBatchesPerStep(const TrainingSpec& t, int dp) {
  const long per = static_cast<long>(std::max(1, t.microBatch)) * std::max(1, dp);
  return static_cast<int>(std::max(1L, (t.globalBatch + per - 1) / per));
}

sim::DType commDtype(const TrainingSpec& t) {
  switch (t.precision) {
    case Precision::Bf16: return sim::DType::Bf16;
    case Precision::Fp16: return sim::DType::F16;
    case Precision::Fp32: return sim::DType::F32;
  }
  return sim::DType::Bf16;
}

StepPlan buildStepPlan(const ModelSpec& m, const TrainingSpec& t, const Strategy& s) {
  StepPlan plan;
  const int tp = std::max(1, s.tp), dp = std::max(1, s.dp);
  plan.microBatches = microBatchesPerStep(t, dp);
  const double total = paramCount(m), layer = m.layers > 0 ? layerParamCount(m) : 0;
  const double perLayer = m.params > 0 && m.layers > 0 ? std::min(layer, total / m.layers) : layer;
  plan.unitParams.push_back(std::max(0.0, total - perLayer * m.layers));
  for (int l = 0; l < m.layers; ++l) plan.unitParams.push_back(perLayer);

  std::vector<double> bytes, flops;
  const double attentionFlops = 12.0 * static_cast<double>(m.hidden) * m.seqLen;  // per token per layer
  for (size_t u = 0; u < plan.unitParams.size(); ++u) {
    bytes.push_back(plan.unitParams[u] / tp * weightBytes(t));
    flops.push_back(6.0 * plan.unitParams[u] + (u > 0 ? attentionFlops : 0.0));
  }
  const double fwdFraction = t.checkpointing ? 0.25 : 1.0 / 3.0;
  const size_t cap = std::max<size_t>(1, static_cast<size_t>(s.bucketCapMb * 1024 * 1024));
  const size_t tpBytes =
      static_cast<size_t>(std::llround(static_cast<double>(m.seqLen) * t.microBatch * m.hidden * weightBytes(t)));

  auto micro = [&](bool lastMicro) {
    MicroBuilder b(bytes, flops, fwdFraction);
    switch (s.kind) {
      case StrategyKind::Ddp:
        if (lastMicro) b.backwardBuckets(CommGroup::Dp, CollType::AllReduce, cap);
        break;
      case StrategyKind::Zero1:
        if (lastMicro) b.backwardBuckets(CommGroup::Dp, CollType::ReduceScatter, cap);
        break;
      case StrategyKind::Zero2: b.backwardBuckets(CommGroup::Dp, CollType::ReduceScatter, cap); break;
      case StrategyKind::FsdpGradOp:
        b.forwardGathers(CommGroup::Dp);
        b.backwardShards(CommGroup::Dp, false, 1);
        break;
      case StrategyKind::FsdpFull:
      case StrategyKind::Zero3:
        b.forwardGathers(CommGroup::Dp);
        b.backwardShards(CommGroup::Dp, true, 1);
        break;
      case StrategyKind::Hsdp: {
        const int g = std::clamp(s.shardGroup, 1, dp);
        b.setReplicaShard(g);
        b.forwardGathers(CommGroup::Shard);
        b.backwardShards(CommGroup::Shard, true, dp / g);
        break;
      }
    }
    if (tp > 1) b.tensorParallel(tpBytes, t.checkpointing);
    return b.take();
  };
  plan.last = micro(true);
  if (plan.microBatches > 1) plan.accumulate = micro(false);

  if (s.kind == StrategyKind::Zero1 || s.kind == StrategyKind::Zero2) {
    // After the step every rank all-gathers the updated parameters, in buckets (DeepSpeed's allgather_bucket_size).
    double left = 0;
    for (double b : bytes) left += b;
    size_t remaining = static_cast<size_t>(std::llround(left));
    while (remaining > 0) {
      const size_t take = std::min(remaining, cap);
      plan.optimizer.push_back({CommGroup::Dp, CollType::AllGather, take, Phase::Optimizer, -1, -1, false, -1});
      remaining -= take;
    }
  }
  return plan;
}

size_t sumBytes(const std::vector<CommOp>& ops, OpFilter f) {
  size_t sum = 0;
  for (const CommOp& op : ops) {
    if (f.group >= 0 && static_cast<int>(op.group) != f.group) continue;
    if (f.coll >= 0 && static_cast<int>(op.coll) != f.coll) continue;
    if (f.phase >= 0 && static_cast<int>(op.phase) != f.phase) continue;
    sum += op.bytes;
  }
  return sum;
}

size_t countOps(const std::vector<CommOp>& ops, OpFilter f) {
  size_t n = 0;
  for (const CommOp& op : ops) {
    if (f.group >= 0 && static_cast<int>(op.group) != f.group) continue;
    if (f.coll >= 0 && static_cast<int>(op.coll) != f.coll) continue;
    if (f.phase >= 0 && static_cast<int>(op.phase) != f.phase) continue;
    ++n;
  }
  return n;
}

double dataParallelVolumeInParams(const StepPlan& plan, const TrainingSpec& t, double params) {
  double elements = 0;
  auto add = [&](const std::vector<CommOp>& ops, double times) {
    for (const CommOp& op : ops) {
      if (op.group == CommGroup::Tp) continue;
      const double e = static_cast<double>(op.bytes) / weightBytes(t);
      elements += times * (op.coll == CollType::AllReduce ? 2 * e : e);
    }
  };
  add(plan.accumulate.comms, plan.microBatches - 1);
  add(plan.last.comms, 1);
  add(plan.optimizer, 1);
  return elements / params;
}

}  // namespace wirewise::advise
