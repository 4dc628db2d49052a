// The profiler's core entry points. The profiler_v4/v5/v6 shims convert NCCL's descriptors into ProfEvent
// (CollStart, ChannelStart for the two events of every collective) and call here. Callbacks never allocate (events come from preallocated pools), never lock and never log.
//
// Per communicator the context holds an EventSink (Coll + KernelCh: collective durations) and a
// ProxySink (ProxyOp + ProxyStep: network paths). stopEvent and recordEventState carry no context:
// the handle's slot head names its type and sink. Proxy events are routed without touching the
// context unless they are a ProxyOp of this process (PXN: telemetry/proxy_sink.h). With
// WIREWISE_PROFILER_CHAIN a second plugin gets the events it asks for (runtime/profiler_chain.h): a chained
// comm's context and the handles both plugins track are the chain's, everything else is as without it.
#pragma once

#include <cstddef>
#include <cstdint>

#include "common/nccl/common.h"
#include "telemetry/prof_event.h"

namespace wirewise {

struct ProfilerInitArgs {
  int abiVersion = 5;
  uint64_t commId = 0;
  int* activationMask = nullptr;  // process-global int owned by NCCL; may be null in tests
  const char* commName = nullptr; // may be null
  int nNodes = 0, nRanks = 0, rank = 0;
  ncclDebugLogger_t logger = nullptr;
};

// The event types wirewise asks NCCL for: Coll and KernelCh always, ProxyOp and ProxyStep when
// network-path telemetry is on (WIREWISE_NET_PATHS; docs/telemetry.md "Profiler events"), KernelLaunch
// (v5) when the CUPTI collector matches kernel records to communicators (WIREWISE_CUPTI), CeColl (v6) to
// count the collectives NCCL runs on copy engines, which no KernelCh event times.
uint64_t profilerActivationMask(bool netPaths, bool kernelLaunch = false, bool ceColls = false) noexcept;

ncclResult_t profilerInit(const ProfilerInitArgs& args, void** context) noexcept;
// Returns our handle, or null for "not tracked" (unwanted type, null context, pool exhausted, PXN).
void* profilerStartEvent(void* context, const ProfEvent& ev) noexcept;
// The same for the two events of every collective, which the shims pass without building a ProfEvent.
void* profilerStartColl(void* context, const CollStart& ev) noexcept;
void* profilerStartKernelCh(void* context, const ChannelStart& ev) noexcept;
void profilerStopEvent(void* handle) noexcept;
// state: ncclProfilerEventState_t value; arg: the state's 8-byte argument (KernelChStop: the GPU stop
// time; ProxyStep SendWait/RecvFlushWait: transSize), 0 if none given; rawArgs: NCCL's state arguments as
// given (may be null), passed unread to a chained plugin (runtime/profiler_chain.h); before arg, in the
// register NCCL passed it in, so that the shims need not move it.
void profilerRecordState(void* handle, int state, void* rawArgs, uint64_t arg) noexcept;
ncclResult_t profilerFinalize(void* context) noexcept;

}  // namespace wirewise
