#include "telemetry/collectors/nvml_collector.h"

#include <dlfcn.h>

#include <gtest/gtest.h>

#include "tests/telemetry/collectors/fake_nvml.h"

namespace wirewise::collectors {
namespace {

constexpr int64_t kSec = 1'000'000'000;
using testing::FakeNvmlState;

// The same handle the collector gets: dlopen of one path returns one library instance.
FakeNvmlState* fakeState(const char* path) {
  void* h = ::dlopen(path, RTLD_NOW | RTLD_LOCAL);
  if (!h) return nullptr;
  auto fn = reinterpret_cast<testing::FakeNvmlStateFn>(::dlsym(h, "fakeNvmlState"));
  return fn ? fn() : nullptr;
}

FakeNvmlState* freshFake(int gpus, int links) {
  FakeNvmlState* s = fakeState(WW_FAKE_NVML);
  if (!s) return nullptr;
  *s = FakeNvmlState{};
  s->gpus = gpus;
  for (int g = 0; g < gpus; ++g) s->gpu[g].links = links;
  return s;
}

const LinkHealth* find(const NvmlCollector& c, const std::string& id) {
  for (const LinkHealth& l : c.links()) {
    if (l.id == id) return &l;
  }
  return nullptr;
}

TEST(NvmlCollector, MissingLibraryIsUnavailableWithReason) {
  NvmlCollector c(0.0, false);
  EXPECT_FALSE(c.open("/nonexistent/libnvidia-ml.so.1"));
  EXPECT_FALSE(c.available());
  EXPECT_NE(c.reason().find("dlopen /nonexistent/libnvidia-ml.so.1 failed"), std::string::npos) << c.reason();
  c.sample(1 * kSec);  // harmless
  EXPECT_TRUE(c.links().empty());
}

TEST(NvmlCollector, LibraryMissingASymbolIsUnavailableAndNeverCalled) {
  FakeNvmlState* s = fakeState(WW_FAKE_NVML_NOFIELDS);
  ASSERT_NE(s, nullptr);
  *s = FakeNvmlState{};
  NvmlCollector c(0.0, false);
  EXPECT_FALSE(c.open(WW_FAKE_NVML_NOFIELDS));
  EXPECT_NE(c.reason().find("lacks symbol nvmlDeviceGetFieldValues"), std::string::npos) << c.reason();
  EXPECT_EQ(s->initCalls, 0);
}

TEST(NvmlCollector, InitFailureIsReported) {
  FakeNvmlState* s = freshFake(1, 2);
  ASSERT_NE(s, nullptr);
  s->initResult = 9;  // NVML_ERROR_DRIVER_NOT_LOADED
  NvmlCollector c(0.0, false);
  EXPECT_FALSE(c.open(WW_FAKE_NVML));
  EXPECT_EQ(c.reason(), "nvmlInit_v2 returned 9");
}

TEST(NvmlCollector, NvlinkThroughputErrorsStateAndSpeed) {
  FakeNvmlState* s = freshFake(2, 4);
  ASSERT_NE(s, nullptr);
  s->gpu[1].link[3].active = 0;
  {
    NvmlCollector c(0.0, false);
    ASSERT_TRUE(c.open(WW_FAKE_NVML)) << c.reason();
    EXPECT_EQ(c.gpuCount(), 2u);
    EXPECT_EQ(c.links().size(), 2u * 4 + 2);  // 4 NVLinks + PCIe per GPU
    EXPECT_EQ(c.reason(), "2 GPU(s), 8 NVLink(s)");
    c.sample(1 * kSec);
    s->timestampUs += 1'000'000;
    s->gpu[0].link[1].txKiB += 1000 * 1024;  // 1000 MiB in one second
    s->gpu[0].link[1].rxKiB += 500 * 1024;
    s->gpu[0].link[2].replay += 1;
    s->gpu[0].link[2].crc += 2;
    c.sample(2 * kSec);
    const LinkHealth* l1 = find(c, "gpu0:nvlink1");
    ASSERT_NE(l1, nullptr);
    EXPECT_EQ(l1->kind, LinkKind::kNvlink);
    EXPECT_TRUE(l1->rateValid);
    EXPECT_DOUBLE_EQ(l1->txBps, 1000.0 * 1024 * 1024);
    EXPECT_DOUBLE_EQ(l1->rxBps, 500.0 * 1024 * 1024);
    EXPECT_DOUBLE_EQ(l1->nominalBps, 26562e6);
    EXPECT_EQ(l1->state, LinkState::kUp);
    const LinkHealth* l2 = find(c, "gpu0:nvlink2");
    EXPECT_DOUBLE_EQ(l2->errorsPerSec, 3.0);
    EXPECT_EQ(l2->state, LinkState::kDegraded);
    const LinkHealth* off = find(c, "gpu1:nvlink3");
    EXPECT_FALSE(off->up);
    EXPECT_EQ(off->state, LinkState::kDown);
    EXPECT_EQ(s->fieldValueCalls, 2 /*link count*/ + 2 * 2 /*one batch per GPU per pass*/);
  }
  EXPECT_EQ(s->shutdownCalls, 1);
}

TEST(NvmlCollector, RatesUseNvmlTimestampsAndSpeedDropDegrades) {
  FakeNvmlState* s = freshFake(1, 2);
  ASSERT_NE(s, nullptr);
  NvmlCollector c(0.0, false);
  ASSERT_TRUE(c.open(WW_FAKE_NVML));
  c.sample(1 * kSec);
  s->timestampUs += 500'000;  // NVML read its counters 0.5 s apart although we sampled 1 s apart
  s->gpu[0].link[0].txKiB += 1024;
  s->gpu[0].link[0].rxKiB += 1024;
  c.sample(2 * kSec);
  EXPECT_DOUBLE_EQ(find(c, "gpu0:nvlink0")->txBps, 2.0 * 1024 * 1024);
  s->gpu[0].link[0].speedMBps = 13281;  // link retrained at half speed
  s->timestampUs += 1'000'000;
  c.sample(3 * kSec);
  EXPECT_EQ(find(c, "gpu0:nvlink0")->state, LinkState::kDegraded);
}

TEST(NvmlCollector, ProbesLinksWithoutLinkCountField) {
  FakeNvmlState* s = freshFake(1, 3);
  ASSERT_NE(s, nullptr);
  s->linkCountField = false;
  NvmlCollector c(0.0, false);
  ASSERT_TRUE(c.open(WW_FAKE_NVML));
  EXPECT_EQ(c.links().size(), 3u + 1);
}

TEST(NvmlCollector, PcieFromByteFieldsOrOptInThroughput) {
  FakeNvmlState* s = freshFake(1, 0);
  ASSERT_NE(s, nullptr);
  {
    NvmlCollector c(0.0, false);
    ASSERT_TRUE(c.open(WW_FAKE_NVML));
    c.sample(1 * kSec);
    s->timestampUs += 1'000'000;
    s->gpu[0].pcieTxBytes += 4'000'000'000ull;
    s->gpu[0].pcieReplay += 5;
    c.sample(2 * kSec);
    const LinkHealth* p = find(c, "gpu0:pcie");
    ASSERT_NE(p, nullptr);
    EXPECT_TRUE(p->rateValid);
    EXPECT_DOUBLE_EQ(p->txBps, 4e9);
    EXPECT_DOUBLE_EQ(p->errorsPerSec, 5.0);
    EXPECT_EQ(p->state, LinkState::kDegraded);
  }
  s->gpu[0].pcieFields = false;  // older GPU: no 197/198
  s->gpu[0].pcieTxKBps = 1000;
  {
    NvmlCollector off(0.0, false);
    ASSERT_TRUE(off.open(WW_FAKE_NVML));
    off.sample(1 * kSec);
    off.sample(2 * kSec);
    EXPECT_FALSE(find(off, "gpu0:pcie")->rateValid);
    EXPECT_EQ(s->throughputCalls, 0);  // the 20 ms call is opt-in
    NvmlCollector on(0.0, true);
    ASSERT_TRUE(on.open(WW_FAKE_NVML));
    on.sample(1 * kSec);
    EXPECT_TRUE(find(on, "gpu0:pcie")->rateValid);
    EXPECT_DOUBLE_EQ(find(on, "gpu0:pcie")->txBps, 1000.0 * 1024);
  }
}

}  // namespace
}  // namespace wirewise::collectors
