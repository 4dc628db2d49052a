// Matching CUPTI kernel records to communicators: launches recorded as the profiler's KernelLaunch
// events do (CommLaunchRecorder), kernel records emitted by the fake libcupti through the collector's
// real buffer callbacks, streams mapped by the fake's cuptiGetStreamIdEx.
#include <dlfcn.h>

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <string>
#include <thread>
#include <vector>

#include "telemetry/collectors/collector_set.h"
#include "telemetry/collectors/cupti_collector.h"
#include "telemetry/launch_ring.h"
#include "tests/telemetry/collectors/fake_cupti.h"

namespace wirewise::collectors {
namespace {

using testing::FakeCuptiState;

const void* kStreamA = reinterpret_cast<const void*>(0x7000);  // cudaStream_t handles as NCCL passes them
const void* kStreamB = reinterpret_cast<const void*>(0x9000);
constexpr uint32_t kIdA = 7, kIdB = 9;                             // CUPTI's ids for them

FakeCuptiState* fakeState(const char* path) {
  void* h = ::dlopen(path, RTLD_NOW | RTLD_LOCAL);
  if (!h) return nullptr;
  auto fn = reinterpret_cast<testing::FakeCuptiStateFn>(::dlsym(h, "fakeCuptiState"));
  if (!fn) return nullptr;
  *fn() = FakeCuptiState{};
  return fn();
}

void addKernel(FakeCuptiState* s, const char* name, uint64_t start, uint64_t end, uint32_t streamId) {
  auto& r = s->records[s->pending++];
  r.kind = 10;
  r.name = name;
  r.start = start;
  r.end = end;
  r.device = 0;
  r.stream = streamId;
  r.correlation = static_cast<uint32_t>(s->pending);
}

class CuptiAttribution : public ::testing::Test {
 protected:
  void SetUp() override {
    s_ = fakeState(WW_FAKE_CUPTI);
    ASSERT_NE(s_, nullptr);
    s_->streams[0] = {kStreamA, kIdA};
    s_->streams[1] = {kStreamB, kIdB};
    s_->nStreams = 2;
    ASSERT_TRUE(c_.start(WW_FAKE_CUPTI)) << c_.reason();
    EXPECT_NE(c_.reason().find("stream ids via cuptiGetStreamIdEx"), std::string::npos) << c_.reason();
    ASSERT_TRUE(c_.attachLaunches(&ring_, [this](const std::string& l) { lines_.push_back(l); }));
  }
  // Enough passes for every launch to be popped and every record matched or given up.
  void settle() {
    for (uint64_t i = 0; i <= CuptiCollector::kMatchPasses; ++i) c_.flush(false);
  }
  const CuptiCommStats* comm(uint64_t id) {
    comms_ = c_.commStats();
    for (const auto& c : comms_)
      if (c.commId == id) return &c;
    return nullptr;
  }
  static int idx(NcclKernelColl c) { return static_cast<int>(c); }

