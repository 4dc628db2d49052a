// Every exported profiler version (v6, v5, v4), driven through the NCCL-faithful loader: activation mask, Coll and
// KernelCh events with GPU timestamps, ProxyOp/ProxyStep events (PXN included), null handles and
// parents, and the summaries and network paths they turn into.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <unistd.h>

#include <chrono>
#include <cmath>
#include <map>
#include <thread>

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
    unsetenv("WIREWISE_NET_PATHS");
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

TEST_P(ProfilerVersion, SetsTheActivationMaskToWhatItConsumes) {
  int mask = 0;
  void* ctx = nullptr;
  ASSERT_EQ(prof_->init(&ctx, 0x77, &mask, nullptr, 1, 8, 0, nullptr), ncclSuccess);
  ASSERT_NE(ctx, nullptr);
  const int ce = GetParam() >= 6 ? ncclProfileCeColl : 0;  // v6: copy-engine collectives, to count them
  EXPECT_EQ(mask, ncclProfileColl | ncclProfileKernelCh | ce);
  EXPECT_EQ(prof_->finalize(ctx), ncclSuccess);  // the last reference: the next init reads the settings anew

  setenv("WIREWISE_NET_PATHS", "on", 1);
  mask = 0;
  ASSERT_EQ(prof_->init(&ctx, 0x77, &mask, nullptr, 1, 8, 0, nullptr), ncclSuccess);
  EXPECT_EQ(mask, ncclProfileColl | ncclProfileKernelCh | ncclProfileProxyOp | ncclProfileProxyStep | ce);
  // A second comm finds the process-global mask already set and leaves it as it is.
  void* ctx2 = nullptr;
  ASSERT_EQ(prof_->init(&ctx2, 0x79, &mask, nullptr, 1, 8, 1, nullptr), ncclSuccess);
  EXPECT_EQ(mask, ncclProfileColl | ncclProfileKernelCh | ncclProfileProxyOp | ncclProfileProxyStep | ce);
  EXPECT_EQ(prof_->finalize(ctx2), ncclSuccess);
  EXPECT_EQ(prof_->finalize(ctx), ncclSuccess);
}

// One network path's worth of proxy events as src/transport/net.cc reports them: a ProxyOp under the
// Coll, then per step start, the wait states (with transSize where NCCL passes it) and stop. Sleeps
// between states make the callback-time intervals measurable.
void* proxyOp(const Profiler& p, void* ctx, void* coll, int channel, int peer, bool isSend, int pid) {
  ncclProfilerEventDescr_v5_t d{};
  d.type = ncclProfileProxyOp;
  d.parentObj = coll;
  d.rank = 0;
  d.proxyOp.pid = pid;
  d.proxyOp.channelId = static_cast<uint8_t>(channel);
  d.proxyOp.peer = peer;
  d.proxyOp.nSteps = 2;
  d.proxyOp.chunkSize = 1 << 19;
  d.proxyOp.isSend = isSend ? 1 : 0;
  void* h = nullptr;
  EXPECT_EQ(p.startEvent(ctx, &h, &d), ncclSuccess);
  return h;
}

