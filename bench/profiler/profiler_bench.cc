// Profiler callbacks on the shipped library, called through the ncclProfiler_v5_t function pointers as
// NCCL's proxy and launch threads do. Each benchmark runs one event lifecycle per iteration and reports
// ns_per_event (the lifecycle's time over its callbacks) and allocs_per_event (heap allocations made by
// the calling thread; the runtime's drain thread is not counted). Issue #5 target: <= 100 ns, 0 allocs.
// The *_Chained cases run the same lifecycles with WIREWISE_PROFILER_CHAIN naming a do-nothing second
// plugin that asks for the same events (issue #20: chaining adds <= 30 ns per event).
#include <benchmark/benchmark.h>
#include <dlfcn.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>

#include "bench/alloc_counter.h"
#include "common/settings.h"
#include "bench/profiler/coll_descr.h"
#include "common/nccl/profiler.h"

namespace wirewise::bench {
namespace {

const ncclProfiler_v5_t* gProf = nullptr;
void* gCtx = nullptr;
bool gChained = false;
pid_t gPid = 0;  // getpid() is a system call: NCCL too fills proxyOp.pid from a cached value

// The comm the next benchmark runs on, chained or not. Settings are read when the runtime starts, which it
// does again once its last comm is gone: the comm is finalized and initialised anew with the setting changed
// (outside the timed loop; the chained cases are registered last, so this happens once).
bool useComm(bool chained) {
  if (gCtx != nullptr && gChained == chained) return true;
  if (gCtx != nullptr) gProf->finalize(gCtx);
  gCtx = nullptr;
  const char* var = wirewise::settingName(&wirewise::Settings::profilerChain);
  if (chained)
    setenv(var, WW_CHAIN_NOTHING_SO, 1);
  else
    unsetenv(var);
  int mask = 0;
  gChained = chained;
  return gProf->init(&gCtx, 0xbe, &mask, "bench", 2, 16, 0, nullptr) == ncclSuccess && gCtx != nullptr;
}

void report(benchmark::State& state, int eventsPerIteration, uint64_t allocs) {
  double events = static_cast<double>(state.iterations()) * eventsPerIteration;
  state.counters["ns_per_event"] =
      benchmark::Counter(events, benchmark::Counter::kIsRate | benchmark::Counter::kInvert);
  state.counters["allocs_per_event"] = benchmark::Counter(static_cast<double>(allocs) / events);
}

void* startOp(void* parent, int peer, bool isSend) {
  ncclProfilerEventDescr_v5_t d{};
  d.type = ncclProfileProxyOp;
  d.parentObj = parent;
  d.proxyOp.pid = gPid;
  d.proxyOp.channelId = 3;
  d.proxyOp.peer = peer;
  d.proxyOp.nSteps = 8;
  d.proxyOp.chunkSize = 1 << 19;
  d.proxyOp.isSend = isSend;
  void* h = nullptr;
  gProf->startEvent(gCtx, &h, &d);
  return h;
}

// Coll start and stop, then its one channel: KernelCh start, KernelChStop record, stop (5 callbacks).
template <bool kChained>
void BM_CollWithKernelCh(benchmark::State& state) {
  if (!useComm(kChained)) return state.SkipWithError("no context");
  ncclProfilerEventDescr_v5_t c = collDescr(1);
  ncclProfilerEventDescr_v5_t k{};
  k.type = ncclProfileKernelCh;
  ncclProfilerEventStateArgs_v5_t a{};
  uint64_t t = 1'000'000;
  startCountingAllocs();
  for (auto _ : state) {
    void *coll = nullptr, *ch = nullptr;
    c.coll.seqNumber++;
    gProf->startEvent(gCtx, &coll, &c);
    gProf->stopEvent(coll);
    k.parentObj = coll;
    k.kernelCh.pTimer = t;
    gProf->startEvent(gCtx, &ch, &k);
    a.kernelCh.pTimer = t += 5000;
    gProf->recordEventState(ch, ncclProfilerKernelChStop, &a);
    gProf->stopEvent(ch);
    benchmark::DoNotOptimize(ch);
  }
  uint64_t allocs = stopCountingAllocs();
  if (gCtx == nullptr) state.SkipWithError("no context");
  report(state, 5, allocs);
}

// ProxyOp start and stop under a Coll (2 callbacks).
template <bool kChained>
void BM_ProxyOp(benchmark::State& state) {
  if (!useComm(kChained)) return state.SkipWithError("no context");
  ncclProfilerEventDescr_v5_t c = collDescr(1);
  void* coll = nullptr;
  gProf->startEvent(gCtx, &coll, &c);
  startCountingAllocs();
  for (auto _ : state) {
    void* op = startOp(coll, 5, true);
    gProf->stopEvent(op);
    benchmark::DoNotOptimize(op);
  }
  uint64_t allocs = stopCountingAllocs();
  if (coll == nullptr) state.SkipWithError("no Coll handle");
  report(state, 2, allocs);
  gProf->stopEvent(coll);
}

// One network transfer: ProxyStep start, three state records, stop (5 callbacks), under an open ProxyOp.
void proxySteps(benchmark::State& state, bool isSend) {
  if (!useComm(false)) return state.SkipWithError("no context");
  void* op = startOp(nullptr, 6, isSend);
  if (op == nullptr) {
    state.SkipWithError("no ProxyOp handle");
    return;
  }
  const ncclProfilerEventState_t states[2][3] = {
      {ncclProfilerProxyStepRecvWait, ncclProfilerProxyStepRecvFlushWait, ncclProfilerProxyStepRecvGPUWait},
      {ncclProfilerProxyStepSendGPUWait, ncclProfilerProxyStepSendPeerWait_v4, ncclProfilerProxyStepSendWait}};
  ncclProfilerEventDescr_v5_t d{};
  d.type = ncclProfileProxyStep;
  d.parentObj = op;
  ncclProfilerEventStateArgs_v5_t a{};
  a.proxyStep.transSize = 1 << 19;
  startCountingAllocs();
  for (auto _ : state) {
    void* s = nullptr;
    d.proxyStep.step++;
    gProf->startEvent(gCtx, &s, &d);
    for (ncclProfilerEventState_t st : states[isSend]) gProf->recordEventState(s, st, &a);
    gProf->stopEvent(s);
    benchmark::DoNotOptimize(s);
  }
  report(state, 5, stopCountingAllocs());
  gProf->stopEvent(op);
}
void BM_ProxyStepSend(benchmark::State& state) { proxySteps(state, true); }
void BM_ProxyStepRecv(benchmark::State& state) { proxySteps(state, false); }

// Single callbacks. A Coll of 0 channels completes at its start, without a slot or a handle; NCCL would
// then call no stop, the stop of null here costs its null check (start + stop, 2 callbacks).
void BM_CollStartStop(benchmark::State& state) {
  if (!useComm(false)) return state.SkipWithError("no context");
  ncclProfilerEventDescr_v5_t c = collDescr(0);
  startCountingAllocs();
  for (auto _ : state) {
    void* coll = nullptr;
    gProf->startEvent(gCtx, &coll, &c);
    gProf->stopEvent(coll);
    benchmark::DoNotOptimize(coll);
  }
  report(state, 2, stopCountingAllocs());
}

// ProxyStep start and stop without states (2 callbacks).
void BM_ProxyStepStartStop(benchmark::State& state) {
  if (!useComm(false)) return state.SkipWithError("no context");
  void* op = startOp(nullptr, 7, true);
  ncclProfilerEventDescr_v5_t d{};
  d.type = ncclProfileProxyStep;
  d.parentObj = op;
  startCountingAllocs();
  for (auto _ : state) {
    void* s = nullptr;
    gProf->startEvent(gCtx, &s, &d);
    gProf->stopEvent(s);
    benchmark::DoNotOptimize(s);
  }
  report(state, 2, stopCountingAllocs());
  if (op == nullptr) state.SkipWithError("no ProxyOp handle");
  gProf->stopEvent(op);
}

// recordEventState alone on one open step, alternating RecvWait and RecvFlushWait (each a state change).
template <bool kChained>
void BM_ProxyStepRecord(benchmark::State& state) {
  if (!useComm(kChained)) return state.SkipWithError("no context");
  void* op = startOp(nullptr, 8, false);
  ncclProfilerEventDescr_v5_t d{};
  d.type = ncclProfileProxyStep;
  d.parentObj = op;
  void* s = nullptr;
  gProf->startEvent(gCtx, &s, &d);
  ncclProfilerEventStateArgs_v5_t a{};
  a.proxyStep.transSize = 1 << 19;
  startCountingAllocs();
  for (auto _ : state) {
    gProf->recordEventState(s, ncclProfilerProxyStepRecvWait, &a);
    gProf->recordEventState(s, ncclProfilerProxyStepRecvFlushWait, &a);
  }
  report(state, 2, stopCountingAllocs());
  if (s == nullptr) state.SkipWithError("no ProxyStep handle");
  gProf->stopEvent(s);
  gProf->stopEvent(op);
}

// The counter must see what it claims to count.
void BM_AllocSanityNew(benchmark::State& state) {
  startCountingAllocs();
  for (auto _ : state) {
    int* p = new int(1);
    benchmark::DoNotOptimize(p);
    delete p;
  }
  report(state, 1, stopCountingAllocs());
}

BENCHMARK(BM_CollStartStop);
BENCHMARK(BM_CollWithKernelCh<false>)->Name("BM_CollWithKernelCh");
BENCHMARK(BM_ProxyOp<false>)->Name("BM_ProxyOp");
BENCHMARK(BM_ProxyStepSend);
BENCHMARK(BM_ProxyStepRecv);
BENCHMARK(BM_ProxyStepStartStop);
BENCHMARK(BM_ProxyStepRecord<false>)->Name("BM_ProxyStepRecord");
BENCHMARK(BM_AllocSanityNew);
// Last: the comm is made chained once, for these alone.
BENCHMARK(BM_CollWithKernelCh<true>)->Name("BM_CollWithKernelCh_Chained");
BENCHMARK(BM_ProxyOp<true>)->Name("BM_ProxyOp_Chained");
BENCHMARK(BM_ProxyStepRecord<true>)->Name("BM_ProxyStepRecord_Chained");

}  // namespace
}  // namespace wirewise::bench

int main(int argc, char** argv) {
  setenv(wirewise::settingName(&wirewise::Settings::logPath), "none", 1);
  setenv(wirewise::settingName(&wirewise::Settings::netPaths), "on", 1);
  void* lib = dlopen(WW_PLUGIN_SO, RTLD_NOW | RTLD_LOCAL);
  if (lib == nullptr) {
    std::fprintf(stderr, "cannot open %s: %s\n", WW_PLUGIN_SO, dlerror());
    return 1;
  }
  using wirewise::bench::gCtx;
  using wirewise::bench::gProf;
  wirewise::bench::gPid = getpid();
  gProf = static_cast<const ncclProfiler_v5_t*>(dlsym(lib, "ncclProfiler_v5"));
  if (gProf == nullptr || !wirewise::bench::useComm(false)) {
    std::fprintf(stderr, "profiler init failed\n");
    return 1;
  }
  benchmark::Initialize(&argc, argv);
  benchmark::RunSpecifiedBenchmarks();
  if (gCtx != nullptr) gProf->finalize(gCtx);
  benchmark::Shutdown();
  return 0;
}
