// Each strategy's collective sequence: counts, sizes summing to the per-step volume, order and overlap links; the
// ZeRO paper's communication volumes (§7: DDP 2 Psi, ZeRO-1/2 2 Psi, ZeRO-3 3 Psi); the two-stream schedule.
#include <gtest/gtest.h>

#include <cmath>

#include "advise/sequence.h"
#include "advise/step_cost.h"

namespace wirewise::advise {
namespace {

constexpr double kMiB = 1024.0 * 1024.0;

struct Fixture {
  ModelSpec model = *modelPreset("llama-7b");
  TrainingSpec training;
  double psi = paramCount(model);
  Fixture() { training.globalBatch = 16; }  // one micro batch per step on 16 dp ranks
  Strategy strategy(StrategyKind k, int dp = 16, int tp = 1, int group = 0) const {
    Strategy s;
    s.kind = k;
    s.dp = dp;
    s.tp = tp;
    s.shardGroup = group;
    return s;
  }
  double paramBytes(int tp = 1) const { return psi / tp * 2; }
};

// Unit sizes are rounded to bytes one by one: sums agree with 2 Psi to within a byte per unit.
void expectBytes(size_t got, double want) { EXPECT_NEAR(static_cast<double>(got), want, 64) << "bytes"; }

TEST(Sequence, DdpAllReducesEveryGradientInBuckets) {
  Fixture f;
  Strategy s = f.strategy(StrategyKind::Ddp);
  s.bucketCapMb = 25;
  const StepPlan p = buildStepPlan(f.model, f.training, s);
  EXPECT_EQ(p.microBatches, 1);
  const auto& ops = p.last.comms;
  ASSERT_FALSE(ops.empty());
  EXPECT_EQ(countOps(ops), countOps(ops, byGroupColl(CommGroup::Dp, CollType::AllReduce)));
  expectBytes(sumBytes(ops), f.paramBytes());
  EXPECT_EQ(ops.size(), static_cast<size_t>(std::ceil(f.paramBytes() / (25 * kMiB))));
  for (size_t i = 0; i + 1 < ops.size(); ++i) EXPECT_EQ(ops[i].bytes, static_cast<size_t>(25 * kMiB));
  // Buckets fill in backward order and each waits for the backward task that completes it, in order.
  for (size_t i = 0; i < ops.size(); ++i) {
    EXPECT_EQ(ops[i].phase, Phase::Backward);
    ASSERT_GE(ops[i].afterCompute, 0);
    EXPECT_EQ(p.last.compute[static_cast<size_t>(ops[i].afterCompute)].phase, Phase::Backward);
    if (i > 0) {
      EXPECT_GE(ops[i].afterCompute, ops[i - 1].afterCompute);
    }
  }
  EXPECT_TRUE(p.optimizer.empty());
  EXPECT_NEAR(dataParallelVolumeInParams(p, f.training, f.psi), 2.0, 1e-6);
}

TEST(Sequence, DdpBucketCapSetsTheBucketCount) {
  Fixture f;
  Strategy s = f.strategy(StrategyKind::Ddp);
  s.bucketCapMb = 100;
  EXPECT_EQ(buildStepPlan(f.model, f.training, s).last.comms.size(),
            static_cast<size_t>(std::ceil(f.paramBytes() / (100 * kMiB))));
}

TEST(Sequence, DdpWithAccumulationSyncsOnlyOnTheLastMicroBatch) {
  Fixture f;
  f.training.globalBatch = 64;
  const StepPlan p = buildStepPlan(f.model, f.training, f.strategy(StrategyKind::Ddp));
  EXPECT_EQ(p.microBatches, 4);
  EXPECT_TRUE(p.accumulate.comms.empty());
  EXPECT_FALSE(p.last.comms.empty());
  EXPECT_NEAR(dataParallelVolumeInParams(p, f.training, f.psi), 2.0, 1e-6);
}

TEST(Sequence, Zero1And2ReduceScatterGradsAndAllGatherParams) {
  Fixture f;
  for (StrategyKind k : {StrategyKind::Zero1, StrategyKind::Zero2}) {
    const StepPlan p = buildStepPlan(f.model, f.training, f.strategy(k));
    expectBytes(sumBytes(p.last.comms, byGroupColl(CommGroup::Dp, CollType::ReduceScatter)), f.paramBytes());
    EXPECT_EQ(countOps(p.last.comms), countOps(p.last.comms, byColl(CollType::ReduceScatter)));
    expectBytes(sumBytes(p.optimizer, byPhaseColl(Phase::Optimizer, CollType::AllGather)), f.paramBytes());
    EXPECT_EQ(countOps(p.optimizer), countOps(p.optimizer, byColl(CollType::AllGather)));
    EXPECT_NEAR(dataParallelVolumeInParams(p, f.training, f.psi), 2.0, 1e-6) << strategyName(k);
  }
  // ZeRO-2 reduces every micro batch (its gradients are sharded); ZeRO-1 only at the step's end.
  f.training.globalBatch = 32;
  EXPECT_TRUE(buildStepPlan(f.model, f.training, f.strategy(StrategyKind::Zero1)).accumulate.comms.empty());
  EXPECT_FALSE(buildStepPlan(f.model, f.training, f.strategy(StrategyKind::Zero2)).accumulate.comms.empty());
}

TEST(Sequence, FullShardGathersForwardAndBackwardAndReduceScatters) {
  Fixture f;
  for (StrategyKind k : {StrategyKind::FsdpFull, StrategyKind::Zero3}) {
    const StepPlan p = buildStepPlan(f.model, f.training, f.strategy(k));
    const auto& ops = p.last.comms;
    const size_t units = static_cast<size_t>(f.model.layers) + 1;
    EXPECT_EQ(countOps(ops, byPhaseColl(Phase::Forward, CollType::AllGather)), units);
    EXPECT_EQ(countOps(ops, byPhaseColl(Phase::Backward, CollType::AllGather)), units);
    EXPECT_EQ(countOps(ops, byPhaseColl(Phase::Backward, CollType::ReduceScatter)), units);
    EXPECT_EQ(ops.size(), 3 * units);
    expectBytes(sumBytes(ops, byPhaseColl(Phase::Forward, CollType::AllGather)), f.paramBytes());
    expectBytes(sumBytes(ops, byPhaseColl(Phase::Backward, CollType::AllGather)), f.paramBytes());
    expectBytes(sumBytes(ops, byPhaseColl(Phase::Backward, CollType::ReduceScatter)), f.paramBytes());
    EXPECT_TRUE(p.optimizer.empty());
    EXPECT_NEAR(dataParallelVolumeInParams(p, f.training, f.psi), 3.0, 1e-6) << strategyName(k);
    // Prefetch: unit u's forward gather waits for unit u-1's forward to start, and unit u's forward needs it.
    EXPECT_EQ(ops[0].afterCompute, -1);
    EXPECT_EQ(ops[1].afterCompute, 0);
    EXPECT_TRUE(ops[1].afterStart);
    EXPECT_EQ(p.last.compute[1].waitComm, 1);
  }
}

TEST(Sequence, ShardGradOpGathersOnceInForward) {
  Fixture f;
  const StepPlan p = buildStepPlan(f.model, f.training, f.strategy(StrategyKind::FsdpGradOp));
  const size_t units = static_cast<size_t>(f.model.layers) + 1;
  EXPECT_EQ(countOps(p.last.comms, byColl(CollType::AllGather)), units);
  EXPECT_EQ(countOps(p.last.comms, byPhaseColl(Phase::Backward, CollType::AllGather)), 0u);
  expectBytes(sumBytes(p.last.comms, byColl(CollType::AllGather)), f.paramBytes());
  expectBytes(sumBytes(p.last.comms, byColl(CollType::ReduceScatter)), f.paramBytes());
  EXPECT_NEAR(dataParallelVolumeInParams(p, f.training, f.psi), 2.0, 1e-6);
}

TEST(Sequence, HsdpShardsInsideTheNodeAndAllReducesAGroupShareAcrossNodes) {
  Fixture f;
  const int g = 8;
  const StepPlan p = buildStepPlan(f.model, f.training, f.strategy(StrategyKind::Hsdp, 16, 1, g));
  const auto& ops = p.last.comms;
  expectBytes(sumBytes(ops, byGroupColl(CommGroup::Shard, CollType::AllGather)), 2 * f.paramBytes());
  expectBytes(sumBytes(ops, byGroupColl(CommGroup::Shard, CollType::ReduceScatter)), f.paramBytes());
  EXPECT_EQ(countOps(ops, byGroupColl(CommGroup::Dp, CollType::AllGather)), 0u);
  EXPECT_NEAR(static_cast<double>(sumBytes(ops, byGroupColl(CommGroup::Replica, CollType::AllReduce))),
              f.paramBytes() / g, 64);
  EXPECT_EQ(countOps(ops, byGroupColl(CommGroup::Replica, CollType::AllReduce)),
            countOps(ops, byColl(CollType::ReduceScatter)));
  EXPECT_NEAR(dataParallelVolumeInParams(p, f.training, f.psi), 3.0 + 2.0 / g, 1e-6);
  // One node holds all the dp ranks: no replica all-reduce.
  const StepPlan one = buildStepPlan(f.model, f.training, f.strategy(StrategyKind::Hsdp, 8, 1, 8));
  EXPECT_EQ(countOps(one.last.comms, byGroupColl(CommGroup::Replica, CollType::AllReduce)), 0u);
}

TEST(Sequence, TensorParallelAddsBlockingActivationAllReducesAndShrinksTheDpOps) {
  Fixture f;
  const int tp = 4;
  const StepPlan p = buildStepPlan(f.model, f.training, f.strategy(StrategyKind::Ddp, 4, tp));
  const size_t layers = static_cast<size_t>(f.model.layers);
  EXPECT_EQ(countOps(p.last.comms, byGroupColl(CommGroup::Tp, CollType::AllReduce)), 4 * layers);
  for (const CommOp& op : p.last.comms) {
    if (op.group != CommGroup::Tp) continue;
    EXPECT_GE(op.inlineWith, 0);
    EXPECT_EQ(op.bytes, static_cast<size_t>(4096 * 4096 * 2));  // s b h x 2 bytes
  }
  expectBytes(sumBytes(p.last.comms, byGroupColl(CommGroup::Dp, CollType::AllReduce)), f.paramBytes(tp));
  f.training.checkpointing = true;
  const StepPlan ck = buildStepPlan(f.model, f.training, f.strategy(StrategyKind::Ddp, 4, tp));
  EXPECT_EQ(countOps(ck.last.comms, byGroupColl(CommGroup::Tp, CollType::AllReduce)), 6 * layers);
}

TEST(Sequence, ComputeSharesSumToOneWithTwoThirdsInBackward) {
  Fixture f;
  const StepPlan p = buildStepPlan(f.model, f.training, f.strategy(StrategyKind::FsdpFull));
  double fwd = 0, bwd = 0;
  for (const ComputeTask& c : p.last.compute) (c.phase == Phase::Forward ? fwd : bwd) += c.share;
  EXPECT_NEAR(fwd + bwd, 1.0, 1e-12);
  EXPECT_NEAR(bwd, 2.0 / 3.0, 1e-12);
}

TEST(Schedule, OverlapsBackwardBucketsAndExposesTheTail) {
  MicroPlan p;
  p.compute = {{Phase::Forward, 0, 0.5, -1}, {Phase::Backward, 0, 0.5, -1}};
  p.comms = {{CommGroup::Dp, CollType::AllReduce, 1, Phase::Backward, 0, 1, false, -1}};
  EXPECT_DOUBLE_EQ(scheduleUs(p, 100, {30}), 130);  // the bucket is ready at the end: fully exposed
  p.comms[0].afterCompute = 0;
  EXPECT_DOUBLE_EQ(scheduleUs(p, 100, {30}), 100);  // ready after the forward: hidden by the backward
  EXPECT_DOUBLE_EQ(scheduleUs(p, 100, {80}), 130);
  p.comms[0].inlineWith = 1;  // blocking: adds to the compute stream
  EXPECT_DOUBLE_EQ(scheduleUs(p, 100, {30}), 130);
}

TEST(Schedule, PrefetchedGathersHideBehindCompute) {
  MicroPlan p;
  p.compute = {{Phase::Forward, 0, 0.5, 0}, {Phase::Forward, 1, 0.5, 1}};
  p.comms = {{CommGroup::Dp, CollType::AllGather, 1, Phase::Forward, 0, -1, false, -1},
             {CommGroup::Dp, CollType::AllGather, 1, Phase::Forward, 1, 0, true, -1}};
  EXPECT_DOUBLE_EQ(scheduleUs(p, 100, {10, 40}), 110);  // the second gather runs during the first unit
  EXPECT_DOUBLE_EQ(scheduleUs(p, 100, {10, 70}), 130);
}

}  // namespace
}  // namespace wirewise::advise
