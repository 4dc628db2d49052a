// Profiler shims and lifecycle: v5 pass-through, NCCL's v4 conversion, unsupported old versions, init failure.
#include <dlfcn.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include "sim/loader/nccl_loader.h"
#include "tests/sim/loader/loader_test_util.h"

namespace wirewise::loader {
namespace {

using testing::isLoaded;
using testing::testLogger;

class FakeProfiler {
 public:
  explicit FakeProfiler(const char* path) : handle_(dlopen(path, RTLD_NOW | RTLD_LOCAL)) {
    if (handle_ == nullptr) return;
    rec_ = testing::profilerRecord(handle_);
    if (rec_ != nullptr) *rec_ = FakeProfilerRecord{};
    profiler_ = Profiler::load(handle_, &why_);
  }
  ~FakeProfiler() {
    profiler_.reset();
    if (handle_ != nullptr) dlclose(handle_);
  }
  const Profiler* p() const { return profiler_.get(); }
  FakeProfilerRecord* rec() const { return rec_; }
  const std::string& why() const { return why_; }

 private:
  void* handle_;
  FakeProfilerRecord* rec_ = nullptr;
  std::unique_ptr<Profiler> profiler_;
  std::string why_;
};

int groupToken, apiToken, parentToken;

ncclProfilerEventDescr_v5_t collDescr() {
  ncclProfilerEventDescr_v5_t d{};
  d.type = ncclProfileColl;
  d.parentObj = &apiToken;
  d.rank = 3;
  d.coll.seqNumber = 17;
  d.coll.func = "AllReduce";
  d.coll.count = 1024;
  d.coll.root = 0;
  d.coll.datatype = "ncclFloat32";
  d.coll.nChannels = 8;
  d.coll.nWarps = 16;
  d.coll.algo = "RING";
  d.coll.proto = "SIMPLE";
  d.coll.parentGroup = &groupToken;
  return d;
}

TEST(ProfilerLoad, PrefersV5ThenV4) {
  FakeProfiler both(WW_FAKE_PROF_V54);
  ASSERT_NE(both.p(), nullptr) << both.why();
  EXPECT_EQ(both.p()->version(), 5);
  FakeProfiler v4(WW_FAKE_PROF_V4);
  ASSERT_NE(v4.p(), nullptr);
  EXPECT_EQ(v4.p()->version(), 4);
  EXPECT_STREQ(v4.p()->name(), "fake-prof-v4");
}

TEST(ProfilerLoad, OlderVersionsAreReportedAsUnsupportedByTheHarness) {
  FakeProfiler v3(WW_FAKE_PROF_V3);
  EXPECT_EQ(v3.p(), nullptr);
  EXPECT_NE(v3.why().find("ncclProfiler_v3"), std::string::npos) << v3.why();
  FakeProfiler none(WW_FAKE_EMPTY);
  EXPECT_EQ(none.p(), nullptr);
  EXPECT_NE(none.why().find("unsupported"), std::string::npos);
}

TEST(ProfilerV5, EverythingPassesThroughUnchanged) {
  FakeProfiler f(WW_FAKE_PROF_V5);
  ASSERT_NE(f.p(), nullptr);
  int mask = 0;
  void* ctx = nullptr;
  f.rec()->maskToSet = ncclProfileColl | ncclProfileKernelCh;
  ASSERT_EQ(f.p()->init(&ctx, 0x77, &mask, "comm-a", 2, 16, 5, testLogger), ncclSuccess);
  const FakeProfilerRecord& r = *f.rec();
  EXPECT_EQ(r.commId, 0x77u);
  EXPECT_EQ(r.mask, &mask);
  EXPECT_STREQ(r.commName, "comm-a");
  EXPECT_EQ(r.nNodes, 2);
  EXPECT_EQ(r.nRanks, 16);
  EXPECT_EQ(r.rank, 5);
  EXPECT_EQ(r.logFn, reinterpret_cast<const void*>(&testLogger));
  EXPECT_EQ(mask, ncclProfileColl | ncclProfileKernelCh);
  EXPECT_EQ(ctx, r.ctxGiven);

  ncclProfilerEventDescr_v5_t d{};
  d.type = ncclProfileKernelLaunch;  // a v5-only type reaches a v5 plugin
  d.parentObj = &parentToken;
  void* handle = &parentToken;
  ASSERT_EQ(f.p()->startEvent(ctx, &handle, &d), ncclSuccess);
  EXPECT_EQ(r.startCalls, 1);
  EXPECT_EQ(r.lastV5.type, static_cast<uint64_t>(ncclProfileKernelLaunch));
  EXPECT_EQ(r.lastV5.parentObj, &parentToken);
  EXPECT_EQ(handle, r.handleGiven);

  ncclProfilerEventStateArgs_v5_t args{};
  args.kernelCh.pTimer = 123456;
  ASSERT_EQ(f.p()->recordEventState(handle, ncclProfilerGroupEndApiStart, &args), ncclSuccess);
  EXPECT_EQ(r.lastState, ncclProfilerGroupEndApiStart);
  EXPECT_EQ(r.stateHandle, handle);
  ASSERT_EQ(f.p()->stopEvent(handle), ncclSuccess);
  EXPECT_EQ(r.stopHandle, handle);
  ASSERT_EQ(f.p()->finalize(ctx), ncclSuccess);
  EXPECT_EQ(r.finalizeCtx, ctx);
}

TEST(ProfilerV4, InitArgumentOrderPutsCommHashAfterName) {
  FakeProfiler f(WW_FAKE_PROF_V4);
  ASSERT_NE(f.p(), nullptr);
  int mask = 0;
  void* ctx = nullptr;
  ASSERT_EQ(f.p()->init(&ctx, 0xfeedULL, &mask, "comm-b", 4, 32, 7, testLogger), ncclSuccess);
  const FakeProfilerRecord& r = *f.rec();
  EXPECT_EQ(r.lastEntryVersion, 4);
  EXPECT_EQ(r.ctxArg, &ctx);
  EXPECT_EQ(r.mask, &mask);
  EXPECT_STREQ(r.commName, "comm-b");
  EXPECT_EQ(r.commId, 0xfeedULL);
  EXPECT_EQ(r.nNodes, 4);
  EXPECT_EQ(r.nRanks, 32);
  EXPECT_EQ(r.rank, 7);
  EXPECT_EQ(r.logFn, reinterpret_cast<const void*>(&testLogger));
}

TEST(ProfilerV4, CollDescriptorIsConvertedAndReparentedToTheGroup) {
  FakeProfiler f(WW_FAKE_PROF_V4);
  ASSERT_NE(f.p(), nullptr);
  ncclProfilerEventDescr_v5_t d = collDescr();
  void* handle = nullptr;
  ASSERT_EQ(f.p()->startEvent(nullptr, &handle, &d), ncclSuccess);
  const ncclProfilerEventDescr_v4_t& v4 = f.rec()->lastV4;
  EXPECT_EQ(v4.type, ncclProfileColl);
  EXPECT_EQ(v4.parentObj, &groupToken) << "v4 has no CollApi parent: NCCL substitutes coll.parentGroup";
  EXPECT_EQ(v4.rank, 3);
  EXPECT_EQ(v4.coll.seqNumber, 17u);
  EXPECT_STREQ(v4.coll.func, "AllReduce");
  EXPECT_EQ(v4.coll.count, 1024u);
  EXPECT_STREQ(v4.coll.datatype, "ncclFloat32");
  EXPECT_EQ(v4.coll.nChannels, 8);
  EXPECT_EQ(v4.coll.nWarps, 16);
  EXPECT_STREQ(v4.coll.algo, "RING");
  EXPECT_STREQ(v4.coll.proto, "SIMPLE");
  EXPECT_EQ(handle, f.rec()->handleGiven);
}

TEST(ProfilerV4, P2pIsReparentedAndOtherTypesKeepTheirParent) {
  FakeProfiler f(WW_FAKE_PROF_V4);
  ASSERT_NE(f.p(), nullptr);
  ncclProfilerEventDescr_v5_t d{};
  d.type = ncclProfileP2p;
  d.parentObj = &apiToken;
  d.p2p.func = "Send";
  d.p2p.peer = 9;
  d.p2p.count = 64;
  d.p2p.nChannels = 4;
  d.p2p.parentGroup = &groupToken;
  void* handle = nullptr;
  ASSERT_EQ(f.p()->startEvent(nullptr, &handle, &d), ncclSuccess);
  EXPECT_EQ(f.rec()->lastV4.parentObj, &groupToken);
  EXPECT_EQ(f.rec()->lastV4.p2p.peer, 9);
  EXPECT_EQ(f.rec()->lastV4.p2p.count, 64u);
  EXPECT_EQ(f.rec()->lastV4.p2p.nChannels, 0) << "NCCL's shim does not carry p2p.nChannels";

  ncclProfilerEventDescr_v5_t op{};
  op.type = ncclProfileProxyOp;
  op.parentObj = &parentToken;
  op.proxyOp.pid = getpid();
  op.proxyOp.channelId = 5;
  op.proxyOp.peer = 2;
  op.proxyOp.nSteps = 11;
  op.proxyOp.chunkSize = 4096;
  op.proxyOp.isSend = 1;
  ASSERT_EQ(f.p()->startEvent(nullptr, &handle, &op), ncclSuccess);
  const ncclProfilerEventDescr_v4_t& v4 = f.rec()->lastV4;
  EXPECT_EQ(v4.type, ncclProfileProxyOp);
  EXPECT_EQ(v4.parentObj, &parentToken);
  EXPECT_EQ(v4.proxyOp.pid, getpid());
  EXPECT_EQ(v4.proxyOp.channelId, 5);
  EXPECT_EQ(v4.proxyOp.nSteps, 11);
  EXPECT_EQ(v4.proxyOp.chunkSize, 4096);
  EXPECT_EQ(v4.proxyOp.isSend, 1);

  ncclProfilerEventDescr_v5_t ch{};
  ch.type = ncclProfileKernelCh;
  ch.kernelCh.channelId = 3;
  ch.kernelCh.pTimer = 999;
  ASSERT_EQ(f.p()->startEvent(nullptr, &handle, &ch), ncclSuccess);
  EXPECT_EQ(f.rec()->lastV4.kernelCh.pTimer, 999u);
  EXPECT_EQ(f.rec()->startCalls, 3);
}

TEST(ProfilerV4, V5OnlyEventTypesAreDroppedWithANullHandle) {
  FakeProfiler f(WW_FAKE_PROF_V4);
  ASSERT_NE(f.p(), nullptr);
  for (uint64_t type : {uint64_t{ncclProfileGroupApi}, uint64_t{ncclProfileCollApi}, uint64_t{ncclProfileP2pApi},
                        uint64_t{ncclProfileKernelLaunch}, uint64_t{1} << 40}) {
    ncclProfilerEventDescr_v5_t d{};
    d.type = type;
    void* handle = &parentToken;
    EXPECT_EQ(f.p()->startEvent(nullptr, &handle, &d), ncclSuccess);
    EXPECT_EQ(handle, nullptr) << type;
  }
  EXPECT_EQ(f.rec()->startCalls, 0);
}

TEST(ProfilerV4, StatesAreFilteredAndTheirArgumentsCopied) {
  FakeProfiler f(WW_FAKE_PROF_V4);
  ASSERT_NE(f.p(), nullptr);
  ncclProfilerEventStateArgs_v5_t args{};
  args.proxyStep.transSize = 777;
  ASSERT_EQ(f.p()->recordEventState(&parentToken, ncclProfilerProxyStepRecvWait, &args), ncclSuccess);
  EXPECT_EQ(f.rec()->lastState, ncclProfilerProxyStepRecvWait);
  EXPECT_EQ(f.rec()->lastArgs.proxyStep.transSize, 777u);
  EXPECT_EQ(f.rec()->stateHandle, &parentToken);

  args = {};
  args.proxyCtrl.appendedProxyOps = 6;
  ASSERT_EQ(f.p()->recordEventState(&parentToken, ncclProfilerProxyCtrlAppendEnd, &args), ncclSuccess);
  EXPECT_EQ(f.rec()->lastArgs.proxyCtrl.appendedProxyOps, 6);
  const int forwarded = f.rec()->stateCalls;
  EXPECT_EQ(forwarded, 2);

  for (ncclProfilerEventState_t s : {ncclProfilerGroupStartApiStop, ncclProfilerGroupEndApiStart,
                                     ncclProfilerProxyOpSendPosted, ncclProfilerProxyOpRecvDone}) {
    ASSERT_EQ(f.p()->recordEventState(&parentToken, s, &args), ncclSuccess);
  }
  EXPECT_EQ(f.rec()->stateCalls, forwarded) << "v5-only and deprecated states never reach a v4 plugin";
}

TEST(ProfilerLibrary, InitFailureContinuesWithoutFinalize) {
  ProfilerLibrary lib(std::string(WW_FAKE_PROF_LIFE), std::nullopt);
  ProfilerComm good, bad;
  lib.initComm(&good, 1, "good", 1, 8, 0, testLogger);
  ASSERT_NE(lib.profiler(), nullptr) << lib.why();
  FakeProfilerRecord* rec = testing::profilerRecord(lib.lastOpen().handle);
  ASSERT_NE(rec, nullptr);
  EXPECT_EQ(rec->mask, lib.eventMask()) << "every comm gets the one process-wide mask";
  rec->initResult = ncclInternalError;
  lib.initComm(&bad, 2, "bad", 1, 8, 0, testLogger);
  EXPECT_EQ(bad.initResult, ncclInternalError);
  EXPECT_EQ(bad.context, nullptr);
  EXPECT_NE(lib.profiler(), nullptr) << "2.28.9 keeps the plugin after a failed init";
  EXPECT_EQ(lib.refCount(), 2);
  lib.finalizeComm(&bad);
  EXPECT_EQ(rec->finalizeCalls, 0) << "no finalize for a null context";
  EXPECT_TRUE(isLoaded(WW_FAKE_PROF_LIFE));
  // Hold our own reference so the record survives the library's dlclose long enough to be read.
  void* keep = dlopen(WW_FAKE_PROF_LIFE, RTLD_NOW | RTLD_NOLOAD);
  ASSERT_NE(keep, nullptr);
  lib.finalizeComm(&good);
  EXPECT_EQ(rec->finalizeCalls, 1);
  EXPECT_EQ(rec->finalizeCtx, good.context);
  EXPECT_EQ(lib.refCount(), 0);
  EXPECT_FALSE(lib.libraryOpen());
  dlclose(keep);
  EXPECT_FALSE(isLoaded(WW_FAKE_PROF_LIFE)) << "the profiler refcount is exact: closed at zero";
}

TEST(ProfilerLibrary, FailedLoadIsStickyAndRefCountGoesNegative) {
  ProfilerLibrary lib(std::string("missing-profiler"), std::nullopt);
  ProfilerComm comm;
  lib.initComm(&comm, 1, "c", 1, 2, 0, testLogger);
  EXPECT_EQ(lib.profiler(), nullptr);
  lib.finalizeComm(&comm);
  EXPECT_EQ(lib.refCount(), -1);
  lib.initComm(&comm, 1, "c", 1, 2, 0, testLogger);
  EXPECT_EQ(lib.profiler(), nullptr);
  EXPECT_EQ(lib.lastOpen().tried.size(), 2u) << "not retried";
}

TEST(ProfilerLibrary, FallsBackToTheNetLibrarysProfiler) {
  ProfilerLibrary lib(std::nullopt, std::string(WW_FAKE_NET));
  ProfilerComm comm;
  lib.initComm(&comm, 5, "n", 1, 2, 1, testLogger);
  ASSERT_NE(lib.profiler(), nullptr) << lib.why();
  EXPECT_TRUE(lib.lastOpen().viaNetFallback);
  EXPECT_EQ(lib.profiler()->version(), 4);
  lib.finalizeComm(&comm);
  EXPECT_FALSE(lib.libraryOpen());
}

}  // namespace
}  // namespace wirewise::loader
