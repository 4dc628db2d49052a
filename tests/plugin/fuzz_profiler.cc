// libFuzzer target for the profiler's event descriptors (built only with clang; not a ctest). NCCL's calls
// with arbitrary descriptors, states and handles, the way NCCL makes them: init, startEvent,
// recordEventState, stopEvent and finalize through the exported ncclProfiler_v4/v5/v6 structs, reached as NCCL
// reaches them (dlsym, and sim/loader's copies of NCCL's v4/v5 version shims). The shims, the profiler core and
// both sinks are compiled into this binary again, instrumented; the runtime comes from ww_runtime.
//
// What stays valid, as NCCL keeps it valid: every string field of the type's descriptor member points at a
// nul-terminated string that lives for the process (NCCL's are static): one of NCCL's names, an odd one, or
// bytes from the input; parentObj and parentGroup are null or a handle this plugin returned (live, stopped
// or recycled: late and duplicate events must be ignored) of a communicator not yet finalized; stopEvent and
// recordEventState get such a handle or null. Under PXN a ProxyOp of another process comes with that
// process's context and parent pointers, and ProxyStep/NetPlugin events may come with its context: those
// point at poisoned memory here, so that reading them is an ASan report. Everything else is raw input bytes
// (NCCL leaves unused union members as stack garbage). Besides single calls, an input can ask for a burst of
// well-formed collectives (a few bytes for up to 48), so that short inputs fill the pools and leave events
// stale. Beyond "no crash, no sanitizer report": every call returns ncclSuccess, the activation mask is what
// the core consumes, and only the four tracked event types (Coll, KernelCh, ProxyOp, ProxyStep) ever get a
// handle.
#include <dlfcn.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "common/nccl/profiler.h"
#include "sim/loader/nccl_loader.h"
#include "tests/common/fuzz_input.h"

#if defined(__has_feature)
#if __has_feature(address_sanitizer)
#include <sanitizer/asan_interface.h>
#define WW_POISON(p, n) ASAN_POISON_MEMORY_REGION(p, n)
#endif
#endif
#ifndef WW_POISON
#define WW_POISON(p, n) ((void)(p), (void)(n))
#endif

namespace {

using wirewise::fuzz::Input;
using wirewise::loader::Profiler;

void check(bool ok) {
  if (!ok) __builtin_trap();
}

// NCCL's logger: formats what it is given, so a bad format or argument is a sanitizer report.
__attribute__((format(printf, 5, 6))) void logger(ncclDebugLogLevel, unsigned long, const char*, int, const char* fmt,
                                                  ...) {
  char buf[1024];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(buf, sizeof buf, fmt, ap);
  va_end(ap);
}

// NCCL's names and odd ones. Static, like NCCL's.
const char* const kNames[] = {
    "AllReduce", "AllGather", "ReduceScatter", "Broadcast", "Reduce", "Send", "Recv", "SendRecv", "AllToAll",
    "ncclInt8", "ncclUint8", "ncclInt32", "ncclUint32", "ncclInt64", "ncclUint64", "ncclFloat16", "ncclFloat32",
    "ncclFloat64", "ncclBfloat16", "ncclFloat8e4m3", "ncclFloat8e5m2", "RING", "TREE", "COLLNET_DIRECT",
    "COLLNET_CHAIN", "NVLS", "NVLS_TREE", "PAT", "LL", "LL128", "SIMPLE", "MC", "UC", "", "allreduce", "Ring",
    "AllReduceX", "ncclFloat", "%s%n%x%p", "\xff\xfe\x01",
    ("AllReduceAllReduceAllReduceAllReduceAllReduceAllReduceAllReduceAllReduceAllReduceAllReduceAllReduce"
     "AllReduceAllReduceAllReduceAllReduceAllReduceAllReduceAllReduceAllReduceAllReduceAllReduceAllReduce")};
constexpr size_t kNumNames = sizeof kNames / sizeof kNames[0];

// Strings cut from inputs, kept for the life of the process (the plugin may keep NCCL's pointers).
std::set<std::string>* gInterned;

const char* pickString(Input& in) {
  uint8_t sel = in.byte();
  if (sel != 0xff || gInterned->size() >= 65536) return kNames[sel % kNumNames];
  std::string s;
  for (uint8_t c; s.size() < 32 && (c = in.byte()) != 0;) s.push_back(static_cast<char>(c));
  return gInterned->insert(std::move(s)).first->c_str();
}

// Another process's context and parent pointers under PXN: 64-byte aligned like our slots, and poisoned.
void* gForeign;

const Profiler* gProfilers[3];  // v4, v5, v6

// WW_FUZZ_TRACE=1 prints every call (to read what a crashing input does: ./plugin_fuzz_profiler crash-...).
bool gTrace = false;

struct Handle {
  void* h;
  int comm;
};

struct Comm {
  void* ctx = nullptr;
  bool open = false;
};

struct Run {
  const Profiler* prof;
  int mask = 0;  // NCCL's process-global activation mask
  int expectMask = 0;
  Comm comms[3];
  int nComms = 1;
  std::vector<Handle> handles;  // every non-null handle returned by a comm still open

