#include "runtime/profiler_core.h"

#include <memory>

#include "runtime/log.h"
#include "runtime/runtime.h"
#include "telemetry/event_sink.h"

namespace wirewise {
namespace {

// Ring of completed samples per comm: drained every 50 ms, so a few thousand slots absorb bursts.
constexpr size_t kRingSize = 4096;

}  // namespace

ncclResult_t profilerInit(const ProfilerInitArgs& args, void** context) noexcept {
  if (context == nullptr) return ncclSuccess;
  *context = nullptr;
  log::setLogger(args.logger);
  Runtime* rt = nullptr;
  try {
    rt = Runtime::acquire();
    if (rt->settings().mode == Mode::Off) {
      // NCCL 2.28.9 finalizes only non-null contexts, so hold no reference for this comm.
      Runtime::release();
      return ncclSuccess;
    }
    auto sink = std::make_unique<EventSink>(args.commId, args.rank, args.nRanks,
                                            static_cast<size_t>(rt->settings().eventPool), kRingSize);
    // The mask is one process-global int shared by every comm: set it to what we consume, and only that,
    // so NCCL does not pay for events we would drop.
    if (args.activationMask != nullptr)
      __atomic_store_n(args.activationMask, static_cast<int>(kEvColl | kEvKernelCh), __ATOMIC_RELAXED);
    rt->event({{"event", "comm_init"},
               {"comm", Runtime::hexId(args.commId)},
               {"face", "profiler"},
               {"abi", "profiler_v" + std::to_string(args.abiVersion)},
               {"nranks", args.nRanks},
               {"nnodes", args.nNodes},
               {"rank", args.rank}});
    rt->addSink(sink.get());
    *context = sink.release();
  } catch (const std::exception& e) {
    WW_WARN(NCCL_INIT | NCCL_PROFILE, "profiler init failed (%s); continuing without measurements", e.what());
    if (rt != nullptr) Runtime::release();
  } catch (...) {
    WW_WARN(NCCL_INIT | NCCL_PROFILE, "profiler init failed; continuing without measurements");
    if (rt != nullptr) Runtime::release();
  }
  return ncclSuccess;
}

void* profilerStartEvent(void* context, const ProfEvent& ev) noexcept {
  auto* sink = static_cast<EventSink*>(context);
  return sink == nullptr ? nullptr : sink->start(ev);
}

void profilerStopEvent(void* handle) noexcept {
  // stopEvent carries no context: the handle itself names its sink.
  if (EventSink* sink = EventSink::ownerOf(handle)) sink->stop(handle);
}

void profilerRecordState(void* handle, int state, uint64_t pTimer) noexcept {
  if (EventSink* sink = EventSink::ownerOf(handle)) sink->recordState(handle, state, pTimer);
}

ncclResult_t profilerFinalize(void* context) noexcept {
  auto* sink = static_cast<EventSink*>(context);
  if (sink == nullptr) return ncclSuccess;
  try {
    Runtime* rt = Runtime::acquire();
    rt->removeSink(sink);
    SinkCounters c = sink->counters();
    rt->event({{"event", "comm_finalize"},
               {"comm", Runtime::hexId(sink->commId())},
               {"face", "profiler"},
               {"rank", sink->rank()},
               {"collectives", c.collsStarted},
               {"samples", c.samplesEmitted}});
    Runtime::release();
  } catch (...) {
  }
  delete sink;
  Runtime::release();
  return ncclSuccess;
}

}  // namespace wirewise
