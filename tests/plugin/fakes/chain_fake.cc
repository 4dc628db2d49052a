// A profiler plugin for WIREWISE_PROFILER_CHAIN's tests and benchmark, built three ways:
//   default             ncclProfiler_v4, _v5 and _v6 that count every call per event type and check that
//                       each handle, parent and context they receive is one they issued;
//   CHAIN_FAKE_V4_ONLY  the same, ncclProfiler_v4 alone (a plugin of another version than NCCL's);
//   CHAIN_FAKE_NOTHING  do-nothing callbacks asking for Coll, KernelCh, ProxyOp and ProxyStep (the
//                       benchmark's second plugin: what chaining itself costs).
#include <cstring>
#include <stdexcept>

#include "common/nccl/profiler.h"
#include "tests/plugin/fakes/chain_fake.h"

#define FAKE_EXPORT __attribute__((visibility("default")))

namespace {

#ifdef CHAIN_FAKE_NOTHING

char gToken;

ncclResult_t init(void** ctx, int* mask) {
  *mask = ncclProfileColl | ncclProfileKernelCh | ncclProfileProxyOp | ncclProfileProxyStep;
  *ctx = &gToken;
  return ncclSuccess;
}
template <class D>
ncclResult_t start(void*, void** h, D*) {
  *h = &gToken;
  return ncclSuccess;
}
ncclResult_t stop(void*) { return ncclSuccess; }
ncclResult_t record(void*, ncclProfilerEventState_t, ncclProfilerEventStateArgs_v5_t*) { return ncclSuccess; }
ncclResult_t finalize(void*) { return ncclSuccess; }

#else

ChainFake gFake;

// Every handle is one of these, issued in turn; a parent or a stopped handle is checked against them.
struct Event {
  std::atomic<uint64_t> type{0};  // 0: never issued
  std::atomic<bool> live{false};
};
constexpr uint32_t kEvents = 1 << 18;
Event gEvents[kEvents];
std::atomic<uint32_t> gNext{0};
char gContexts[64];
std::atomic<uint32_t> gNextContext{0};

int bitIndex(uint64_t type) { return type == 0 ? 15 : __builtin_ctzll(type) & 15; }

Event* eventOf(void* h) {
  auto* e = static_cast<Event*>(h);
  return e >= gEvents && e < gEvents + kEvents ? e : nullptr;
}
bool isContext(void* c) {
  auto* p = static_cast<char*>(c);
  return p >= gContexts && p < gContexts + 64;
}

ncclResult_t init(int version, void** ctx, int* mask) {
  gFake.inits[version].fetch_add(1);
  if (gFake.throwAtInit) throw std::runtime_error("chain fake: init throws");
  if (gFake.initResult != ncclSuccess) return gFake.initResult;
  *mask = gFake.maskToSet;
  gFake.lastInitMask.store(*mask);
  *ctx = &gContexts[gNextContext.fetch_add(1) % 64];
  return ncclSuccess;
}

void checkParent(void* parent, uint64_t type) {
  if (parent == nullptr) {
    gFake.nullParents[bitIndex(type)].fetch_add(1);
    return;
  }
  Event* p = eventOf(parent);
  if (p == nullptr || p->type.load() == 0)
    gFake.badParents.fetch_add(1);
  else
    gFake.parents.fetch_add(1);
}

template <class D>
ncclResult_t start(void* ctx, void** h, D* d) {
  *h = nullptr;
  if (!isContext(ctx)) gFake.badContexts.fetch_add(1);
  const uint64_t type = d->type;
  gFake.start[bitIndex(type)].fetch_add(1);
  checkParent(d->parentObj, type);
  if constexpr (requires { d->coll.parentGroup; }) {
    if (type == ncclProfileColl && d->coll.parentGroup != nullptr) {
      Event* g = eventOf(d->coll.parentGroup);
      (g != nullptr && g->type.load() == ncclProfileGroup ? gFake.groupParents : gFake.badGroupParents).fetch_add(1);
    }
  }
  Event* e = &gEvents[gNext.fetch_add(1) % kEvents];
  e->type.store(type);
  e->live.store(true);
  *h = e;
  return ncclSuccess;
}

ncclResult_t stop(void* h) {
  Event* e = eventOf(h);
  if (e == nullptr || !e->live.exchange(false)) {
    gFake.badHandles.fetch_add(1);
    return ncclSuccess;
  }
  gFake.stop[bitIndex(e->type.load())].fetch_add(1);
  return ncclSuccess;
}

ncclResult_t record(void* h, ncclProfilerEventState_t state, ncclProfilerEventStateArgs_v5_t* args) {
  Event* e = eventOf(h);
  if (e == nullptr || !e->live.load()) {
    gFake.badHandles.fetch_add(1);
    return ncclSuccess;
  }
  gFake.record[bitIndex(e->type.load())].fetch_add(1);
  gFake.states[static_cast<int>(state) & 31].fetch_add(1);
  if (state == ncclProfilerKernelChStop && args != nullptr) gFake.lastKernelChStop.store(args->kernelCh.pTimer);
  return ncclSuccess;
}

ncclResult_t finalize(void* ctx) {
  if (!isContext(ctx)) gFake.badContexts.fetch_add(1);
  gFake.finalizes.fetch_add(1);
  return ncclSuccess;
}

#endif

}  // namespace

#ifndef CHAIN_FAKE_NOTHING
extern "C" FAKE_EXPORT ChainFake* chainFake() { return &gFake; }

extern "C" FAKE_EXPORT void chainFakeReset() {
  gFake.maskToSet = 0;
  gFake.initResult = ncclSuccess;
  gFake.throwAtInit = false;
  for (auto& a : gFake.inits) a.store(0);
  for (auto* arr : {gFake.start, gFake.stop, gFake.record, gFake.nullParents})
    for (int i = 0; i < 16; ++i) arr[i].store(0);
  for (auto& a : gFake.states) a.store(0);
  for (auto* a : {&gFake.finalizes, &gFake.parents, &gFake.badParents, &gFake.groupParents, &gFake.badGroupParents,
                  &gFake.badHandles, &gFake.badContexts, &gFake.lastKernelChStop})
    a->store(0);
  gFake.lastInitMask.store(0);
}
#endif

#ifdef CHAIN_FAKE_NOTHING
#define FAKE_INIT(v) init(ctx, mask)
#else
#define FAKE_INIT(v) init(v, ctx, mask)
#endif

// extern "C" without braces: a const object declared inside a linkage block would get internal linkage.
extern "C" FAKE_EXPORT const ncclProfiler_v4_t ncclProfiler_v4 = {
    "chain-fake",
    [](void** ctx, int* mask, const char*, uint64_t, int, int, int, ncclDebugLogger_t) { return FAKE_INIT(4); },
    start<ncclProfilerEventDescr_v4_t>, stop, record, finalize};
#ifndef CHAIN_FAKE_V4_ONLY
extern "C" FAKE_EXPORT const ncclProfiler_v5_t ncclProfiler_v5 = {
    "chain-fake",
    [](void** ctx, uint64_t, int* mask, const char*, int, int, int, ncclDebugLogger_t) { return FAKE_INIT(5); },
    start<ncclProfilerEventDescr_v5_t>, stop, record, finalize};
extern "C" FAKE_EXPORT const ncclProfiler_v6_t ncclProfiler_v6 = {
    "chain-fake",
    [](void** ctx, uint64_t, int* mask, const char*, int, int, int, ncclDebugLogger_t) { return FAKE_INIT(6); },
    start<ncclProfilerEventDescr_v6_t>, stop, record, finalize};
#endif
