// Drives profiler events N times on the main thread for callgrind, through an ncclProfiler_v5_t as NCCL's
// launch thread does: instructions per iteration = (Ir(N2) - Ir(N1)) / (N2 - N1), so dlopen, init and the
// first pool laps cancel out. Each iteration is 5 callbacks: Coll start, Coll stop, then one KernelCh child
// (start, KernelChStop record, stop). "pair": the Coll has 1 channel. "missing": it has 8 channels but only
// one child arrives, as some NCCL releases do. Profiler "nothing" is the same loop through do-nothing
// callbacks, so call overhead and descriptor setup can be subtracted.
//   ww_callgrind_profiler_driver LIBRARY wirewise|nothing pair|missing N
#include <dlfcn.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "bench/profiler/coll_descr.h"
#include "common/nccl/profiler.h"
#include "common/settings.h"

namespace {

char gDummy;  // a non-null handle, as a real profiler returns

__attribute__((noinline)) ncclResult_t nothingInit(void** context, uint64_t, int*, const char*, int, int, int,
                                                   ncclDebugLogger_t) {
  *context = &gDummy;
  return ncclSuccess;
}
__attribute__((noinline)) ncclResult_t nothingStart(void*, void** eHandle, ncclProfilerEventDescr_v5_t*) {
  *eHandle = &gDummy;
  return ncclSuccess;
}
__attribute__((noinline)) ncclResult_t nothingStop(void*) { return ncclSuccess; }
__attribute__((noinline)) ncclResult_t nothingRecord(void*, ncclProfilerEventState_v5_t,
                                                     ncclProfilerEventStateArgs_v5_t*) {
  return ncclSuccess;
}
__attribute__((noinline)) ncclResult_t nothingFinalize(void*) { return ncclSuccess; }

const ncclProfiler_v5_t kNothing = {"nothing", nothingInit, nothingStart, nothingStop, nothingRecord,
                                    nothingFinalize};

// NCCL always passes its logger; this one stays silent.
void quietLogger(ncclDebugLogLevel, unsigned long, const char*, int, const char*, ...) {}

__attribute__((noinline)) long run(const ncclProfiler_v5_t* prof, void* ctx, uint8_t nChannels, long n) {
  // Hide which table this is, so the do-nothing calls stay indirect calls like the plugin's.
  asm volatile("" : "+r"(prof));
  ncclProfilerEventDescr_v5_t c = wirewise::bench::collDescr(nChannels);
  ncclProfilerEventDescr_v5_t k{};
  k.type = ncclProfileKernelCh;
  ncclProfilerEventStateArgs_v5_t a{};
  uint64_t t = 1'000'000;
  long sink = 0;
  for (long i = 0; i < n; ++i) {
    void *coll = nullptr, *ch = nullptr;
    c.coll.seqNumber++;  // fresh per collective, as NCCL numbers them
    prof->startEvent(ctx, &coll, &c);
    prof->stopEvent(coll);  // NCCL stops the Coll at launch, before its channels report
    k.parentObj = coll;
    k.kernelCh.channelId = 0;
    k.kernelCh.pTimer = t;
    prof->startEvent(ctx, &ch, &k);
    a.kernelCh.pTimer = t += 5000;
    prof->recordEventState(ch, ncclProfilerKernelChStop, &a);
    prof->stopEvent(ch);
    t += 1000;
    sink += (coll != nullptr) + (ch != nullptr);
    asm volatile("" : : "r"(&c), "r"(&k), "r"(&a) : "memory");
  }
  return sink;
}

}  // namespace

int main(int argc, char** argv) {
  const bool ok = argc == 5 && (!std::strcmp(argv[2], "wirewise") || !std::strcmp(argv[2], "nothing")) &&
                  (!std::strcmp(argv[3], "pair") || !std::strcmp(argv[3], "missing"));
  if (!ok) {
    std::fprintf(stderr, "usage: %s LIBRARY wirewise|nothing pair|missing N\n", argv[0]);
    return 2;
  }
  const long n = std::strtol(argv[4], nullptr, 10);
  const uint8_t nChannels = std::strcmp(argv[3], "pair") == 0 ? 1 : 8;
  const ncclProfiler_v5_t* prof = &kNothing;
  if (std::strcmp(argv[2], "wirewise") == 0) {
    // As profiler_bench: no log file. Sync off: a 16-rank comm would otherwise look for a coordinator,
    // whose connection attempts are no part of the per-event cost being counted.
    setenv(wirewise::settingName(&wirewise::Settings::logPath), "none", 1);
    setenv(wirewise::settingName(&wirewise::Settings::sync), "off", 1);
    void* lib = dlopen(argv[1], RTLD_NOW | RTLD_LOCAL);
    if (lib == nullptr) {
      std::fprintf(stderr, "cannot open %s: %s\n", argv[1], dlerror());
      return 1;
    }
    prof = static_cast<const ncclProfiler_v5_t*>(dlsym(lib, "ncclProfiler_v5"));
    if (prof == nullptr) {
      std::fprintf(stderr, "no ncclProfiler_v5 in %s\n", argv[1]);
      return 1;
    }
  }
  void* ctx = nullptr;
  int mask = 0;
  if (prof->init(&ctx, 0xbe, &mask, "callgrind", 2, 16, 0, quietLogger) != ncclSuccess || ctx == nullptr) {
    std::fprintf(stderr, "profiler init failed\n");
    return 1;
  }
  const long sink = run(prof, ctx, nChannels, n);
  prof->finalize(ctx);
  // Handles handed back, of 2 per iteration: a full pool may hand back null, which NCCL accepts.
  std::printf("%ld of %ld handles\n", sink, 2 * n);
  return 0;
}