  void* pickHandle(Input& in, int comm = -1) {
    uint8_t sel = in.byte();
    if (sel == 0 || handles.empty()) return nullptr;
    // comm >= 0: only that communicator's handles (Coll and KernelCh parents stay within their comm).
    size_t start = sel % handles.size();
    for (size_t i = 0; i < handles.size(); ++i) {
      const Handle& h = handles[(start + i) % handles.size()];
      if (comm < 0 || h.comm == comm) return h.h;
    }
    return nullptr;
  }

  void init(Input& in, int c) {
    const uint64_t commId = in.raw<uint64_t>();
    const int nNodes = in.byte();
    const int nRanks = static_cast<int>(in.raw<uint16_t>());
    const int rank = static_cast<int>(in.raw<uint16_t>()) - 1;
    const uint8_t nameSel = in.byte();
    const char* name = nameSel == 0 ? nullptr : kNames[nameSel % kNumNames];
    void* ctx = reinterpret_cast<void*>(uintptr_t{1});
    check(prof->init(&ctx, commId, &mask, name, nNodes, nRanks, rank, logger) == ncclSuccess);
    if (gTrace) fprintf(stderr, "init comm %d v%d: %p\n", c, prof->version(), ctx);
    check(ctx != nullptr);  // mode apply: every comm is measured
    check(mask == expectMask);
    comms[c].ctx = ctx;
    comms[c].open = true;
  }

  void finalize(int c) {
    if (!comms[c].open) return;
    check(prof->finalize(comms[c].ctx) == ncclSuccess);
    comms[c].open = false;
    std::erase_if(handles, [c](const Handle& h) { return h.comm == c; });
  }

  void start(Input& in) {
    const int c = in.byte() % nComms;
    if (!comms[c].open) return;
    const uint8_t typeSel = in.byte();
    const uint8_t ctxSel = in.byte();
    ncclProfilerEventDescr_v6_t d;
    std::memset(&d, 0, sizeof d);
    d.type = typeSel < 0xf0 ? uint64_t{1} << (typeSel % 15) : in.raw<uint64_t>();
    d.rank = static_cast<int>(in.raw<int32_t>());
    in.bytes(&d.coll, 64);  // the union's first 64 bytes (every field the core reads), then the fix-ups
    const bool kernelSide = d.type == ncclProfileColl || d.type == ncclProfileKernelCh;
    d.parentObj = pickHandle(in, kernelSide ? c : -1);
    void* ctx = comms[c].ctx;
    switch (d.type) {
      case ncclProfileColl:
        d.coll.func = pickString(in);
        d.coll.datatype = pickString(in);
        d.coll.algo = pickString(in);
        d.coll.proto = pickString(in);
        d.coll.parentGroup = pickHandle(in, c);  // v4's Coll parent (the loader's v4 shim)
        break;
      case ncclProfileP2p:
        d.p2p.func = pickString(in);
        d.p2p.datatype = pickString(in);
        d.p2p.parentGroup = pickHandle(in);
        break;
      case ncclProfileCollApi:
        d.collApi.func = pickString(in);
        d.collApi.datatype = pickString(in);
        break;
      case ncclProfileP2pApi:
        d.p2pApi.func = pickString(in);
        d.p2pApi.datatype = pickString(in);
        break;
      case ncclProfileCeColl:
        d.ceColl.func = pickString(in);
        d.ceColl.datatype = pickString(in);
        d.ceColl.syncStrategy = pickString(in);
        break;
      case ncclProfileProxyOp:
        // PXN: another process's op comes with its context and parent; ours with our own pid.
        if ((ctxSel & 1) == 0 || d.proxyOp.pid == getpid()) {
          d.proxyOp.pid = getpid();
        } else {
          ctx = gForeign;
          if (ctxSel & 2) d.parentObj = gForeign;
        }
        break;
      case ncclProfileProxyStep:
      case ncclProfileNetPlugin:
        if (ctxSel & 1) ctx = gForeign;  // routed by the parent, never by the context
        break;
      default:
        break;
    }
    if (ctxSel == 0xff) ctx = nullptr;  // a comm whose init gave no context
    void* h = reinterpret_cast<void*>(uintptr_t{1});
    check(prof->startEvent(ctx, &h, &d) == ncclSuccess);
    if (gTrace)
      fprintf(stderr, "start comm %d type %#llx parent %p%s: %p\n", c, static_cast<unsigned long long>(d.type),
              d.parentObj, ctx == comms[c].ctx ? "" : " (other context)", h);
    if (h == nullptr) return;
    check(d.type == ncclProfileColl || d.type == ncclProfileKernelCh || d.type == ncclProfileProxyOp ||
          d.type == ncclProfileProxyStep);
    keep(h, c);
  }

