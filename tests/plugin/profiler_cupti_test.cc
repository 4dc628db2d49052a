// CUPTI kernel attribution through the real library: the fake libcupti (soname libcupti.so.13, opened
// here first so that the runtime's dlopen finds it), WIREWISE_CUPTI=on, NCCL's KernelLaunch and Coll
// events through ncclProfiler_v5 (v4: none), and the "cupti_kernels" event in the adaptation log.
#include <dlfcn.h>
#include <gtest/gtest.h>
#include <stdlib.h>

#include <chrono>
#include <thread>

#include "tests/plugin/plugin_fixture.h"
#include "tests/telemetry/collectors/fake_cupti.h"
#include "tests/wait_until.h"

namespace wirewise::testing {
namespace {

using loader::Profiler;
using wirewise::collectors::testing::FakeCuptiState;
using wirewise::collectors::testing::FakeCuptiStateFn;

const void* kStream = reinterpret_cast<const void*>(0x7000);

class ProfilerCupti : public PluginTest, public ::testing::WithParamInterface<int> {
 protected:
  void SetUp() override {
    PluginTest::SetUp();
    void* h = ::dlopen(WW_FAKE_CUPTI_SO13, RTLD_NOW | RTLD_LOCAL);
    ASSERT_NE(h, nullptr) << ::dlerror();
    auto fn = reinterpret_cast<FakeCuptiStateFn>(::dlsym(h, "fakeCuptiState"));
    ASSERT_NE(fn, nullptr);
    s_ = fn();
    *s_ = FakeCuptiState{};
    s_->streams[0] = {kStream, 7};
    s_->nStreams = 1;
    s_->hold = 1;
    setenv("WIREWISE_CUPTI", "on", 1);
    setenv("WIREWISE_COLLECT_MS", "100", 1);
    setenv("WIREWISE_SUMMARY_MS", "100", 1);
    setenv("WIREWISE_SYSFS_ROOT", "/nonexistent", 1);
    std::string why;
    prof_ = Profiler::loadVersion(pluginHandle(), GetParam(), &why);
    ASSERT_NE(prof_, nullptr) << why;
  }
  void TearDown() override {
    for (const char* v : {"WIREWISE_CUPTI", "WIREWISE_COLLECT_MS", "WIREWISE_SUMMARY_MS", "WIREWISE_SYSFS_ROOT"})
      unsetenv(v);
    PluginTest::TearDown();
  }
  // The last "cupti_kernels" event once `done` holds for it, or null after 10 s.
  template <typename Pred>
  nlohmann::json waitForReport(Pred done) {
    nlohmann::json report;
    waitUntil(
        [&] {
          std::vector<nlohmann::json> ev = logEvents("cupti_kernels");
          if (ev.empty() || !done(ev.back())) return false;
          report = ev.back();
          return true;
        },
        std::chrono::seconds(10), std::chrono::milliseconds(50));  // each look reads the whole log
    return report;
  }
  FakeCuptiState* s_ = nullptr;
  std::unique_ptr<Profiler> prof_;
};

TEST_P(ProfilerCupti, KernelRecordsAreCreditedToTheLaunchingCommunicator) {
  int mask = 0;
  void* ctx = nullptr;
  ASSERT_EQ(prof_->init(&ctx, 0xabc, &mask, "dp", 1, 8, 2, nullptr), ncclSuccess);
  ASSERT_NE(ctx, nullptr);
  const bool v5 = GetParam() == 5;
  EXPECT_EQ(mask, ncclProfileColl | ncclProfileKernelCh | (v5 ? ncclProfileKernelLaunch : 0));

  // ncclLaunchKernel: KernelLaunch around cuLaunchKernelEx; then hostStreamPlanTask starts the plan's Coll.
  ncclProfilerEventDescr_v5_t launch{};
  launch.type = ncclProfileKernelLaunch;
  launch.kernelLaunch.stream = const_cast<void*>(kStream);
  void* h = reinterpret_cast<void*>(1);
  ASSERT_EQ(prof_->startEvent(ctx, &h, &launch), ncclSuccess);
  EXPECT_EQ(h, nullptr);  // recorded, not tracked: NCCL will not stop it
  ncclProfilerEventDescr_v5_t coll{};
  coll.type = ncclProfileColl;
  coll.rank = 2;
  coll.coll.seqNumber = 41;
  coll.coll.func = "AllReduce";
  coll.coll.count = 1024;
  coll.coll.datatype = "ncclFloat32";
  coll.coll.nChannels = 1;
  coll.coll.algo = "RING";
  coll.coll.proto = "LL";
  void* ch = nullptr;
  ASSERT_EQ(prof_->startEvent(ctx, &ch, &coll), ncclSuccess);
  ASSERT_EQ(prof_->stopEvent(ch), ncclSuccess);

  auto& r = s_->records[s_->pending++];
  r.name = "ncclDevKernel_AllReduce_Sum_f32_RING_LL";
  r.start = 1000;
  r.end = 1800;
  r.stream = 7;
  __atomic_store_n(&s_->hold, 0, __ATOMIC_RELEASE);

  nlohmann::json rep = waitForReport([&](const nlohmann::json& j) {
    return j.value("verified", 0) + j.value("unattributed", 0) >= 1;
  });
  ASSERT_FALSE(rep.is_null()) << "no cupti_kernels event with a settled record";
  EXPECT_EQ(rep["nccl_kernels"], 1);
  if (v5) {
    EXPECT_EQ(rep["verified"], 1) << rep.dump();
    ASSERT_EQ(rep["comms"].size(), 1u) << rep.dump();
    EXPECT_EQ(rep["comms"][0]["comm"], "0x0000000000000abc");
    EXPECT_EQ(rep["comms"][0]["rank"], 2);
    EXPECT_EQ(rep["comms"][0]["colls"][0]["coll"], "allreduce");
    EXPECT_DOUBLE_EQ(rep["comms"][0]["colls"][0]["device_us"].get<double>(), 0.8);
  } else {
    // NCCL 2.27 has no KernelLaunch: counted per collective, attributed to nobody.
    EXPECT_EQ(rep["unattributed"], 1) << rep.dump();
    EXPECT_TRUE(rep["comms"].empty());
    EXPECT_NE(rep["attribution"].get<std::string>().find("no KernelLaunch events"), std::string::npos) << rep.dump();
  }
  EXPECT_EQ(prof_->finalize(ctx), ncclSuccess);
}

INSTANTIATE_TEST_SUITE_P(V, ProfilerCupti, ::testing::Values(4, 5), [](const auto& i) {
  return "v" + std::to_string(i.param);
});

}  // namespace
}  // namespace wirewise::testing
