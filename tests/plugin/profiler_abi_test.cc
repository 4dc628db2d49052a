// Both exported profiler versions, driven through the NCCL-faithful loader: activation mask, Coll and
// KernelCh events with GPU timestamps, null handles and parents, and the summaries they turn into.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>

#include "tests/plugin/plugin_fixture.h"

namespace wirewise::testing {
namespace {

using loader::Profiler;

class ProfilerVersion : public PluginTest, public ::testing::WithParamInterface<int> {
 protected:
  void SetUp() override {
    PluginTest::SetUp();
    setenv("WIREWISE_SUMMARY_MS", "100", 1);
    std::string why;
    prof_ = Profiler::loadVersion(pluginHandle(), GetParam(), &why);
    ASSERT_NE(prof_, nullptr) << why;
    ASSERT_EQ(prof_->version(), GetParam());
  }
  void TearDown() override {
    unsetenv("WIREWISE_SUMMARY_MS");
    PluginTest::TearDown();
  }
  // One collective as NCCL reports it: Coll start/stop (enqueue), then per channel KernelCh start,
  // KernelChStop with the GPU stop time, stop.
  void collective(void* ctx, uint64_t seq, size_t count, uint64_t t0, uint64_t durNs, int nChannels) {
    ncclProfilerEventDescr_v5_t d{};
    d.type = ncclProfileColl;
    d.rank = 0;
    d.coll.seqNumber = seq;
    d.coll.func = "AllReduce";
    d.coll.count = count;
    d.coll.datatype = "ncclFloat32";
    d.coll.nChannels = static_cast<uint8_t>(nChannels);
    d.coll.algo = "RING";
    d.coll.proto = "SIMPLE";
    void* coll = nullptr;
    ASSERT_EQ(prof_->startEvent(ctx, &coll, &d), ncclSuccess);
    ASSERT_NE(coll, nullptr);
    ASSERT_EQ(prof_->stopEvent(coll), ncclSuccess);
    for (int c = 0; c < nChannels; ++c) {
      ncclProfilerEventDescr_v5_t k{};
      k.type = ncclProfileKernelCh;
      k.parentObj = coll;
      k.kernelCh.channelId = static_cast<uint8_t>(c);
      k.kernelCh.pTimer = t0 + 10 * c;  // channels start a little apart; the slowest sets the time
      void* ch = nullptr;
      ASSERT_EQ(prof_->startEvent(ctx, &ch, &k), ncclSuccess);
      ASSERT_NE(ch, nullptr);
      ncclProfilerEventStateArgs_v5_t a{};
      a.kernelCh.pTimer = t0 + durNs - 10 * (nChannels - 1 - c);
      ASSERT_EQ(prof_->recordEventState(ch, ncclProfilerKernelChStop, &a), ncclSuccess);
      ASSERT_EQ(prof_->stopEvent(ch), ncclSuccess);
    }
  }
  std::unique_ptr<Profiler> prof_;
};

TEST_P(ProfilerVersion, SetsTheActivationMaskToCollAndKernelChOnly) {
  int mask = 0;
  void* ctx = nullptr;
  ASSERT_EQ(prof_->init(&ctx, 0x77, &mask, nullptr, 1, 8, 0, nullptr), ncclSuccess);
  ASSERT_NE(ctx, nullptr);
  EXPECT_EQ(mask, ncclProfileColl | ncclProfileKernelCh);
  EXPECT_EQ(prof_->finalize(ctx), ncclSuccess);
}

TEST_P(ProfilerVersion, KernelChannelTimesBecomeSummaries) {
  int mask = 0;
  void* ctx = nullptr;
  ASSERT_EQ(prof_->init(&ctx, 0x77, &mask, "dp", 1, 8, 0, nullptr), ncclSuccess);
  // 1 MiB all-reduces of 100 µs each on 8 ranks: busbw = 2*(7/8) * 1 MiB / 100 µs = 18.35 GB/s.
  for (uint64_t i = 0; i < 200; ++i) collective(ctx, i, 262144, 1'000'000 * (i + 1), 100'000, 4);
  ASSERT_EQ(prof_->finalize(ctx), ncclSuccess);  // last runtime reference: log flushed
  auto summaries = logEvents("summary");
  ASSERT_FALSE(summaries.empty());
  uint64_t count = 0;
  for (const auto& s : summaries) {
    EXPECT_EQ(s["comm"], "0x0000000000000077");
    for (const auto& row : s["rows"]) {
      EXPECT_EQ(row["coll"], "allreduce");
      EXPECT_EQ(row["algo"], "ring");
      EXPECT_EQ(row["proto"], "simple");
      EXPECT_EQ(row["channels"], 4);
      EXPECT_EQ(row["min_bytes"], 1 << 20);
      EXPECT_NEAR(row["p50_us"].get<double>(), 100.0, 0.01);
      EXPECT_NEAR(row["busbw_gbs"].get<double>(), 2.0 * 7 / 8 * (1 << 20) / 100e-6 / 1e9, 0.01);
      count += row["count"].get<uint64_t>();
    }
  }
  EXPECT_EQ(count, 200u);
}

TEST_P(ProfilerVersion, NullContextsHandlesAndParentsAreTolerated) {
  ncclProfilerEventDescr_v5_t d{};
  d.type = ncclProfileKernelCh;
  void* h = reinterpret_cast<void*>(0x1);
  EXPECT_EQ(prof_->startEvent(nullptr, &h, &d), ncclSuccess);
  EXPECT_EQ(h, nullptr);
  EXPECT_EQ(prof_->stopEvent(nullptr), ncclSuccess);
  EXPECT_EQ(prof_->recordEventState(nullptr, ncclProfilerKernelChStop, nullptr), ncclSuccess);
  EXPECT_EQ(prof_->finalize(nullptr), ncclSuccess);

  int mask = 0;
  void* ctx = nullptr;
  ASSERT_EQ(prof_->init(&ctx, 0x78, &mask, nullptr, 1, 8, 0, nullptr), ncclSuccess);
  // A KernelCh whose parent was dropped (null) is not tracked; a state with null args is ignored.
  EXPECT_EQ(prof_->startEvent(ctx, &h, &d), ncclSuccess);
  EXPECT_EQ(h, nullptr);
  // Event types we did not ask for are not tracked.
  ncclProfilerEventDescr_v5_t op{};
  op.type = ncclProfileProxyOp;
  EXPECT_EQ(prof_->startEvent(ctx, &h, &op), ncclSuccess);
  EXPECT_EQ(h, nullptr);
  EXPECT_EQ(prof_->finalize(ctx), ncclSuccess);
}

INSTANTIATE_TEST_SUITE_P(EveryExportedVersion, ProfilerVersion, ::testing::Values(5, 4),
                         [](const auto& param) { return "v" + std::to_string(param.param); });

TEST_F(PluginTest, TunerAndProfilerShareOneInstance) {
  // NCCL opens the tuner and the profiler by different names; the symlink must yield one runtime.
  loader::OpenResult p = loader::openPlugin(loader::PluginKind::Profiler, WW_PROFILER_SO, nullptr);
  ASSERT_NE(p.handle, nullptr) << p.error;
  EXPECT_EQ(p.handle, pluginHandle());
  std::string why;
  auto tuner = loader::Tuner::load(p.handle, &why);
  auto prof = Profiler::load(p.handle, &why);
  ASSERT_TRUE(tuner && prof);
  EXPECT_EQ(prof->version(), 5);
  void *tctx = nullptr, *pctx = nullptr;
  int mask = 0;
  ASSERT_EQ(tuner->init(&tctx, 9, 8, 1, nullptr, nullptr, nullptr), ncclSuccess);
  ASSERT_EQ(prof->init(&pctx, 9, &mask, nullptr, 1, 8, 3, nullptr), ncclSuccess);
  ASSERT_EQ(tuner->finalize(tctx), ncclSuccess);
  ASSERT_EQ(prof->finalize(pctx), ncclSuccess);
  EXPECT_EQ(logEvents("plugin_start").size(), 1u);
  EXPECT_EQ(logEvents("comm_init").size(), 2u);
}

TEST_F(PluginTest, OffModeLeavesTheMaskAloneAndHoldsNoContext) {
  setenv("WIREWISE_MODE", "off", 1);
  std::string why;
  auto prof = Profiler::loadVersion(pluginHandle(), 5, &why);
  int mask = 0;
  void* ctx = reinterpret_cast<void*>(0x1);
  ASSERT_EQ(prof->init(&ctx, 1, &mask, nullptr, 1, 8, 0, nullptr), ncclSuccess);
  EXPECT_EQ(ctx, nullptr);
  EXPECT_EQ(mask, 0);
  unsetenv("WIREWISE_MODE");
}

}  // namespace
}  // namespace wirewise::testing