  // Up to 48 well-formed collectives from five bytes, as NCCL emits them (Coll, then per channel KernelCh with
  // its stop time, and with bit 4 a ProxyOp with one ProxyStep), parts left out by the flag bits: enough to
  // fill the pools (16 collectives, 64 channels, 32 proxy ops) and make NCCL's never-stopped events stale.
  void burst(Input& in) {
    const int c = in.byte() % nComms;
    const int count = 1 + in.byte() % 48;
    const uint8_t flags = in.byte();
    const int nChannels = in.byte() % 5;
    const int peer = in.byte();
    if (!comms[c].open) return;
    void* ctx = comms[c].ctx;
    static const char* const kFuncs[] = {"AllReduce", "AllGather", "ReduceScatter", "Broadcast", "Reduce"};
    for (int i = 0; i < count; ++i) {
      ncclProfilerEventDescr_v6_t d;
      std::memset(&d, 0, sizeof d);
      d.type = ncclProfileColl;
      d.coll.seqNumber = static_cast<uint64_t>(i);
      d.coll.func = kFuncs[(i + (flags >> 6)) % 5];
      d.coll.count = size_t{1} << (i % 24);
      d.coll.datatype = (flags & 0x40) ? "ncclBfloat16" : "ncclFloat32";
      d.coll.nChannels = static_cast<uint8_t>(nChannels);
      d.coll.algo = "RING";
      d.coll.proto = "SIMPLE";
      void* coll = nullptr;
      check(prof->startEvent(ctx, &coll, &d) == ncclSuccess);
      keep(coll, c);
      if (!(flags & 1)) check(prof->stopEvent(coll) == ncclSuccess);
      for (int ch = 0; ch < nChannels && (flags & 2); ++ch) {
        std::memset(&d, 0, sizeof d);
        d.type = ncclProfileKernelCh;
        d.parentObj = coll;
        d.kernelCh.channelId = static_cast<uint8_t>(ch);
        d.kernelCh.pTimer = 1000u * static_cast<uint64_t>(i) + static_cast<uint64_t>(ch);
        void* k = nullptr;
        check(prof->startEvent(ctx, &k, &d) == ncclSuccess);
        keep(k, c);
        ncclProfilerEventStateArgs_v5_t a{};
        a.kernelCh.pTimer = d.kernelCh.pTimer + 500 + static_cast<uint64_t>(ch) * (flags & 0x20 ? 5000 : 1);
        if (flags & 4) check(prof->recordEventState(k, ncclProfilerKernelChStop, &a) == ncclSuccess);
        if (!(flags & 8)) check(prof->stopEvent(k) == ncclSuccess);
      }
      if (flags & 0x10) {
        std::memset(&d, 0, sizeof d);
        d.type = ncclProfileProxyOp;
        d.parentObj = coll;
        d.proxyOp.pid = getpid();
        d.proxyOp.channelId = static_cast<uint8_t>(i % 4);
        d.proxyOp.peer = peer;
        d.proxyOp.nSteps = 1;
        d.proxyOp.chunkSize = 1 << 19;
        d.proxyOp.isSend = i & 1;
        void* op = nullptr;
        check(prof->startEvent(ctx, &op, &d) == ncclSuccess);
        keep(op, c);
        std::memset(&d, 0, sizeof d);
        d.type = ncclProfileProxyStep;
        d.parentObj = op;
        void* step = nullptr;
        check(prof->startEvent(ctx, &step, &d) == ncclSuccess);
        keep(step, c);
        ncclProfilerEventStateArgs_v5_t a{};
        a.proxyStep.transSize = size_t{1} << 19;
        const auto wait = (i & 1) ? ncclProfilerProxyStepSendWait : ncclProfilerProxyStepRecvFlushWait;
        check(prof->recordEventState(step, wait, &a) == ncclSuccess);
        if (!(flags & 8)) {
          check(prof->stopEvent(step) == ncclSuccess);
          check(prof->stopEvent(op) == ncclSuccess);
        }
      }
    }
    if (gTrace) fprintf(stderr, "burst comm %d: %d collectives of %d channels, flags %#x\n", c, count, nChannels, flags);
  }

