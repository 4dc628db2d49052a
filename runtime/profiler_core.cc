#include "runtime/profiler_core.h"

#include <time.h>
#include <unistd.h>

#include <atomic>
#include <cstring>
#include <memory>
#include <optional>
#include <string>

#include "common/log_events.h"
#include "common/units.h"
#include "runtime/log.h"
#include "runtime/profiler_chain.h"
#include "runtime/runtime.h"
#include "telemetry/event_sink.h"
#include "telemetry/launch_ring.h"
#include "telemetry/proxy_sink.h"
#include "telemetry/slot_tag.h"

namespace wirewise {
namespace {

// Ring of completed samples per comm: drained every 50 ms, so a few thousand slots absorb bursts.
constexpr size_t kRingSize = 4096;
// Paths per comm: a ring or tree touches a few peers per channel; all-to-all p2p beyond this is counted.
constexpr size_t kPathCapacity = 1024;

// Our pid, cached at init (NCCL's profiler.cc caches it at load too): getpid() is a system call, and
// the PXN check runs on every ProxyOp.
std::atomic<int> gPid{0};

struct CommProfiler {
  CommProfiler(const ProfilerInitArgs& a, size_t pool, bool netPaths, LaunchRing* launchRing)
      : events(a.commId, a.rank, a.nRanks, pool, kRingSize),
        // ProxyOps in flight: one per (channel, peer, direction) of each collective the proxy holds.
        proxy(netPaths ? std::make_unique<ProxySink>(a.commId, a.rank, 2 * pool, kPathCapacity) : nullptr),
        launches(launchRing, a.commId, a.rank) {}
  EventSink events;
  std::unique_ptr<ProxySink> proxy;
  CommLaunchRecorder launches;  // KernelLaunch for the CUPTI collector; inert (null ring) unless it matches
  // Collectives NCCL ran on copy engines (v6 CeColl). Counted, never sampled: NCCL starts and stops the event
  // on the host around the copies' launch, so its times are not the collective's.
  std::atomic<uint64_t> ceColls{0};
  bool ceFace = false;  // v6 and later: the count is logged
};

uint64_t nowNs() noexcept {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<uint64_t>(ts.tv_sec) * 1'000'000'000ull + static_cast<uint64_t>(ts.tv_nsec);
}

// The handles whose stop and record depend on their slot's type: the proxy sink's and the chain's. One
// mask test, so that chaining costs the Coll's stop nothing when off.
bool isRoutedByType(const SlotHead* h) {
  return (h->type & (kEvProxyOp | kEvProxyStep | chain::kChainSlotType)) != 0;
}

// The proxy events' and chain slots' stop and record, kept out of line: inlined, the proxy's clock read
// made every Coll/KernelCh stop and record save and restore five more registers.
[[gnu::noinline]] void stopRoutedEvent(const SlotHead* h, void* handle) noexcept {
  if (h->type == chain::kChainSlotType)
    chain::stopChained(handle);
  else
    static_cast<ProxySink*>(h->owner)->stop(handle, nowNs());
}
[[gnu::noinline]] void recordRoutedState(const SlotHead* h, void* handle, int state, uint64_t arg,
                                         void* rawArgs) noexcept {
  if (h->type == chain::kChainSlotType)
    chain::recordChained(handle, state, arg, rawArgs);
  else if (proxyStateIndex(state) >= 0)
    static_cast<ProxySink*>(h->owner)->recordState(handle, state, arg, nowNs());
}

// NCCL's commName is the application's string (ncclConfig_t.commName), or null: kept to a bounded length so
// that a runaway name cannot bloat every log line that carries it.
std::optional<std::string> commNameOf(const char* name) {
  constexpr size_t kMaxName = 128;
  if (name == nullptr || *name == '\0') return std::nullopt;
  return std::string(name, ::strnlen(name, kMaxName));
}

}  // namespace

uint64_t profilerActivationMask(bool netPaths, bool kernelLaunch, bool ceColls) noexcept {
  return kEvColl | kEvKernelCh | (netPaths ? kEvProxyOp | kEvProxyStep : 0) | (kernelLaunch ? kEvKernelLaunch : 0) |
         (ceColls ? kEvCeColl : 0);
}

ncclResult_t profilerInit(const ProfilerInitArgs& args, void** context) noexcept {
  if (context == nullptr) return ncclSuccess;
  *context = nullptr;
  log::setLogger(args.logger);
  try {
    // Released on the way out unless the comm keeps it.
    RuntimeRef rt = RuntimeRef::acquire(processEnv(), logev::Face::Profiler);
    rt->noteProfilerFace();  // this comm's tuner, initialised next, has its profiler
    // NCCL 2.28.9 finalizes only non-null contexts, so hold no reference for this comm.
    if (rt->settings().mode == Mode::Off) return ncclSuccess;
    gPid.store(static_cast<int>(getpid()), std::memory_order_relaxed);
    const bool netPaths = rt->settings().netPaths;
    // KernelLaunch exists from v5 on; the ring exists only while the CUPTI collector drains it.
    LaunchRing* launchRing = args.abiVersion >= 5 ? rt->launchRing() : nullptr;
    auto comm = std::make_unique<CommProfiler>(args, static_cast<size_t>(rt->settings().eventPool), netPaths,
                                               launchRing);
    comm->ceFace = args.abiVersion >= 6;
    const uint64_t ours = profilerActivationMask(netPaths, launchRing != nullptr, comm->ceFace);
    // WIREWISE_PROFILER_CHAIN: the second plugin's init for this comm, with its own mask (null: not chained).
    uint64_t theirs = 0;
    std::unique_ptr<chain::ChainComm> chained =
        chain::openChain(rt->settings().profilerChain, args, comm.get(), ours,
                         2 * static_cast<size_t>(rt->settings().eventPool), &theirs);
    // The mask is one process-global int that NCCL reads on every event; every comm wants the same
    // value (settings are read once per process), so it is written only when it differs (in practice
    // by the first init), never cleared. Only what we and a chained plugin consume: NCCL does not pay
    // for events nobody takes.
    const int want = static_cast<int>(ours | theirs);
    if (args.activationMask != nullptr && __atomic_load_n(args.activationMask, __ATOMIC_RELAXED) != want)
      __atomic_store_n(args.activationMask, want, __ATOMIC_RELAXED);
    rt->event(logev::CommInit{.comm = hexId(args.commId),
                              .face = std::string(logev::faceName(logev::Face::Profiler)),
                              .abi = "profiler_v" + std::to_string(args.abiVersion),
                              .nRanks = args.nRanks,
                              .nNodes = args.nNodes,
                              .rank = args.rank,
                              .commName = commNameOf(args.commName)});
    rt->addSink(&comm->events, comm->proxy.get());
    CommProfiler* own = comm.release();
    *context = chained != nullptr ? chain::contextOf(std::move(chained)) : own;
    rt.keep();  // the comm's reference, given back at finalize
  } catch (const std::exception& e) {
    WW_WARN(NCCL_INIT | NCCL_PROFILE, "profiler init failed (%s); continuing without measurements", e.what());
  } catch (...) {
    WW_WARN(NCCL_INIT | NCCL_PROFILE, "profiler init failed; continuing without measurements");
  }
  return ncclSuccess;
}

void* profilerStartColl(void* context, const CollStart& ev) noexcept {
  auto* comm = static_cast<CommProfiler*>(context);
  if (comm == nullptr) return nullptr;
  void* handle = comm->events.startColl(ev);
  // Claims the plan's launch; an inline no-op (one branch) unless CUPTI matching runs. After the sink's
  // start, whose hot path then holds nothing across this rare call.
  comm->launches.onColl(ev.func, ev.seqNumber);
  return handle;
}

void* profilerStartKernelCh(void* context, const ChannelStart& ev) noexcept {
  auto* comm = static_cast<CommProfiler*>(context);
  return comm == nullptr ? nullptr : comm->events.startChannel(ev);
}

[[gnu::noinline]] void* profilerStartEvent(void* context, const ProfEvent& ev) noexcept {
  if (ev.type == kEvColl) return profilerStartColl(context, collStartOf(ev));
  if (ev.type == kEvKernelCh) return profilerStartKernelCh(context, channelStartOf(ev));
  if (ev.type == kEvKernelLaunch) {
    // Recorded, never tracked: a null handle means NCCL never calls stopEvent for it.
    if (auto* comm = static_cast<CommProfiler*>(context)) comm->launches.onKernelLaunch(ev.stream);
    return nullptr;
  }
  if (ev.type == kEvProxyOp || ev.type == kEvProxyStep || ev.type == kEvNetPlugin) {
    // The context is read only for a ProxyOp of this process: under PXN it is another process's pointer.
    return startProxyEvent(ev, gPid.load(std::memory_order_relaxed), nowNs(), [context]() -> ProxySink* {
      auto* comm = static_cast<CommProfiler*>(context);
      return comm == nullptr ? nullptr : comm->proxy.get();
    });
  }
  if (ev.type == kEvCeColl) {
    // Rare (large AllGathers on NCCL 2.29+), so tested after the proxy events. A null handle: NCCL then
    // starts none of its CeSync/CeBatch children and never calls stopEvent.
    if (auto* comm = static_cast<CommProfiler*>(context)) comm->ceColls.fetch_add(1, std::memory_order_relaxed);
    return nullptr;
  }
  return nullptr;
}

// stopEvent and recordEventState carry no context: the handle itself names its sink. Only the event
// sink's KernelCh handles carry a sub-index (telemetry/slot_tag.h), so those need no look at the type.
void profilerStopEvent(void* handle) noexcept {
  if (handle == nullptr) return;
  const SlotHead* h = slot_tag::headOf(handle);
  if (slot_tag::subOf(handle) != 0)
    static_cast<EventSink*>(h->owner)->stopOwn(handle);
  else if (isRoutedByType(h))
    stopRoutedEvent(h, handle);
  // else a Coll: its stop only means "enqueued" and is not waited for (telemetry/event_sink.h)
}

void profilerRecordState(void* handle, int state, void* rawArgs, uint64_t arg) noexcept {
  if (handle == nullptr) return;
  if (state == kStateKernelChStop && slot_tag::subOf(handle) != 0) {
    EventSink::recordStopOwn(handle, arg);
  } else {
    // A chained KernelCh's handle is a chain slot's, without a sub-index.
    const SlotHead* h = slot_tag::headOf(handle);
    if (isRoutedByType(h)) recordRoutedState(h, handle, state, arg, rawArgs);
  }
}

ncclResult_t profilerFinalize(void* context) noexcept {
  if (chain::isChained(context)) context = chain::finalizeChain(context);  // the chained plugin's first
  auto* comm = static_cast<CommProfiler*>(context);
  if (comm == nullptr) return ncclSuccess;
  RuntimeRef atInit = RuntimeRef::adopt();  // the reference taken at init: released last, after the comm goes
  try {
    RuntimeRef rt = RuntimeRef::acquire();
    rt->removeSink(&comm->events);
    SinkCounters c = comm->events.counters();
    logev::CommFinalize ev;
    ev.comm = hexId(comm->events.commId());
    ev.face = logev::faceName(logev::Face::Profiler);
    ev.collectives = c.collsStarted;
    ev.rank = comm->events.rank();
    ev.samples = c.samplesEmitted;
    if (comm->ceFace) ev.ceCollectives = comm->ceColls.load(std::memory_order_relaxed);
    rt->event(ev);
  } catch (...) {
  }
  delete comm;
  return ncclSuccess;
}

}  // namespace wirewise
