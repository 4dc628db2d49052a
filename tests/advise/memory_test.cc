// Memory accounting against the ZeRO paper's Fig. 1 and the presets' published parameter counts.
#include <gtest/gtest.h>

#include "advise/memory.h"
#include "advise/model_spec.h"

namespace wirewise::advise {
namespace {

Strategy make(StrategyKind k, int dp, int tp = 1, int group = 0) {
  Strategy s;
  s.kind = k;
  s.dp = dp;
  s.tp = tp;
  s.shardGroup = group;
  return s;
}

// Rajbhandari et al. 2020 (ZeRO), Fig. 1: Psi = 7.5B, N_d = 64, K = 12 (mixed-precision Adam).
TEST(ZeroPaperFig1, ModelStatesPerGpu) {
  const double psi = 7.5e9;
  const TrainingSpec t;  // bf16 + Adam: 2 + 2 + 12 bytes per parameter
  EXPECT_NEAR(modelStateMemory(psi, t, make(StrategyKind::Ddp, 64)).total(), 120.0, 0.05);
  EXPECT_NEAR(modelStateMemory(psi, t, make(StrategyKind::Zero1, 64)).total(), 31.4, 0.05);
  EXPECT_NEAR(modelStateMemory(psi, t, make(StrategyKind::Zero2, 64)).total(), 16.6, 0.05);
  EXPECT_NEAR(modelStateMemory(psi, t, make(StrategyKind::Zero3, 64)).total(), 1.9, 0.05);
  // FSDP's modes hold the same states as the ZeRO stage they mirror.
  EXPECT_DOUBLE_EQ(modelStateMemory(psi, t, make(StrategyKind::FsdpFull, 64)).total(),
                   modelStateMemory(psi, t, make(StrategyKind::Zero3, 64)).total());
  EXPECT_DOUBLE_EQ(modelStateMemory(psi, t, make(StrategyKind::FsdpGradOp, 64)).total(),
                   modelStateMemory(psi, t, make(StrategyKind::Zero2, 64)).total());
}

// The same accounting at other data-parallel degrees (ZeRO paper, Table 1, 7.5B row) and its headline: a 1T model
// needs 15.6 GB per GPU with P_os+g+p on 1024 GPUs, so it fits a 32 GB V100.
TEST(ZeroPaperTable1, OtherDegreesAndTheTrillionParameterModel) {
  const TrainingSpec t;
  struct Row {
    int nd;
    double pos, posg, posgp;
  };
  for (const Row& r :
       {Row{4, 52.5, 41.3, 30.0}, Row{16, 35.6, 21.6, 7.5}, Row{256, 30.4, 15.4, 0.47}, Row{1024, 30.1, 15.1, 0.12}}) {
    EXPECT_NEAR(modelStateMemory(7.5e9, t, make(StrategyKind::Zero1, r.nd)).total(), r.pos, 0.05) << r.nd;
    EXPECT_NEAR(modelStateMemory(7.5e9, t, make(StrategyKind::Zero2, r.nd)).total(), r.posg, 0.05) << r.nd;
    EXPECT_NEAR(modelStateMemory(7.5e9, t, make(StrategyKind::Zero3, r.nd)).total(), r.posgp, 0.005) << r.nd;
  }
  EXPECT_NEAR(modelStateMemory(1e12, t, make(StrategyKind::Zero3, 1024)).total(), 15.6, 0.05);
}

TEST(ZeroPaperFig1, Breakdown) {
  const MemoryGb m = modelStateMemory(7.5e9, TrainingSpec{}, make(StrategyKind::Zero1, 64));
  EXPECT_DOUBLE_EQ(m.params, 15.0);  // 2 Psi
  EXPECT_DOUBLE_EQ(m.grads, 15.0);   // 2 Psi
  EXPECT_NEAR(m.optimizer, 12 * 7.5 / 64, 1e-9);
}

TEST(Memory, HsdpShardsOverItsGroupAndTpDividesEverything) {
  const TrainingSpec t;
  const MemoryGb h = modelStateMemory(8e9, t, make(StrategyKind::Hsdp, 16, 1, 8));
  EXPECT_DOUBLE_EQ(h.total(), 16.0 * 8 / 8);
  const MemoryGb tp = modelStateMemory(8e9, t, make(StrategyKind::Ddp, 2, 8));
  EXPECT_DOUBLE_EQ(tp.total(), 16.0 * 8 / 8);
}

TEST(Memory, OptimizerBytes) {
  TrainingSpec t;
  EXPECT_EQ(optimizerBytesPerParam(t), 12);
  t.optimizer = Optimizer::Sgd;
  EXPECT_EQ(optimizerBytesPerParam(t), 8);
  t.precision = Precision::Fp32;
  t.optimizer = Optimizer::Adam;
  EXPECT_EQ(optimizerBytesPerParam(t), 8);
  EXPECT_EQ(weightBytes(t), 4);
}

// Korthikanti et al. 2022, eq. 1: s b h (34 + 5 a s / h) per layer without TP, 2 s b h with full recomputation.
TEST(Memory, Activations) {
  ModelSpec m = *modelPreset("llama-7b");
  TrainingSpec t;
  t.flashAttention = false;
  const double sbh = 4096.0 * 1 * 4096;
  const double logits = 4.0 * 4096 * 32000;
  EXPECT_NEAR(activationBytes(m, t, 1), 32 * sbh * (34 + 5.0 * 32 * 4096 / 4096) + logits, 1);
  t.flashAttention = true;
  EXPECT_NEAR(activationBytes(m, t, 1), 32 * sbh * 34 + logits, 1);
  EXPECT_NEAR(activationBytes(m, t, 8), 32 * sbh * (10 + 3) + logits / 8, 1);
  t.checkpointing = true;
  EXPECT_NEAR(activationBytes(m, t, 1), 32 * 2 * sbh + 34 * sbh + logits, 1);
  EXPECT_LT(activationBytes(m, t, 1), 0.15 * activationBytes(m, TrainingSpec{}, 1));
}

TEST(Presets, PublishedParameterCounts) {
  EXPECT_NEAR(paramCount(*modelPreset("llama-7b")) / 1e9, 6.74, 0.01);
  EXPECT_NEAR(paramCount(*modelPreset("llama-13b")) / 1e9, 13.02, 0.01);
  EXPECT_NEAR(paramCount(*modelPreset("llama-70b")) / 1e9, 68.98, 0.01);
  EXPECT_NEAR(paramCount(*modelPreset("gpt-1.3b")) / 1e9, 1.3, 0.05);
  EXPECT_FALSE(modelPreset("llama-8t"));
  const ModelSpec shaped = shapeForParams(7.5e9, 32000, 2048);
  EXPECT_DOUBLE_EQ(paramCount(shaped), 7.5e9);
  EXPECT_EQ(shaped.hidden % 128, 0);
  EXPECT_NEAR(12.0 * shaped.layers * shaped.hidden * shaped.hidden / 7.5e9, 1.0, 0.15);
}

TEST(Presets, Flops) {
  const ModelSpec m = *modelPreset("llama-7b");
  TrainingSpec t;
  const double perToken = 6 * paramCount(m) + 12.0 * 32 * 4096 * 4096;
  EXPECT_DOUBLE_EQ(trainingFlops(m, t, 1000), perToken * 1000);
  t.checkpointing = true;
  EXPECT_DOUBLE_EQ(trainingFlops(m, t, 1000), perToken * 1000 * 4 / 3);
}

}  // namespace
}  // namespace wirewise::advise