void proxyStep(const Profiler& p, void* ctx, void* op, int step, std::initializer_list<int> states, size_t bytes) {
  ncclProfilerEventDescr_v5_t d{};
  d.type = ncclProfileProxyStep;
  d.parentObj = op;
  d.proxyStep.step = step;
  void* h = nullptr;
  ASSERT_EQ(p.startEvent(ctx, &h, &d), ncclSuccess);
  ASSERT_NE(h, nullptr);
  for (int st : states) {
    ncclProfilerEventStateArgs_v5_t a{};
    a.proxyStep.transSize = bytes;  // NCCL passes its last size with every state; only two carry meaning
    ASSERT_EQ(p.recordEventState(h, static_cast<ncclProfilerEventState_t>(st), &a), ncclSuccess);
    // The plugin stamps each state with its own clock (the ABI passes none): time between states is what
    // gives each wait a length.
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  ASSERT_EQ(p.stopEvent(h), ncclSuccess);
}

TEST_P(ProfilerVersion, WithoutNetPathsProxyEventsAreNotTracked) {
  int mask = 0;
  void* ctx = nullptr;
  ASSERT_EQ(prof_->init(&ctx, 0x7c, &mask, nullptr, 2, 16, 0, nullptr), ncclSuccess);
  EXPECT_EQ(proxyOp(*prof_, ctx, nullptr, 0, 1, true, getpid()), nullptr);
  ASSERT_EQ(prof_->finalize(ctx), ncclSuccess);
  EXPECT_TRUE(logEvents("net_paths").empty());
}

TEST_P(ProfilerVersion, ProxyStepsBecomeNetworkPaths) {
  setenv("WIREWISE_NET_PATHS", "on", 1);
  int mask = 0;
  void* ctx = nullptr;
  ASSERT_EQ(prof_->init(&ctx, 0x7a, &mask, "dp", 2, 16, 0, nullptr), ncclSuccess);
  ncclProfilerEventDescr_v5_t c{};
  c.type = ncclProfileColl;
  c.coll.func = "AllReduce";
  c.coll.count = 1 << 18;
  c.coll.datatype = "ncclFloat32";
  c.coll.nChannels = 1;
  c.coll.algo = "RING";
  c.coll.proto = "SIMPLE";
  void* coll = nullptr;
  ASSERT_EQ(prof_->startEvent(ctx, &coll, &c), ncclSuccess);
  ASSERT_NE(coll, nullptr);
  void* send = proxyOp(*prof_, ctx, coll, 1, 3, true, getpid());
  void* recv = proxyOp(*prof_, ctx, coll, 1, 15, false, getpid());
  ASSERT_TRUE(send && recv);
  for (int s = 0; s < 2; ++s) {
    proxyStep(*prof_, ctx, send, s,
              {ncclProfilerProxyStepSendGPUWait, ncclProfilerProxyStepSendPeerWait_v4, ncclProfilerProxyStepSendWait},
              1 << 19);
    proxyStep(*prof_, ctx, recv, s,
              {ncclProfilerProxyStepRecvWait, ncclProfilerProxyStepRecvFlushWait, ncclProfilerProxyStepRecvGPUWait},
              1 << 18);
  }
  ASSERT_EQ(prof_->stopEvent(send), ncclSuccess);
  ASSERT_EQ(prof_->stopEvent(recv), ncclSuccess);
  ASSERT_EQ(prof_->stopEvent(send), ncclSuccess);  // duplicate: ignored
  ASSERT_EQ(prof_->stopEvent(coll), ncclSuccess);
  ASSERT_EQ(prof_->finalize(ctx), ncclSuccess);

  // The runtime reports paths at each summary and at finalize: add up the comm's net_paths events.
  auto ev = logEvents("net_paths");
  ASSERT_FALSE(ev.empty());
  uint64_t ops = 0, steps = 0, stale = 0;
  std::map<std::string, nlohmann::json> paths;  // "dir/channel/peer" -> summed row
  for (const auto& e : ev) {
    EXPECT_EQ(e["comm"], "0x000000000000007a");
    ops += e["ops"].get<uint64_t>();
    steps += e["steps"].get<uint64_t>();
    stale += e["drops"]["stale"].get<uint64_t>();
    for (const auto& r : e["paths"]) {
      auto& p = paths[r["dir"].get<std::string>() + "/" + r["channel"].dump() + "/" + r["peer"].dump()];
      if (p.is_null()) {
        p = r;
        continue;
      }
      for (const char* f : {"ops", "steps", "planned_steps", "bytes"})
        p[f] = p[f].get<uint64_t>() + r[f].get<uint64_t>();
      for (const char* f : {"active_us", "net_us"}) p[f] = p[f].get<double>() + r[f].get<double>();
      for (const auto& [k, v] : r["wait_us"].items()) p["wait_us"][k] = p["wait_us"].value(k, 0.0) + v.get<double>();
    }
  }
  EXPECT_EQ(ops, 2u);
  EXPECT_EQ(steps, 4u);
  EXPECT_EQ(stale, 1u);
  ASSERT_EQ(paths.size(), 2u);
  ASSERT_TRUE(paths.count("send/1/3") && paths.count("recv/1/15"));
  const auto& tx = paths["send/1/3"];
  EXPECT_EQ(tx["steps"], 2);
  EXPECT_EQ(tx["planned_steps"], 2);
  EXPECT_EQ(tx["chunk_size"], 1 << 19);
  EXPECT_EQ(tx["bytes"], 2 << 19);  // transSize at SendWait only
  // Each state lasted one sleep (>= 1 ms) per step; the network interval is SendWait..stop.
  EXPECT_GE(tx["wait_us"]["send_gpu_wait"].get<double>(), 2000.0);
  EXPECT_GE(tx["wait_us"]["send_peer_wait"].get<double>(), 2000.0);
  EXPECT_GE(tx["net_us"].get<double>(), 2000.0);
  EXPECT_GE(tx["active_us"].get<double>(), tx["net_us"].get<double>());
  if (ev.size() == 1) {
    EXPECT_NEAR(tx["net_gbs"].get<double>(), (2 << 19) / (tx["net_us"].get<double>() * 1e3), 1e-6);
  }
  const auto& rx = paths["recv/1/15"];
  EXPECT_EQ(rx["bytes"], 2 << 18);  // transSize at RecvFlushWait only
  EXPECT_GE(rx["wait_us"]["recv_gpu_wait"].get<double>(), 2000.0);
  EXPECT_FALSE(rx["wait_us"].contains("send_wait"));
}

TEST_P(ProfilerVersion, PxnAndOrphanProxyEventsNeverTouchForeignPointers) {
  setenv("WIREWISE_NET_PATHS", "on", 1);
  int mask = 0;
  void* ctx = nullptr;
  ASSERT_EQ(prof_->init(&ctx, 0x7b, &mask, nullptr, 2, 16, 0, nullptr), ncclSuccess);
  // Under PXN this process's proxy reports another process's op: NCCL passes that process's context and
  // parent. Wild values stand in for them: dereferencing either would crash this test.
  void* foreignCtx = reinterpret_cast<void*>(0x10);
  void* foreignParent = reinterpret_cast<void*>(0x20);
  EXPECT_EQ(proxyOp(*prof_, foreignCtx, foreignParent, 0, 1, true, getpid() + 1), nullptr);
  // NCCL still starts the op's steps, with our null op handle as parent and the foreign context.
  ncclProfilerEventDescr_v5_t st{};
  st.type = ncclProfileProxyStep;
  void* h = reinterpret_cast<void*>(0x1);
  EXPECT_EQ(prof_->startEvent(foreignCtx, &h, &st), ncclSuccess);
  EXPECT_EQ(h, nullptr);
  // Our own op without a parent (a p2p: P2p events are not tracked) is measured all the same.
  void* op = proxyOp(*prof_, ctx, nullptr, 2, 5, true, getpid());
  ASSERT_NE(op, nullptr);
  ASSERT_EQ(prof_->stopEvent(op), ncclSuccess);
  ASSERT_EQ(prof_->finalize(ctx), ncclSuccess);
  auto ev = logEvents("net_paths");
  ASSERT_EQ(ev.size(), 1u);  // one op: whichever report saw it, the other had nothing to say
  EXPECT_GE(ev[0]["process"]["pxn_ops"].get<uint64_t>(), 1u);
  EXPECT_GE(ev[0]["process"]["orphan_steps"].get<uint64_t>(), 1u);
  EXPECT_EQ(ev[0]["null_parent_ops"], 1);
  ASSERT_EQ(ev[0]["paths"].size(), 1u);
  EXPECT_EQ(ev[0]["paths"][0]["peer"], 5);
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

TEST_P(ProfilerVersion, CopyEngineCollectivesAreCountedNeverSampled) {
  int mask = 0;
  void* ctx = nullptr;
  ASSERT_EQ(prof_->init(&ctx, 0x7c, &mask, "ce", 1, 8, 0, nullptr), ncclSuccess);
  // What NCCL 2.30 reports around a copy-engine AllGather's launch: CeColl start and stop on the host.
  for (uint64_t i = 0; i < 5; ++i) {
    ncclProfilerEventDescr_v6_t d{};
    d.type = ncclProfileCeColl;
    d.rank = 0;
    d.ceColl.seqNumber = i;
    d.ceColl.func = "AllGather";
    d.ceColl.count = 1 << 20;
    d.ceColl.datatype = "ncclBfloat16";
    d.ceColl.syncStrategy = "MC";
    d.ceColl.ceSeqNum = static_cast<uint32_t>(i);
    void* h = reinterpret_cast<void*>(0x1);
    ASSERT_EQ(prof_->startEvent(ctx, &h, &d), ncclSuccess);
    EXPECT_EQ(h, nullptr) << "untracked: NCCL then starts no CeSync/CeBatch child and calls no stop";
    ASSERT_EQ(prof_->recordEventState(nullptr, ncclProfilerCeCollComplete, nullptr), ncclSuccess);
  }
  collective(ctx, 0, 262144, 1'000'000, 100'000, 2);  // kernel collectives still measure as before
  ASSERT_EQ(prof_->finalize(ctx), ncclSuccess);
  auto finals = logEvents("comm_finalize");
  ASSERT_EQ(finals.size(), 1u);
  EXPECT_EQ(finals[0]["samples"], 1);
  if (GetParam() >= 6)
    EXPECT_EQ(finals[0]["ce_collectives"], 5);
  else
    EXPECT_FALSE(finals[0].contains("ce_collectives")) << "NCCL drops copy-engine events before a v5/v4 face";
}

TEST_F(PluginTest, EachNcclReleasePicksTheNewestProfilerFaceItKnows) {
  for (loader::NcclRelease release : loader::kAllReleases) {
    std::string why;
    auto p = Profiler::load(pluginHandle(), &why, release);
    ASSERT_NE(p, nullptr) << why;
    EXPECT_EQ(p->version(), release == loader::NcclRelease::V2_28 ? 5 : 6) << loader::releaseName(release);
  }
}

INSTANTIATE_TEST_SUITE_P(EveryExportedVersion, ProfilerVersion, ::testing::Values(6, 5, 4),
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
  ASSERT_EQ(prof->init(&pctx, 9, &mask, "dp-group", 1, 8, 3, nullptr), ncclSuccess);
  ASSERT_EQ(tuner->finalize(tctx), ncclSuccess);
  ASSERT_EQ(prof->finalize(pctx), ncclSuccess);
  EXPECT_EQ(logEvents("plugin_start").size(), 1u);
  auto inits = logEvents("comm_init");
  ASSERT_EQ(inits.size(), 2u);
  // NCCL's commName reaches the profiler face's comm_init; the tuner face is given none.
  EXPECT_FALSE(inits[0].contains("comm_name"));
  EXPECT_EQ(inits[1].value("comm_name", ""), "dp-group");
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
