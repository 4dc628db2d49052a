// Memory per GPU; see memory.h and docs/advise.md §2.
#include "advise/memory.h"

#include <algorithm>

namespace wirewise::advise {

std::string_view strategyName(StrategyKind k) {
  switch (k) {
    case StrategyKind::Ddp: return "ddp";
    case StrategyKind::FsdpFull: return "fsdp_full";
    case StrategyKind::FsdpGradOp: return "fsdp_grad_op";
    case StrategyKind::Hsdp: return "hsdp";
    case StrategyKind::Zero1: return "zero1";
    case StrategyKind::Zero2: return "zero2";
    case StrategyKind::Zero3: return "zero3";
  }
  return "?";
}

std::optional<StrategyKind> parseStrategy(std::string_view s) {
  for (StrategyKind k : kAllStrategies) {
    if (strategyName(k) == s) return k;
  }
  return std::nullopt;
}

ShardFactors shardFactors(const Strategy& s) {
  const int dp = std::max(1, s.dp);
  switch (s.kind) {
    case StrategyKind::Ddp: return {1, 1, 1};
    case StrategyKind::Zero1: return {1, 1, dp};
    // SHARD_GRAD_OP keeps the gathered parameters from forward to backward: at the peak they are whole.
    case StrategyKind::Zero2:
    case StrategyKind::FsdpGradOp: return {1, dp, dp};
    case StrategyKind::Zero3:
    case StrategyKind::FsdpFull: return {dp, dp, dp};
    case StrategyKind::Hsdp: {
      const int g = std::clamp(s.shardGroup, 1, dp);
      return {g, g, g};
    }
  }
  return {};
}

MemoryGb modelStateMemory(double params, const TrainingSpec& t, const Strategy& s) {
  const ShardFactors f = shardFactors(s);
  const double perRank = params / std::max(1, s.tp);
  MemoryGb m;
  m.params = perRank * weightBytes(t) / f.params / 1e9;
  m.grads = perRank * weightBytes(t) / f.grads / 1e9;
  m.optimizer = perRank * optimizerBytesPerParam(t) / f.optimizer / 1e9;
  return m;
}

double activationBytes(const ModelSpec& m, const TrainingSpec& t, int tp) {
  const double s = m.seqLen, b = t.microBatch, h = m.hidden, a = m.heads, tpd = std::max(1, tp);
  double perLayer = 10.0 + 24.0 / tpd;
  if (!t.flashAttention && h > 0) perLayer += 5.0 * a * s / (h * tpd);
  const double layer = s * b * h * perLayer;
  const double layers = t.checkpointing ? 2.0 * s * b * h * m.layers + layer : layer * m.layers;
  const double logits = 4.0 * s * b * m.vocab / tpd;
  return layers + logits;
}

MemoryGb memoryPerGpu(const ModelSpec& m, const TrainingSpec& t, const Strategy& s) {
  MemoryGb out = modelStateMemory(paramCount(m), t, s);
  out.activations = activationBytes(m, t, s.tp) / 1e9;
  return out;
}

}  // namespace wirewise::advise
