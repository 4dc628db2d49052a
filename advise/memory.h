// The strategies the advisor compares, and the memory each needs per GPU: model states by the ZeRO paper's
// accounting (Rajbhandari et al. 2020, §3 and Fig. 1) and activations by Korthikanti et al. 2022 (§4).
// Pure; formulas in docs/advise.md §2.
#pragma once

#include <cstdint>
#include <optional>
#include <string_view>

#include "advise/model_spec.h"

namespace wirewise::advise {

enum class StrategyKind : uint8_t { Ddp, FsdpFull, FsdpGradOp, Hsdp, Zero1, Zero2, Zero3 };
inline constexpr StrategyKind kAllStrategies[] = {StrategyKind::Ddp,  StrategyKind::FsdpFull, StrategyKind::FsdpGradOp,
                                                  StrategyKind::Hsdp, StrategyKind::Zero1,    StrategyKind::Zero2,
                                                  StrategyKind::Zero3};
std::string_view strategyName(StrategyKind k);  // "ddp", "fsdp_full", "fsdp_grad_op", "hsdp", "zero1", ...
std::optional<StrategyKind> parseStrategy(std::string_view s);

// One strategy with its knobs. dp x tp = ranks; shardGroup is HSDP's shard group size in data-parallel ranks
// (the GPUs of one node, or of several, divided by tp); the others shard over all dp ranks or not at all.
struct Strategy {
  StrategyKind kind = StrategyKind::Ddp;
  int tp = 1;
  int dp = 1;
  int shardGroup = 0;       // HSDP only
  double bucketCapMb = 25;  // DDP's bucket_cap_mb (MiB, as PyTorch); also ZeRO-1/2's reduce/all-gather bucket
};

// GB = 1e9 bytes, per GPU.
struct MemoryGb {
  double params = 0, grads = 0, optimizer = 0, activations = 0;
  double total() const { return params + grads + optimizer + activations; }
};

// Over how many ranks each model state is divided (1 = replicated), after tensor parallelism.
struct ShardFactors {
  int params = 1, grads = 1, optimizer = 1;
};
ShardFactors shardFactors(const Strategy& s);

// Model states only (ZeRO paper Fig. 1 figures): params x weightBytes / (tp x P), grads likewise, optimizer
// K x params / (tp x O).
MemoryGb modelStateMemory(double params, const TrainingSpec& t, const Strategy& s);
// Activations of one micro batch per GPU (Korthikanti et al. 2022, eq. 1-2 and §5): per layer
// s b h (10 + 24 / tp + 5 a s / (h tp)) bytes (the last term only without flash attention), 2 s b h with full
// checkpointing plus one layer being recomputed; plus the fp32 logits 4 s b V / tp.
double activationBytes(const ModelSpec& m, const TrainingSpec& t, int tp);
MemoryGb memoryPerGpu(const ModelSpec& m, const TrainingSpec& t, const Strategy& s);

}  // namespace wirewise::advise
