// WIREWISE_PROFILER_CHAIN through the NCCL-faithful loader: wirewise opens the counting fake
// (fakes/chain_fake.cc) as its second plugin, and every event reaches it with its own context, handles and
// parents; NCCL's mask is the union; wirewise's own samples are what they are without chaining; a second
// plugin that is missing, of another version, failing, throwing or wirewise itself is one WARN and
// harmless; a full chain pool is counted; two threads on one comm are clean (and race-free under TSan).
#include <gtest/gtest.h>

#include <dlfcn.h>
#include <unistd.h>

#include <cstdarg>
#include <mutex>
#include <thread>

#include "common/settings.h"
#include "tests/plugin/fakes/chain_fake.h"
#include "tests/plugin/plugin_fixture.h"

namespace wirewise::testing {
namespace {

using loader::Profiler;

std::mutex gLogMu;
std::vector<std::string> gWarnings, gInfos;

__attribute__((format(printf, 5, 6))) void captureLog(ncclDebugLogLevel level, unsigned long, const char*, int,
                                                      const char* fmt, ...) {
  char buf[1024];
  va_list ap;
  va_start(ap, fmt);
  std::vsnprintf(buf, sizeof buf, fmt, ap);
  va_end(ap);
  std::lock_guard<std::mutex> lock(gLogMu);
  (level == NCCL_LOG_WARN ? gWarnings : gInfos).emplace_back(buf);
}

size_t warningsWith(const std::string& part) {
  std::lock_guard<std::mutex> lock(gLogMu);
  size_t n = 0;
  for (const auto& w : gWarnings) n += w.find(part) != std::string::npos;
  return n;
}

ChainFake* fake() {
  static ChainFake* f = [] {
    void* h = dlopen(WW_CHAIN_FAKE, RTLD_NOW | RTLD_LOCAL);  // the instance wirewise opens too
    EXPECT_NE(h, nullptr) << dlerror();
    auto get = reinterpret_cast<ChainFake* (*)()>(dlsym(h, "chainFake"));
    return get != nullptr ? get() : nullptr;
  }();
  return f;
}

int bit(uint64_t type) { return __builtin_ctzll(type); }

const char* chainVar() { return settingName(&Settings::profilerChain); }

class ProfilerChain : public PluginTest, public ::testing::WithParamInterface<int> {
 protected:
  void SetUp() override {
    PluginTest::SetUp();
    setenv("WIREWISE_SUMMARY_MS", "100", 1);
    setenv(settingName(&Settings::sync), "off", 1);  // no coordinator to look for: its WARNs are not ours
    ASSERT_NE(fake(), nullptr);
    void* reset = dlsym(dlopen(WW_CHAIN_FAKE, RTLD_NOW | RTLD_NOLOAD), "chainFakeReset");
    reinterpret_cast<void (*)()>(reset)();
    std::string why;
    prof_ = Profiler::loadVersion(pluginHandle(), GetParam(), &why);
    ASSERT_NE(prof_, nullptr) << why;
    std::lock_guard<std::mutex> lock(gLogMu);
    gWarnings.clear();
    gInfos.clear();
  }
  void TearDown() override {
    unsetenv(chainVar());
    unsetenv(settingName(&Settings::sync));
    unsetenv("WIREWISE_SUMMARY_MS");
    unsetenv("WIREWISE_EVENT_POOL");
    PluginTest::TearDown();
  }
  void* init(uint64_t commId, int* mask) {
    void* ctx = nullptr;
    EXPECT_EQ(prof_->init(&ctx, commId, mask, "chain", 1, 8, 0, captureLog), ncclSuccess);
    EXPECT_NE(ctx, nullptr);
    return ctx;
  }
  void* start(void* ctx, ncclProfilerEventDescr_v6_t d) {
    void* h = nullptr;
    EXPECT_EQ(prof_->startEvent(ctx, &h, &d), ncclSuccess);
    return h;
  }
  // A group of one collective as NCCL 2.28 reports it: Group, Coll (its parent the Group: v4's shim puts
  // parentGroup there), Coll stop at launch, then per channel KernelCh, KernelChStop, stop; Group stop.
  void collective(void* ctx, uint64_t seq, uint64_t t0, int nChannels) {
    ncclProfilerEventDescr_v6_t g{};
    g.type = ncclProfileGroup;
    void* group = start(ctx, g);
    ncclProfilerEventDescr_v6_t c{};
    c.type = ncclProfileColl;
    c.parentObj = group;
    c.coll.parentGroup = group;
    c.coll.seqNumber = seq;
    c.coll.func = "AllReduce";
    c.coll.count = 262144;
    c.coll.datatype = "ncclFloat32";
    c.coll.nChannels = static_cast<uint8_t>(nChannels);
    c.coll.algo = "RING";
    c.coll.proto = "SIMPLE";
    void* coll = start(ctx, c);
    ASSERT_NE(coll, nullptr);
    prof_->stopEvent(coll);
    for (int ch = 0; ch < nChannels; ++ch) {
      ncclProfilerEventDescr_v6_t k{};
      k.type = ncclProfileKernelCh;
      k.parentObj = coll;
      k.kernelCh.channelId = static_cast<uint8_t>(ch);
      k.kernelCh.pTimer = t0;
      void* h = start(ctx, k);
      ASSERT_NE(h, nullptr);
      ncclProfilerEventStateArgs_v5_t a{};
      a.kernelCh.pTimer = t0 + 100'000;
      prof_->recordEventState(h, ncclProfilerKernelChStop, &a);
      prof_->stopEvent(h);
    }
    if (group != nullptr) prof_->stopEvent(group);
  }
  // What wirewise logged of its own measurements: the summaries' rows, summed.
  std::pair<uint64_t, double> ownSamples() {
    uint64_t count = 0;
    double p50 = 0;
    for (const auto& s : logEvents("summary"))
      for (const auto& row : s["rows"]) {
        count += row["count"].get<uint64_t>();
        p50 = row["p50_us"].get<double>();
      }
    return {count, p50};
  }
  std::unique_ptr<Profiler> prof_;
};

constexpr int kOurs = ncclProfileColl | ncclProfileKernelCh;

TEST_P(ProfilerChain, EveryEventReachesTheChainedPluginWithItsOwnHandles) {
  setenv(chainVar(), WW_CHAIN_FAKE, 1);
  fake()->maskToSet = ncclProfileGroup | ncclProfileColl | ncclProfileKernelCh | ncclProfileProxyCtrl;
  int mask = 0;
  void* ctx = init(0x51, &mask);
  const int ce = GetParam() >= 6 ? ncclProfileCeColl : 0;
  EXPECT_EQ(mask, kOurs | ce | ncclProfileGroup | ncclProfileProxyCtrl) << "NCCL's mask: the union";
  EXPECT_EQ(fake()->inits[GetParam()].load(), 1u) << "the chained plugin's face of NCCL's version";
  EXPECT_EQ(fake()->lastInitMask.load(), fake()->maskToSet) << "its own int, not NCCL's";
  constexpr int kColls = 50, kChannels = 2;
  for (int i = 0; i < kColls; ++i) collective(ctx, i, 1'000'000 * (i + 1), kChannels);
  // A type only the chained plugin asked for, with states: its handle is a chain slot, ours untouched.
  ncclProfilerEventDescr_v6_t pc{};
  pc.type = ncclProfileProxyCtrl;
  void* ctrl = start(ctx, pc);
  ASSERT_NE(ctrl, nullptr);
  ncclProfilerEventStateArgs_v5_t a{};
  a.proxyCtrl.appendedProxyOps = 3;
  prof_->recordEventState(ctrl, ncclProfilerProxyCtrlAppend, &a);
  prof_->stopEvent(ctrl);
  prof_->stopEvent(ctrl);  // a duplicate stop: never reaches the chained plugin twice
  ASSERT_EQ(prof_->finalize(ctx), ncclSuccess);

  const ChainFake& f = *fake();
  EXPECT_EQ(f.start[bit(ncclProfileGroup)].load(), kColls);
  EXPECT_EQ(f.start[bit(ncclProfileColl)].load(), kColls);
  EXPECT_EQ(f.stop[bit(ncclProfileColl)].load(), kColls);
  EXPECT_EQ(f.start[bit(ncclProfileKernelCh)].load(), kColls * kChannels);
  EXPECT_EQ(f.record[bit(ncclProfileKernelCh)].load(), kColls * kChannels);
  EXPECT_EQ(f.states[ncclProfilerKernelChStop].load(), kColls * kChannels);
  EXPECT_EQ(f.lastKernelChStop.load(), 1'000'000u * kColls + 100'000u);
  EXPECT_EQ(f.stop[bit(ncclProfileKernelCh)].load(), kColls * kChannels);
  EXPECT_EQ(f.stop[bit(ncclProfileGroup)].load(), kColls);
  EXPECT_EQ(f.start[bit(ncclProfileProxyCtrl)].load(), 1u);
  EXPECT_EQ(f.states[ncclProfilerProxyCtrlAppend].load(), 1u);
  EXPECT_EQ(f.stop[bit(ncclProfileProxyCtrl)].load(), 1u);
  // Parents: each Coll's is its Group, each KernelCh's its Coll (stopped before the child starts), all its own.
  EXPECT_EQ(f.parents.load(), kColls + kColls * kChannels);
  EXPECT_EQ(f.nullParents[bit(ncclProfileKernelCh)].load(), 0u);
  EXPECT_EQ(f.nullParents[bit(ncclProfileColl)].load(), 0u);
  EXPECT_EQ(f.badParents.load(), 0u);
  EXPECT_EQ(f.groupParents.load(), GetParam() >= 5 ? kColls : 0u) << "coll.parentGroup translated too";
  EXPECT_EQ(f.badGroupParents.load(), 0u);
  EXPECT_EQ(f.badHandles.load(), 0u);
  EXPECT_EQ(f.badContexts.load(), 0u);
  EXPECT_EQ(f.finalizes.load(), 1u);
  EXPECT_EQ(warningsWith(""), 0u);

  // Our own samples are those of the same run without chaining.
  const auto chained = ownSamples();
  EXPECT_EQ(chained.first, static_cast<uint64_t>(kColls));
  unsetenv(chainVar());
  std::filesystem::remove(logPath_);
  mask = 0;
  ctx = init(0x51, &mask);
  EXPECT_EQ(mask, kOurs | ce);
  for (int i = 0; i < kColls; ++i) collective(ctx, i, 1'000'000 * (i + 1), kChannels);
  ASSERT_EQ(prof_->finalize(ctx), ncclSuccess);
  EXPECT_EQ(ownSamples(), chained);
  EXPECT_EQ(fake()->start[bit(ncclProfileColl)].load(), kColls) << "nothing forwarded without the setting";
}

TEST_P(ProfilerChain, TypesOnlyWirewiseAskedForStayWithWirewise) {
  setenv(chainVar(), WW_CHAIN_FAKE, 1);
  fake()->maskToSet = ncclProfileGroup;
  int mask = 0;
  void* ctx = init(0x52, &mask);
  for (int i = 0; i < 20; ++i) collective(ctx, i, 1'000'000 * (i + 1), 1);
  ASSERT_EQ(prof_->finalize(ctx), ncclSuccess);
  EXPECT_EQ(fake()->start[bit(ncclProfileGroup)].load(), 20u);
  EXPECT_EQ(fake()->stop[bit(ncclProfileGroup)].load(), 20u);
  EXPECT_EQ(fake()->start[bit(ncclProfileColl)].load(), 0u);
  EXPECT_EQ(fake()->start[bit(ncclProfileKernelCh)].load(), 0u);
  EXPECT_EQ(fake()->badHandles.load(), 0u);
  EXPECT_EQ(ownSamples().first, 20u);
}

TEST_P(ProfilerChain, ByNameAsNcclResolvesIt) {
  // libnccl-profiler-chaincount.so carries that soname: once loaded, dlopen finds it by that name alone.
  setenv(chainVar(), "chaincount", 1);
  fake()->maskToSet = ncclProfileColl;
  int mask = 0;
  void* ctx = init(0x53, &mask);
  collective(ctx, 0, 1'000'000, 1);
  ASSERT_EQ(prof_->finalize(ctx), ncclSuccess);
  EXPECT_EQ(fake()->start[bit(ncclProfileColl)].load(), 1u);
  EXPECT_EQ(warningsWith(""), 0u);
}

TEST_P(ProfilerChain, AMissingLibraryIsOneWarning) {
  // Warned once per process and value: each version's case names its own.
  const std::string missing = "/nonexistent/v" + std::to_string(GetParam()) + "/libnccl-profiler-gone.so";
  setenv(chainVar(), missing.c_str(), 1);
  for (uint64_t comm : {0x54, 0x55}) {
    int mask = 0;
    void* ctx = init(comm, &mask);
    EXPECT_EQ(mask, kOurs | (GetParam() >= 6 ? ncclProfileCeColl : 0));
    collective(ctx, 0, 1'000'000, 1);
    ASSERT_EQ(prof_->finalize(ctx), ncclSuccess);
  }
  EXPECT_EQ(warningsWith("gone.so cannot be opened"), 1u);
  EXPECT_EQ(ownSamples().first, 2u);
}

TEST_P(ProfilerChain, AnotherVersionIsOneWarningNamingBoth) {
  setenv(chainVar(), WW_CHAIN_FAKE_V4, 1);
  int mask = 0;
  void* ctx = init(0x56, &mask);
  collective(ctx, 0, 1'000'000, 1);
  ASSERT_EQ(prof_->finalize(ctx), ncclSuccess);
  if (GetParam() == 4) {
    EXPECT_EQ(warningsWith(""), 0u) << "v4 face, v4 plugin: chained";
  } else {
    const std::string needed = "needs ncclProfiler_v" + std::to_string(GetParam());
    EXPECT_EQ(warningsWith("exports ncclProfiler_v4, but NCCL uses wirewise's v" + std::to_string(GetParam())), 1u);
    EXPECT_EQ(warningsWith(needed), 1u);
  }
  EXPECT_EQ(ownSamples().first, 1u);
}

TEST_P(ProfilerChain, AFailingOrThrowingInitDropsChainingForThatComm) {
  // Warned once per process and value: each version's case spells the fake's path its own way.
  const std::string value = std::string(GetParam(), '/') + WW_CHAIN_FAKE;
  setenv(chainVar(), value.c_str(), 1);
  fake()->maskToSet = ncclProfileColl;
  fake()->initResult = ncclInternalError;
  int mask = 0;
  void* a = init(0x57, &mask);
  fake()->initResult = ncclSuccess;
  fake()->throwAtInit = true;
  void* b = init(0x58, &mask);
  fake()->throwAtInit = false;
  void* c = init(0x59, &mask);  // this one chains
  for (void* ctx : {a, b, c}) collective(ctx, 0, 1'000'000, 1);
  for (void* ctx : {a, b, c}) ASSERT_EQ(prof_->finalize(ctx), ncclSuccess);
  EXPECT_EQ(warningsWith("init failed"), 1u) << "once, not per comm";
  EXPECT_EQ(fake()->inits[GetParam()].load(), 3u);
  EXPECT_EQ(fake()->start[bit(ncclProfileColl)].load(), 1u);
  EXPECT_EQ(fake()->finalizes.load(), 1u);
  EXPECT_EQ(ownSamples().first, 3u);
}

TEST_P(ProfilerChain, ChainingToWirewiseItselfIsRefused) {
  setenv(chainVar(), WW_TUNER_SO, 1);
  int mask = 0;
  void* ctx = init(0x5a, &mask);
  collective(ctx, 0, 1'000'000, 1);
  ASSERT_EQ(prof_->finalize(ctx), ncclSuccess);
  EXPECT_EQ(warningsWith("is wirewise itself"), 1u);
  EXPECT_EQ(ownSamples().first, 1u);
}

TEST_P(ProfilerChain, AFullPoolIsCountedNeverHarmful) {
  setenv(chainVar(), WW_CHAIN_FAKE, 1);
  setenv("WIREWISE_EVENT_POOL", "16", 1);  // 32 chain slots: 16 for the launch side, 16 for the proxy side
  fake()->maskToSet = ncclProfileGroup | ncclProfileColl;
  int mask = 0;
  void* ctx = init(0x5b, &mask);
  std::vector<void*> open;
  for (int i = 0; i < 40; ++i) {
    ncclProfilerEventDescr_v6_t g{};
    g.type = ncclProfileGroup;
    open.push_back(start(ctx, g));
  }
  EXPECT_EQ(fake()->start[bit(ncclProfileGroup)].load(), 16u);
  collective(ctx, 0, 1'000'000, 1);  // ours still measured with the pool full
  for (void* h : open) prof_->stopEvent(h);
  ASSERT_EQ(prof_->finalize(ctx), ncclSuccess);
  EXPECT_EQ(fake()->stop[bit(ncclProfileGroup)].load(), 16u);
  EXPECT_EQ(fake()->badHandles.load(), 0u);
  EXPECT_EQ(warningsWith("events not forwarded, all 16 slots of a ring in use"), 1u);
  EXPECT_EQ(ownSamples().first, 1u);
}

// NCCL stops a Coll at launch and starts its KernelCh children when the kernel runs, while the proxy
// thread may report thousands of events: those never recycle the stopped Coll's slot (its ring is the
// launch side's). Launch-side events past a ring's worth do, and the late child is counted, not misparented.
TEST_P(ProfilerChain, ProxyEventsNeverRecycleAStoppedParent) {
  setenv(chainVar(), WW_CHAIN_FAKE, 1);
  setenv("WIREWISE_EVENT_POOL", "16", 1);  // 16 slots per ring
  fake()->maskToSet = ncclProfileColl | ncclProfileKernelCh | ncclProfileProxyCtrl | ncclProfileGroup;
  int mask = 0;
  void* ctx = init(0x5e, &mask);
  auto stoppedColl = [&] {
    ncclProfilerEventDescr_v6_t c{};
    c.type = ncclProfileColl;
    c.coll.func = "AllReduce";
    c.coll.datatype = "ncclFloat32";
    c.coll.algo = "RING";
    c.coll.proto = "SIMPLE";
    c.coll.nChannels = 1;
    void* coll = start(ctx, c);
    prof_->stopEvent(coll);
    return coll;
  };
  auto kernelCh = [&](void* parent) {
    ncclProfilerEventDescr_v6_t k{};
    k.type = ncclProfileKernelCh;
    k.parentObj = parent;
    prof_->stopEvent(start(ctx, k));
  };
  void* coll = stoppedColl();
  ncclProfilerEventDescr_v6_t pc{};
  pc.type = ncclProfileProxyCtrl;
  for (int i = 0; i < 200; ++i) prof_->stopEvent(start(ctx, pc));  // 12 times round the proxy ring
  kernelCh(coll);
  EXPECT_EQ(fake()->parents.load(), 1u);
  // Sixteen launch-side events later the slot is another's: the child goes without a parent, counted.
  void* old = stoppedColl();
  for (int i = 0; i < 16; ++i) {
    ncclProfilerEventDescr_v6_t g{};
    g.type = ncclProfileGroup;
    prof_->stopEvent(start(ctx, g));
  }
  kernelCh(old);
  ASSERT_EQ(prof_->finalize(ctx), ncclSuccess);
  EXPECT_EQ(fake()->parents.load(), 1u);
  EXPECT_EQ(fake()->start[bit(ncclProfileKernelCh)].load(), 2u);
  EXPECT_EQ(fake()->badParents.load() + fake()->badHandles.load() + fake()->badContexts.load(), 0u);
  std::lock_guard<std::mutex> lock(gLogMu);
  size_t counted = 0;
  for (const auto& i : gInfos) counted += i.find("1 parents reused before their children") != std::string::npos;
  EXPECT_EQ(counted, 1u);
}

TEST_P(ProfilerChain, PxnProxyOpsAreNeverForwarded) {
  setenv(chainVar(), WW_CHAIN_FAKE, 1);
  setenv(settingName(&Settings::netPaths), "on", 1);
  fake()->maskToSet = ncclProfileProxyOp | ncclProfileProxyStep;
  int mask = 0;
  void* ctx = init(0x5c, &mask);
  ncclProfilerEventDescr_v6_t op{};
  op.type = ncclProfileProxyOp;
  op.proxyOp.pid = getpid();
  op.proxyOp.nSteps = 1;
  void* own = start(ctx, op);
  ASSERT_NE(own, nullptr);
  ncclProfilerEventDescr_v6_t st{};
  st.type = ncclProfileProxyStep;
  st.parentObj = own;
  void* step = start(reinterpret_cast<void*>(0x41), st);  // a step's context may be foreign: not read
  ASSERT_NE(step, nullptr);
  prof_->recordEventState(step, ncclProfilerProxyStepSendWait, nullptr);
  prof_->stopEvent(step);
  prof_->stopEvent(own);
  // Another process's op: its context and parent are wild pointers that must not be read.
  op.proxyOp.pid = getpid() + 1;
  op.parentObj = reinterpret_cast<void*>(0x20);
  EXPECT_EQ(start(reinterpret_cast<void*>(0x11), op), nullptr);
  ASSERT_EQ(prof_->finalize(ctx), ncclSuccess);
  unsetenv(settingName(&Settings::netPaths));
  EXPECT_EQ(fake()->start[bit(ncclProfileProxyOp)].load(), 1u);
  EXPECT_EQ(fake()->start[bit(ncclProfileProxyStep)].load(), 1u);
  EXPECT_EQ(fake()->record[bit(ncclProfileProxyStep)].load(), 1u);
  EXPECT_EQ(fake()->parents.load(), 1u);
  EXPECT_EQ(fake()->badParents.load() + fake()->badContexts.load() + fake()->badHandles.load(), 0u);
}

TEST_P(ProfilerChain, TwoThreadsOnOneCommAreClean) {
  setenv(chainVar(), WW_CHAIN_FAKE, 1);
  fake()->maskToSet = ncclProfileGroup | ncclProfileColl | ncclProfileKernelCh | ncclProfileProxyCtrl;
  int mask = 0;
  void* ctx = init(0x5d, &mask);
  constexpr int kPerThread = 2000;
  // NCCL's launch thread (Groups, Colls, KernelChs here) beside its proxy thread (ProxyCtrl).
  std::thread launch([&] {
    for (int i = 0; i < kPerThread; ++i) collective(ctx, i, 1'000'000 * (i + 1), 2);
  });
  std::thread proxy([&] {
    ncclProfilerEventDescr_v6_t pc{};
    pc.type = ncclProfileProxyCtrl;
    for (int i = 0; i < kPerThread; ++i) {
      void* h = start(ctx, pc);
      prof_->recordEventState(h, ncclProfilerProxyCtrlActive, nullptr);
      prof_->stopEvent(h);
    }
  });
  launch.join();
  proxy.join();
  ASSERT_EQ(prof_->finalize(ctx), ncclSuccess);
  const ChainFake& f = *fake();
  EXPECT_EQ(f.start[bit(ncclProfileColl)].load(), kPerThread);
  EXPECT_EQ(f.stop[bit(ncclProfileKernelCh)].load(), 2u * kPerThread);
  EXPECT_EQ(f.stop[bit(ncclProfileProxyCtrl)].load(), kPerThread);
  EXPECT_EQ(f.badParents.load() + f.badHandles.load() + f.badContexts.load(), 0u);
  EXPECT_EQ(f.parents.load(), 3u * kPerThread);
  EXPECT_EQ(warningsWith(""), 0u);
}

INSTANTIATE_TEST_SUITE_P(EveryExportedVersion, ProfilerChain, ::testing::Values(6, 5, 4),
                         [](const auto& param) { return "v" + std::to_string(param.param); });

}  // namespace
}  // namespace wirewise::testing