  void keep(void* h, int c) {
    if (h == nullptr) return;
    if (handles.size() >= 256) handles.erase(handles.begin());
    handles.push_back({h, c});
  }

  void stop(Input& in) {
    void* h = pickHandle(in);
    if (gTrace) fprintf(stderr, "stop %p\n", h);
    check(prof->stopEvent(h) == ncclSuccess);
  }

  void record(Input& in) {
    void* h = pickHandle(in);
    const uint8_t stateSel = in.byte();
    const uint8_t argsSel = in.byte();
    ncclProfilerEventStateArgs_v5_t args;
    in.bytes(&args, sizeof args);
    // Any value the C++ enum can hold (0..31: NCCL's states and one unnamed); NCCL passes no other.
    const auto state = static_cast<ncclProfilerEventState_t>(stateSel % 32);
    if (gTrace)
      fprintf(stderr, "record %p state %d%s\n", h, static_cast<int>(state), (argsSel & 1) ? "" : " (no args)");
    check(prof->recordEventState(h, state, (argsSel & 1) ? &args : nullptr) == ncclSuccess);
  }
};

}  // namespace

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  // One process-wide runtime for the whole run, measuring, logging nowhere, talking to no coordinator, with
  // proxy events on and the smallest pools (16 collectives, 64 channels, 32 proxy ops) so that they fill up.
  setenv("WIREWISE_MODE", "apply", 1);
  setenv("WIREWISE_LOG", "none", 1);
  setenv("WIREWISE_SYNC", "off", 1);
  setenv("WIREWISE_COLLECT_MS", "0", 1);
  setenv("WIREWISE_CUPTI", "off", 1);
  setenv("WIREWISE_NET_PATHS", "on", 1);
  setenv("WIREWISE_EVENT_POOL", "16", 1);
  setenv("WIREWISE_SUMMARY_MS", "100", 1);
  unsetenv("WIREWISE_CONFIG");
  unsetenv("WIREWISE_WIRING");
  gTrace = getenv("WW_FUZZ_TRACE") != nullptr;
  gInterned = new std::set<std::string>;
  gForeign = aligned_alloc(64, 256);
  WW_POISON(gForeign, 256);
  // This binary exports the plugin's symbols (ENABLE_EXPORTS): NCCL's dlsym finds them here.
  void* self = dlopen(nullptr, RTLD_NOW);
  for (int v = 4; v <= 6; ++v) {
    std::string why;
    gProfilers[v - 4] = Profiler::loadVersion(self, v, &why).release();
    if (gProfilers[v - 4] == nullptr) {
      fprintf(stderr, "fuzz_profiler: %s\n", why.c_str());
      abort();
    }
  }
  // A communicator that stays open for the whole run keeps the runtime (settings, threads) from being torn
  // down and built again for every input.
  static int mask = 0;
  void* keep = nullptr;
  check(gProfilers[1]->init(&keep, 0xfeed, &mask, "keeper", 1, 1, 0, logger) == ncclSuccess && keep != nullptr);
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  Input in{data, size};
  Run run;
  const int version = 4 + in.byte() % 3;
  run.prof = gProfilers[version - 4];
  run.expectMask = ncclProfileColl | ncclProfileKernelCh | ncclProfileProxyOp | ncclProfileProxyStep |
                   (version >= 6 ? ncclProfileCeColl : 0);
  // Mostly one communicator: each init allocates its pools and rings afresh, the cost of most runs.
  run.nComms = in.byte() % 4 == 3 ? 2 : 1;
  for (int c = 0; c < run.nComms; ++c) run.init(in, c);
  while (in.n > 0) {
    const uint8_t op = in.byte() % 16;
    if (op < 6) {
      run.start(in);
    } else if (op < 10) {
      run.stop(in);
    } else if (op < 13) {
      run.record(in);
    } else if (op == 13) {
      run.burst(in);
    } else if (op == 15) {  // a communicator finalized and another one initialized in its place
      const int c = in.byte() % run.nComms;
      run.finalize(c);
      run.init(in, c);
    } else if (!run.handles.empty()) {  // the newest handle: a state with no arguments, a stop and a duplicate stop
      void* h = run.handles.back().h;
      check(run.prof->recordEventState(h, ncclProfilerKernelChStop, nullptr) == ncclSuccess);
      check(run.prof->stopEvent(h) == ncclSuccess);
      check(run.prof->stopEvent(h) == ncclSuccess);
    }
  }
  for (int c = 0; c < run.nComms; ++c) run.finalize(c);
  return 0;
}
