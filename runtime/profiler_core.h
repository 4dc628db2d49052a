// The profiler's core entry points. profiler_v4/v5 shims convert NCCL's descriptors into ProfEvent and
// call here. Callbacks never allocate (events come from preallocated pools), never lock and never log.
#pragma once

#include <cstddef>
#include <cstdint>

#include "plugin/nccl/common.h"
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

ncclResult_t profilerInit(const ProfilerInitArgs& args, void** context) noexcept;
// Returns our handle, or null for "not tracked" (unwanted type, null context, pool exhausted).
void* profilerStartEvent(void* context, const ProfEvent& ev) noexcept;
void profilerStopEvent(void* handle) noexcept;
// state: ncclProfilerEventState_t value; pTimer: the KernelChStop timestamp, 0 if none given.
void profilerRecordState(void* handle, int state, uint64_t pTimer) noexcept;
ncclResult_t profilerFinalize(void* context) noexcept;

}  // namespace wirewise
