// A profiler event as wirewise sees it: the few descriptor fields it uses, independent of the NCCL
// profiler interface version. The plugin's profiler_v4/v5 shims fill it from NCCL's descriptor.
#pragma once

#include <cstddef>
#include <cstdint>

namespace wirewise {

// Event type bits, equal to NCCL's ncclProfile* values.
inline constexpr uint64_t kEvColl = 1u << 1;
inline constexpr uint64_t kEvProxyOp = 1u << 3;
inline constexpr uint64_t kEvProxyStep = 1u << 4;
inline constexpr uint64_t kEvKernelCh = 1u << 6;
// NCCL's ncclProfilerKernelChStop state value.
inline constexpr int kStateKernelChStop = 22;

// Our view of an event descriptor: only what wirewise uses, version-independent.
struct ProfEvent {
  uint64_t type = 0;        // one ncclProfile* bit
  void* parent = nullptr;   // a handle we returned earlier, or null
  int rank = -1;
  // type == ncclProfileColl
  uint64_t seqNumber = 0;
  const char* func = nullptr;      // NCCL's static strings, e.g. "AllReduce"
  size_t count = 0;                // elements
  const char* datatype = nullptr;  // e.g. "ncclBfloat16"
  uint8_t nChannels = 0;
  const char* algo = nullptr;      // e.g. "RING"
  const char* proto = nullptr;     // e.g. "SIMPLE"
  // type == ncclProfileKernelCh
  uint8_t channelId = 0;
  uint64_t pTimer = 0;  // start, GPU ns
};

}  // namespace wirewise
