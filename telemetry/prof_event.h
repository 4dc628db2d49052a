// A profiler event as wirewise sees it: the few descriptor fields it uses, independent of the NCCL
// profiler interface version. The plugin's profiler_v4/v5/v6 shims fill it from NCCL's descriptor.
#pragma once

#include <cstddef>
#include <cstdint>

namespace wirewise {

// Event type bits, equal to NCCL's ncclProfile* values.
inline constexpr uint64_t kEvColl = 1u << 1;
inline constexpr uint64_t kEvProxyOp = 1u << 3;
inline constexpr uint64_t kEvProxyStep = 1u << 4;
inline constexpr uint64_t kEvKernelCh = 1u << 6;
inline constexpr uint64_t kEvNetPlugin = 1u << 7;
inline constexpr uint64_t kEvKernelLaunch = 1u << 11;  // v5 and later
inline constexpr uint64_t kEvCeColl = 1u << 12;         // v6 and later: a collective run on copy engines
// NCCL's ncclProfilerEventState_t values that wirewise reads (same in v4 and v5; static_asserts in
// plugin/shim_util.h check them against common/nccl/profiler.h).
inline constexpr int kStateSendGpuWait = 8;    // ProxyStep: waiting for the local GPU to produce data
inline constexpr int kStateSendWait = 9;       // ProxyStep: isend posted, on the network; carries transSize
inline constexpr int kStateRecvWait = 10;      // ProxyStep: irecv posted, waiting for data
inline constexpr int kStateRecvFlushWait = 11; // ProxyStep: data arrived, flushing to GPU; carries transSize
inline constexpr int kStateRecvGpuWait = 12;   // ProxyStep: handed to the GPU, waiting for it to consume
inline constexpr int kStateSendPeerWait = 20;  // ProxyStep: data ready, waiting for the receiver's credit
inline constexpr int kStateKernelChStop = 22;  // KernelCh: carries the GPU stop time

// Our view of an event descriptor: only what wirewise uses, version-independent.
struct ProfEvent {
  uint64_t type = 0;        // one ncclProfile* bit
  void* parent = nullptr;   // a handle we returned earlier, or null
  int rank = -1;
  // type == ncclProfileColl (a CeColl is counted by its type alone)
  uint64_t seqNumber = 0;
  const char* func = nullptr;      // NCCL's static strings, e.g. "AllReduce"
  size_t count = 0;                // elements
  const char* datatype = nullptr;  // e.g. "ncclBfloat16"
  uint8_t nChannels = 0;
  const char* algo = nullptr;      // e.g. "RING"
  const char* proto = nullptr;     // e.g. "SIMPLE"
  // type == ncclProfileKernelCh (channelId also for ProxyOp)
  uint8_t channelId = 0;
  uint64_t pTimer = 0;  // start, GPU ns
  // type == ncclProfileProxyOp. Under PXN pid is another process's: then parent, and the context NCCL
  // passes with the event, are that process's pointers and must not be dereferenced.
  int pid = 0;
  int peer = -1;       // remote rank
  int nSteps = 0;      // network transfers planned
  int chunkSize = 0;   // bytes per transfer at most
  bool isSend = false;
  // type == ncclProfileProxyStep
  int step = 0;
  // type == ncclProfileKernelLaunch (v5): the cudaStream_t of the launch
  const void* stream = nullptr;
};

// The two events of every collective, as the hot path passes them (a whole ProfEvent costs more to build
// than the sink spends on it). ProfEvent's fields of the same names mean the same.
struct CollStart {
  uint64_t seqNumber = 0;
  const char* func = nullptr;
  size_t count = 0;
  const char* datatype = nullptr;
  const char* algo = nullptr;
  const char* proto = nullptr;
  uint8_t nChannels = 0;
};
struct ChannelStart {
  void* parent = nullptr;  // the Coll's handle
  uint64_t pTimer = 0;
  uint8_t channelId = 0;
};

inline CollStart collStartOf(const ProfEvent& ev) {
  return {.seqNumber = ev.seqNumber,
          .func = ev.func,
          .count = ev.count,
          .datatype = ev.datatype,
          .algo = ev.algo,
          .proto = ev.proto,
          .nChannels = ev.nChannels};
}
inline ChannelStart channelStartOf(const ProfEvent& ev) {
  return {.parent = ev.parent, .pTimer = ev.pTimer, .channelId = ev.channelId};
}

}  // namespace wirewise
