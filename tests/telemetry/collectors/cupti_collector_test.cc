#include "telemetry/collectors/cupti_collector.h"
#include "telemetry/collectors/collector_set.h"

#include <dlfcn.h>

#include <gtest/gtest.h>

#include "tests/telemetry/collectors/fake_cupti.h"

namespace wirewise::collectors {
namespace {

using testing::FakeCuptiState;

FakeCuptiState* fakeState(const char* path) {
  void* h = ::dlopen(path, RTLD_NOW | RTLD_LOCAL);
  if (!h) return nullptr;
  auto fn = reinterpret_cast<testing::FakeCuptiStateFn>(::dlsym(h, "fakeCuptiState"));
  if (!fn) return nullptr;
  *fn() = FakeCuptiState{};
  return fn();
}

void addRecord(FakeCuptiState* s, const char* name, uint64_t start, uint64_t end, uint32_t corr, int kind = 10) {
  auto& r = s->records[s->pending++];
  r.kind = kind;
  r.name = name;
  r.start = start;
  r.end = end;
  r.device = 3;
  r.stream = 7;
  r.correlation = corr;
}

TEST(CuptiKernelNames, MapsNcclKernelsToCollectives) {
  EXPECT_EQ(parseNcclKernelName("ncclDevKernel_AllReduce_Sum_f32_RING_LL"), NcclKernelColl::kAllReduce);
  EXPECT_EQ(parseNcclKernelName("_Z41ncclDevKernel_ReduceScatter_Sum_u32_RING_LL24ncclDevKernelArgsStorageILm4096EE"),
            NcclKernelColl::kReduceScatter);
  EXPECT_EQ(parseNcclKernelName("ncclDevKernel_Reduce_Sum_f16_TREE_LL(ncclDevKernelArgsStorage<4096ul>)"),
            NcclKernelColl::kReduce);
  EXPECT_EQ(parseNcclKernelName("ncclSymkDevKernel_AllGather_LLMC"), NcclKernelColl::kAllGather);
  EXPECT_EQ(parseNcclKernelName("ncclDevKernel_Broadcast_RING_LL"), NcclKernelColl::kBroadcast);
  EXPECT_EQ(parseNcclKernelName("ncclDevKernel_SendRecv"), NcclKernelColl::kSendRecv);
  EXPECT_EQ(parseNcclKernelName("ncclDevKernel_Generic"), NcclKernelColl::kGeneric);
  EXPECT_EQ(parseNcclKernelName("void gemm_kernel<float>(float*)"), NcclKernelColl::kOther);
  EXPECT_EQ(parseNcclKernelName("ncclDevKernel_"), NcclKernelColl::kOther);
  EXPECT_EQ(parseNcclKernelName(nullptr), NcclKernelColl::kOther);
  EXPECT_STREQ(ncclKernelCollName(NcclKernelColl::kReduceScatter), "reducescatter");
}

TEST(CuptiCollector, MissingLibraryOrSymbolOrVersionIsUnavailable) {
  CuptiCollector none;
  EXPECT_FALSE(none.start("/nonexistent/libcupti.so.13"));
  EXPECT_NE(none.reason().find("dlopen /nonexistent/libcupti.so.13 failed"), std::string::npos);
  ASSERT_NE(fakeState(WW_FAKE_CUPTI_NONEXT), nullptr);
  CuptiCollector partial;
  EXPECT_FALSE(partial.start(WW_FAKE_CUPTI_NONEXT));
  EXPECT_NE(partial.reason().find("lacks symbol cuptiActivityGetNextRecord"), std::string::npos) << partial.reason();
  FakeCuptiState* s = fakeState(WW_FAKE_CUPTI);
  ASSERT_NE(s, nullptr);
  s->version = 28;  // CUDA 12.x API: a different kernel record layout, refused rather than misread
  CuptiCollector old;
  EXPECT_FALSE(old.start(WW_FAKE_CUPTI));
  EXPECT_NE(old.reason().find("CUPTI API version 28 not supported"), std::string::npos) << old.reason();
  EXPECT_EQ(s->enabledKind, -1);
}

TEST(CuptiCollector, BacksOffWhenAnotherClientHoldsCupti) {
  FakeCuptiState* s = fakeState(WW_FAKE_CUPTI);
  ASSERT_NE(s, nullptr);
  s->enableResult = 39;  // CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED
  CuptiCollector c;
  EXPECT_FALSE(c.start(WW_FAKE_CUPTI));
  EXPECT_NE(c.reason().find("another CUPTI client holds this process"), std::string::npos) << c.reason();
  c.flush(false);  // no-op while unavailable
  EXPECT_EQ(s->flushCalls, 0);
  s->enableResult = 0;  // the other client went away: a later start works (the slot was released)
  CuptiCollector later;
  EXPECT_TRUE(later.start(WW_FAKE_CUPTI)) << later.reason();
}

TEST(CuptiCollector, RecordsFlowThroughRealBufferCallbacks) {
  FakeCuptiState* s = fakeState(WW_FAKE_CUPTI);
  ASSERT_NE(s, nullptr);
  CuptiCollector c;
  ASSERT_TRUE(c.start(WW_FAKE_CUPTI)) << c.reason();
  EXPECT_EQ(s->enabledKind, 10);
  CuptiCollector second;
  EXPECT_FALSE(second.start(WW_FAKE_CUPTI));  // CUPTI is process-wide
  addRecord(s, "ncclDevKernel_AllReduce_Sum_f32_RING_LL", 1000, 1500, 11);
  addRecord(s, "ncclDevKernel_AllReduce_Sum_f32_RING_LL", 2000, 2300, 12);
  addRecord(s, "ncclDevKernel_AllGather_RING_LL", 3000, 3700, 13);
  addRecord(s, "volta_sgemm_128x64_nn", 100, 900, 14);
  addRecord(s, "", 0, 0, 15, /*kind=*/1);  // a memcpy record: skipped by kind
  addRecord(s, "ncclDevKernel_SendRecv", 0, 0, 16);  // device buffers ran out: no timestamps
  s->dropped = 4;
  c.flush(false);
  EXPECT_EQ(s->buffersDelivered, 1);
  CuptiStats st = c.stats();
  EXPECT_EQ(st.records, 6u);
  EXPECT_EQ(st.ncclKernels, 4u);
  EXPECT_EQ(st.otherKernels, 1u);
  EXPECT_EQ(st.noTimestamp, 1u);
  EXPECT_EQ(st.dropped, 4u);
  EXPECT_EQ(st.count[static_cast<int>(NcclKernelColl::kAllReduce)], 2u);
  EXPECT_EQ(st.deviceNs[static_cast<int>(NcclKernelColl::kAllReduce)], 800u);
  EXPECT_EQ(st.deviceNs[static_cast<int>(NcclKernelColl::kAllGather)], 700u);
  std::vector<CuptiKernel> k = c.takeKernels();
  ASSERT_EQ(k.size(), 3u);
  EXPECT_EQ(k[2].coll, NcclKernelColl::kAllGather);
  EXPECT_EQ(k[2].startNs, 3000u);
  EXPECT_EQ(k[2].endNs, 3700u);
  EXPECT_EQ(k[2].deviceId, 3u);
  EXPECT_EQ(k[2].streamId, 7u);
  EXPECT_EQ(k[2].correlationId, 13u);
  EXPECT_TRUE(c.takeKernels().empty());
  // stop(): disable, then a forced flush delivers what is still pending, then CUPTI is released.
  addRecord(s, "ncclDevKernel_Broadcast_RING_LL", 5000, 5100, 17);
  c.stop();
  EXPECT_EQ(s->disableCalls, 1);
  EXPECT_EQ(s->forcedFlushes, 1);
  EXPECT_EQ(c.takeKernels().size(), 1u);
  EXPECT_FALSE(c.available());
  EXPECT_TRUE(second.start(WW_FAKE_CUPTI)) << second.reason();
}

TEST(CuptiCollector, CollectorSetFlushesEachPassWhenOptedIn) {
  FakeCuptiState* s = fakeState(WW_FAKE_CUPTI);
  ASSERT_NE(s, nullptr);
  CollectorConfig cfg;
  cfg.sysfsRoot = "/nonexistent";
  cfg.nvml = false;
  {
    auto off = CollectorSet::create(cfg, nullptr);  // default: not even loaded
    EXPECT_NE(off->statusLine().find("cupti: unavailable (disabled (opt-in: WIREWISE_CUPTI=1))"), std::string::npos);
    EXPECT_EQ(s->enabledKind, -1);
  }
  cfg.cupti = true;
  cfg.cuptiLibrary = WW_FAKE_CUPTI;
  auto set = CollectorSet::create(cfg, nullptr);
  EXPECT_NE(set->statusLine().find("cupti: CUPTI API 130001"), std::string::npos) << set->statusLine();
  addRecord(s, "ncclDevKernel_AllReduce_Sum_bf16_TREE_LL", 10, 60, 1);
  set->sample(Clock::now());
  EXPECT_EQ(set->cuptiStats().ncclKernels, 1u);
  EXPECT_EQ(set->takeCuptiKernels().size(), 1u);
}

}  // namespace
}  // namespace wirewise::collectors