  FakeCuptiState* s_ = nullptr;
  LaunchRing ring_{64};
  CuptiCollector c_;
  std::vector<std::string> lines_;
  std::vector<CuptiCommStats> comms_;
};

TEST_F(CuptiAttribution, TwoCommunicatorsOnTwoStreams) {
  CommLaunchRecorder a(&ring_, 0xa, 0), b(&ring_, 0xb, 1);
  a.onKernelLaunch(kStreamA);
  a.onColl("AllReduce", 5);
  b.onKernelLaunch(kStreamB);
  b.onColl("AllGather", 3);
  a.onKernelLaunch(kStreamA);
  a.onColl("AllReduce", 6);
  // CUPTI delivers stream B's record first: pairing is per stream.
  addKernel(s_, "ncclDevKernel_AllGather_RING_LL", 1000, 1400, kIdB);
  addKernel(s_, "ncclDevKernel_AllReduce_Sum_f32_RING_LL", 1000, 1500, kIdA);
  addKernel(s_, "ncclDevKernel_AllReduce_Sum_f32_RING_LL", 2000, 2200, kIdA);
  c_.flush(false);
  // The launches pushed before this pass are popped at the next one (their Coll claims settle first).
  EXPECT_TRUE(c_.takeKernels().empty());
  c_.flush(false);
  CuptiStats st = c_.stats();
  EXPECT_EQ(st.launches, 3u);
  EXPECT_EQ(st.verified, 3u);
  EXPECT_EQ(st.mismatched + st.unverified + st.unattributed, 0u);
  const CuptiCommStats* ca = comm(0xa);
  ASSERT_NE(ca, nullptr);
  EXPECT_EQ(ca->rank, 0);
  EXPECT_EQ(ca->count[idx(NcclKernelColl::kAllReduce)], 2u);
  EXPECT_EQ(ca->deviceNs[idx(NcclKernelColl::kAllReduce)], 700u);
  EXPECT_EQ(ca->count[idx(NcclKernelColl::kAllGather)], 0u);
  const CuptiCommStats* cb = comm(0xb);
  ASSERT_NE(cb, nullptr);
  EXPECT_EQ(cb->rank, 1);
  EXPECT_EQ(cb->deviceNs[idx(NcclKernelColl::kAllGather)], 400u);
  EXPECT_EQ(cb->count[idx(NcclKernelColl::kAllReduce)], 0u);
  std::vector<CuptiKernel> k = c_.takeKernels();
  ASSERT_EQ(k.size(), 3u);
  EXPECT_EQ(k[0].commId, 0xbu);
  EXPECT_EQ(k[0].seq, 3u);
  EXPECT_EQ(k[1].commId, 0xau);
  EXPECT_EQ(k[1].seq, 5u);
  EXPECT_EQ(k[2].seq, 6u);
  EXPECT_EQ(k[2].match, CuptiMatch::kVerified);
  EXPECT_EQ(k[2].launchColl, NcclKernelColl::kAllReduce);
  EXPECT_EQ(k[2].planColls, 1u);

  nlohmann::json r = c_.report();
  EXPECT_EQ(r["event"], "cupti_kernels");
  EXPECT_EQ(r["verified"], 3);
  ASSERT_EQ(r["comms"].size(), 2u);
  EXPECT_EQ(r["comms"][0]["comm"], "0x000000000000000a");
  EXPECT_EQ(r["comms"][0]["colls"][0]["coll"], "allreduce");
  EXPECT_DOUBLE_EQ(r["comms"][0]["colls"][0]["device_us"].get<double>(), 0.7);
  EXPECT_NE(r["attribution"].get<std::string>().find("cuptiGetStreamIdEx"), std::string::npos);
  EXPECT_TRUE(lines_.empty());
}

TEST_F(CuptiAttribution, InterleavedLaunchesOfTwoCommsOnOneStream) {
  CommLaunchRecorder a(&ring_, 0xa, 0), b(&ring_, 0xb, 0);
  const char* names[] = {"ncclDevKernel_AllReduce_Sum_bf16_RING_LL", "ncclDevKernel_AllGather_RING_SIMPLE"};
  for (int i = 0; i < 4; ++i) {
    CommLaunchRecorder& r = i % 2 == 0 ? a : b;
    r.onKernelLaunch(kStreamA);
    r.onColl(i % 2 == 0 ? "AllReduce" : "AllGather", static_cast<uint64_t>(i));
    addKernel(s_, names[i % 2], 100 * i, 100 * i + 10 * (i + 1), kIdA);
  }
  settle();
  EXPECT_EQ(c_.stats().verified, 4u);
  ASSERT_NE(comm(0xa), nullptr);
  EXPECT_EQ(comm(0xa)->count[idx(NcclKernelColl::kAllReduce)], 2u);
  EXPECT_EQ(comm(0xa)->deviceNs[idx(NcclKernelColl::kAllReduce)], 10u + 30u);
  EXPECT_EQ(comm(0xb)->deviceNs[idx(NcclKernelColl::kAllGather)], 20u + 40u);
  std::vector<CuptiKernel> k = c_.takeKernels();
  ASSERT_EQ(k.size(), 4u);
  for (size_t i = 0; i < k.size(); ++i) EXPECT_EQ(k[i].seq, i) << i;
}

TEST_F(CuptiAttribution, DisagreeingKernelNameIsAMismatchNotCredited) {
  CommLaunchRecorder a(&ring_, 0xa, 0);
  a.onKernelLaunch(kStreamA);
  a.onColl("AllReduce", 1);
  addKernel(s_, "ncclDevKernel_Broadcast_RING_LL", 0, 500, kIdA);
  settle();
  CuptiStats st = c_.stats();
  EXPECT_EQ(st.mismatched, 1u);
  EXPECT_EQ(st.verified, 0u);
  ASSERT_NE(comm(0xa), nullptr);
  EXPECT_EQ(comm(0xa)->mismatched, 1u);
  for (int i = 0; i < kNumNcclKernelColls; ++i) EXPECT_EQ(comm(0xa)->deviceNs[i], 0u);
  std::vector<CuptiKernel> k = c_.takeKernels();
  ASSERT_EQ(k.size(), 1u);
  EXPECT_EQ(k[0].match, CuptiMatch::kMismatched);
  EXPECT_EQ(k[0].coll, NcclKernelColl::kBroadcast);
  EXPECT_EQ(k[0].launchColl, NcclKernelColl::kAllReduce);
  EXPECT_EQ(st.count[idx(NcclKernelColl::kBroadcast)], 1u);  // still counted per collective
}

TEST_F(CuptiAttribution, SkipsALaunchThatNeverRanAndCreditsGenericAndUnclaimedPlans) {
  CommLaunchRecorder a(&ring_, 0xa, 0);
  a.onKernelLaunch(kStreamA);  // e.g. captured into a graph: no kernel record of its own
  a.onColl("Broadcast", 1);
  a.onKernelLaunch(kStreamA);
  a.onColl("AllReduce", 2);
  a.onKernelLaunch(kStreamA);  // a group of ReduceScatter + AllGather runs as one Generic kernel
  a.onColl("ReduceScatter", 3);
  a.onColl("AllGather", 4);
  a.onKernelLaunch(kStreamA);  // its Colls come from CUDA's host-callback thread: collective unknown
  std::thread([&] { a.onColl("AllGather", 5); }).join();
  addKernel(s_, "ncclDevKernel_AllReduce_Sum_f32_RING_LL", 0, 100, kIdA);
  addKernel(s_, "ncclDevKernel_Generic", 200, 500, kIdA);
  addKernel(s_, "ncclDevKernel_AllGather_RING_LL", 600, 650, kIdA);
  settle();
  CuptiStats st = c_.stats();
  EXPECT_EQ(st.staleLaunches, 1u);
  EXPECT_EQ(st.verified, 2u);
  EXPECT_EQ(st.unverified, 1u);
  EXPECT_EQ(st.mismatched, 0u);
  const CuptiCommStats* ca = comm(0xa);
  ASSERT_NE(ca, nullptr);
  EXPECT_EQ(ca->deviceNs[idx(NcclKernelColl::kAllReduce)], 100u);
  EXPECT_EQ(ca->deviceNs[idx(NcclKernelColl::kReduceScatter)], 300u);  // Generic: the plan's first collective
  EXPECT_EQ(ca->deviceNs[idx(NcclKernelColl::kGeneric)], 0u);
  EXPECT_EQ(ca->deviceNs[idx(NcclKernelColl::kAllGather)], 50u);  // unverified: by the kernel name
  EXPECT_EQ(ca->unverified, 1u);
  std::vector<CuptiKernel> k = c_.takeKernels();
  ASSERT_EQ(k.size(), 3u);
  EXPECT_EQ(k[1].planColls, 2u);
  EXPECT_EQ(k[2].match, CuptiMatch::kUnverified);
}

TEST_F(CuptiAttribution, ARecordWithoutTimestampsStillConsumesItsLaunch) {
  CommLaunchRecorder a(&ring_, 0xa, 0);
  a.onKernelLaunch(kStreamA);
  a.onColl("AllReduce", 1);
  a.onKernelLaunch(kStreamA);
  a.onColl("AllReduce", 2);
  addKernel(s_, "ncclDevKernel_AllReduce_Sum_f32_RING_LL", 0, 0, kIdA);  // CUPTI's device buffers ran out
  addKernel(s_, "ncclDevKernel_AllReduce_Sum_f32_RING_LL", 100, 300, kIdA);
  settle();
  CuptiStats st = c_.stats();
  EXPECT_EQ(st.noTimestamp, 1u);
  EXPECT_EQ(st.verified, 2u);
  ASSERT_NE(comm(0xa), nullptr);
  EXPECT_EQ(comm(0xa)->count[idx(NcclKernelColl::kAllReduce)], 1u);  // no time to credit for the first
  EXPECT_EQ(comm(0xa)->deviceNs[idx(NcclKernelColl::kAllReduce)], 200u);
  std::vector<CuptiKernel> k = c_.takeKernels();
  ASSERT_EQ(k.size(), 1u);
  EXPECT_EQ(k[0].seq, 2u);  // paired with its own launch, not the one before
}

TEST_F(CuptiAttribution, NoKernelLaunchEventsCountsRecordsAndSaysSoOnce) {
  // NCCL 2.27 (profiler v4) never reports KernelLaunch: the ring stays empty.
  addKernel(s_, "ncclDevKernel_AllReduce_Sum_f32_RING_LL", 0, 100, kIdA);
  c_.flush(false);
  c_.flush(false);
  EXPECT_EQ(c_.stats().unattributed, 0u);  // still waiting for a launch
  c_.flush(false);
  addKernel(s_, "ncclDevKernel_AllGather_RING_LL", 0, 100, kIdB);
  settle();
  CuptiStats st = c_.stats();
  EXPECT_EQ(st.unattributed, 2u);
  EXPECT_EQ(st.ncclKernels, 2u);
  EXPECT_EQ(st.count[idx(NcclKernelColl::kAllReduce)], 1u);
  EXPECT_TRUE(c_.commStats().empty());
  ASSERT_EQ(lines_.size(), 1u);
  EXPECT_NE(lines_[0].find("no KernelLaunch events"), std::string::npos) << lines_[0];
  EXPECT_NE(c_.attribution().find("no KernelLaunch events"), std::string::npos) << c_.attribution();
  EXPECT_EQ(c_.takeKernels().size(), 2u);
}

TEST_F(CuptiAttribution, DefaultStreamLaunchesAreUnmapped) {
  CommLaunchRecorder a(&ring_, 0xa, 0);
  a.onKernelLaunch(nullptr);  // the legacy default stream: needs a current context we do not have
  a.onColl("AllReduce", 1);
  a.onKernelLaunch(reinterpret_cast<const void*>(0x5000));  // a handle CUPTI does not know
  addKernel(s_, "ncclDevKernel_AllReduce_Sum_f32_RING_LL", 0, 100, 0);
  settle();
  CuptiStats st = c_.stats();
  EXPECT_EQ(st.launchesUnmapped, 2u);
  EXPECT_EQ(st.unattributed, 1u);
  EXPECT_EQ(s_->streamIdCalls, 1);  // the null handle is never passed to CUPTI
  EXPECT_TRUE(lines_.empty());      // launches exist: not the "no KernelLaunch" case
}

TEST_F(CuptiAttribution, StopMatchesWhatIsStillPending) {
  CommLaunchRecorder a(&ring_, 0xa, 0);
  a.onKernelLaunch(kStreamA);
  a.onColl("AllReduce", 1);
  a.onKernelLaunch(kStreamA);  // never ran before stop
  a.onColl("AllReduce", 2);
  addKernel(s_, "ncclDevKernel_AllReduce_Sum_f32_RING_LL", 0, 100, kIdA);
  c_.stop();
  CuptiStats st = c_.stats();
  EXPECT_EQ(st.verified, 1u);
  EXPECT_EQ(st.staleLaunches, 1u);
  EXPECT_EQ(c_.takeKernels().size(), 1u);
}

TEST(CuptiAttributionDegraded, MissingStreamIdFunctionsAreSaidAndRecordsStillCounted) {
  FakeCuptiState* s = fakeState(WW_FAKE_CUPTI_NOSTREAM);
  ASSERT_NE(s, nullptr);
  LaunchRing ring(16);
  CollectorConfig cfg;
  cfg.sysfsRoot = "/nonexistent";
  cfg.nvml = false;
  cfg.cupti = true;
  cfg.cuptiLibrary = WW_FAKE_CUPTI_NOSTREAM;
  cfg.launches = &ring;
  std::vector<std::string> lines;
  auto set = CollectorSet::create(cfg, [&](const std::string& l) { lines.push_back(l); });
  EXPECT_FALSE(set->cuptiAttributes());  // the runtime then leaves KernelLaunch out of the mask
  ASSERT_EQ(lines.size(), 1u);
  EXPECT_NE(lines[0].find("lacks cuptiGetStreamIdEx and cuptiGetStreamId: kernels are counted but cannot be "
                          "matched to communicators"),
            std::string::npos)
      << lines[0];
  addKernel(s, "ncclDevKernel_ReduceScatter_Sum_f32_RING_LL", 10, 30, 4);
  set->sample(Clock::now());
  CuptiStats st = set->cuptiStats();
  EXPECT_EQ(st.ncclKernels, 1u);
  EXPECT_EQ(st.deviceNs[static_cast<int>(NcclKernelColl::kReduceScatter)], 20u);
  EXPECT_EQ(st.unattributed, 0u);  // not matched at all: no attribution counters move
  std::vector<CuptiKernel> k = set->takeCuptiKernels();
  ASSERT_EQ(k.size(), 1u);  // queued at once, as without attribution
  EXPECT_EQ(k[0].match, CuptiMatch::kUnattributed);
  nlohmann::json r = set->cuptiReport();
  EXPECT_NE(r["attribution"].get<std::string>().find("unavailable"), std::string::npos) << r.dump();
  EXPECT_EQ(lines.size(), 1u);  // said once
}

TEST(CuptiFuncNames, MapCollEventFuncsToKernelCollectives) {
  EXPECT_EQ(ncclFuncColl("AllReduce"), NcclKernelColl::kAllReduce);
  EXPECT_EQ(ncclFuncColl("ReduceScatter"), NcclKernelColl::kReduceScatter);
  EXPECT_EQ(ncclFuncColl("Reduce"), NcclKernelColl::kReduce);
  EXPECT_EQ(ncclFuncColl("AlltoAll"), NcclKernelColl::kSendRecv);
  EXPECT_EQ(ncclFuncColl("Invalid"), NcclKernelColl::kOther);
  EXPECT_EQ(ncclFuncColl(nullptr), NcclKernelColl::kOther);
}

}  // namespace
}  // namespace wirewise::collectors
