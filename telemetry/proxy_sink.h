// Per-communicator network-path telemetry from NCCL's ProxyOp and ProxyStep events.
//
// NCCL's proxy thread reports one ProxyOp per (channel, peer, direction) of a collective or p2p that
// uses a network transport (IB, socket, CollNet; nothing for NVLink/P2P/SHM), and one ProxyStep per
// network transfer of it, moving through wait states (telemetry.md 4.7):
//   send: start, SendGPUWait (8), SendPeerWait (20, repeated while polling), SendWait (9, transSize =
//         bytes handed to isend), stop (the network reported the send done);
//   recv: start, RecvWait (10, irecv posted), RecvFlushWait (11, transSize = bytes received),
//         RecvGPUWait (12), stop.
// Each path (channel, peer, send/recv) accumulates, with relaxed atomics only: ops, steps, bytes, the
// time its steps spent in each state, the time at least one of its ops was running ("active") and the
// time at least one of its steps was on the network ("net": SendWait..stop, RecvWait..RecvFlushWait).
// bytes / net is the path's achieved rate while it was transferring. Times are CLOCK_MONOTONIC
// nanoseconds read by the caller at the callback, so they include proxy-thread scheduling delays.
//
// Events come from fixed pools allocated at construction (ops, 2 steps per op, a path table); a full
// pool or table drops the event and counts it. Handles use the tagging of slot_tag.h, so a late or
// duplicate stop/record for a recycled slot is ignored (and counted). Slots that NCCL never stops (its
// socket transport can miss ProxyStep stops, NVIDIA/nccl#1658) are reclaimed when a pool runs dry.
// Nothing here allocates, locks or logs after construction.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>

#include "telemetry/prof_event.h"

namespace wirewise {

// ProxyStep wait states, in the order NCCL passes through them; index into NetPathTotals::stateNs.
enum ProxyState : int {
  kPsSendGpuWait = 0,
  kPsSendPeerWait,
  kPsSendWait,
  kPsRecvWait,
  kPsRecvFlushWait,
  kPsRecvGpuWait,
  kNumProxyStates
};
// NCCL's state value to ProxyState, -1 for any other state.
int proxyStateIndex(int ncclState) noexcept;
const char* proxyStateName(int index) noexcept;  // "send_gpu_wait", ...

struct NetPathTotals {
  int channel = 0;
  int peer = -1;
  bool isSend = false;
  uint64_t ops = 0;           // ProxyOps started on this path
  uint64_t plannedSteps = 0;  // sum of the ops' nSteps
  uint64_t steps = 0;         // ProxySteps stopped (or reclaimed) on this path
  uint64_t bytes = 0;         // transSize at SendWait (send) or RecvFlushWait (recv)
  uint64_t chunkSize = 0;     // the last op's chunkSize (bytes per transfer at most)
  uint64_t activeNs = 0;      // union of its ops' [start, stop]
  uint64_t netNs = 0;         // union of its steps' network intervals
  uint64_t stateNs[kNumProxyStates] = {};  // sum over steps of the time spent in each state
};

struct ProxyCounters {
  uint64_t opsStarted = 0;
  uint64_t opsNullParent = 0;   // tracked ProxyOps whose parent was null (p2p, or a dropped Coll)
  uint64_t stepsStarted = 0;
  uint64_t droppedPoolExhausted = 0;  // ops or steps refused: no free slot
  uint64_t droppedPathsFull = 0;      // ops refused: the path table is full
  uint64_t staleEvents = 0;     // stop/record/child for a recycled or already stopped slot
  uint64_t reclaimed = 0;       // op or step slots taken back from events NCCL never stopped
  uint64_t netPluginEvents = 0; // NetPlugin events under our steps (seen, not tracked)
};

// Events that no sink of this process can own, counted process-wide because their context may be
// another process's pointer.
struct ForeignProxyCounters {
  uint64_t pxnOps = 0;           // ProxyOps with proxyOp.pid != our pid (PXN): not tracked
  uint64_t orphanSteps = 0;      // ProxySteps with a null or non-ProxyOp parent (PXN op, dropped op)
  uint64_t orphanNetPlugin = 0;  // NetPlugin events with a null or non-ProxyStep parent
};

class ProxySink {
 public:
  // opPoolSize ProxyOp slots, 2x as many ProxyStep slots, pathCapacity paths (rounded up to a power of 2).
  ProxySink(uint64_t commId, int rank, size_t opPoolSize, size_t pathCapacity);
  ~ProxySink();
  ProxySink(const ProxySink&) = delete;
  ProxySink& operator=(const ProxySink&) = delete;

  // A ProxyOp of this process (the caller checked ev.pid: see startProxyEvent). Null: not tracked.
  void* startOp(const ProfEvent& ev, uint64_t nowNs) noexcept;
  // A ProxyStep or NetPlugin event: goes to the sink that owns its parent, never to a context.
  static void* startChild(const ProfEvent& ev, uint64_t nowNs) noexcept;
  void stop(void* handle, uint64_t nowNs) noexcept;
  // state: NCCL's value; transSize: the state argument (only read for SendWait and RecvFlushWait).
  void recordState(void* handle, int state, uint64_t transSize, uint64_t nowNs) noexcept;

  // Cumulative totals of up to max paths (any thread; each field is a relaxed snapshot). Returns how many.
  size_t paths(NetPathTotals* out, size_t max) const noexcept;
  size_t pathCapacity() const noexcept;
  ProxyCounters counters() const noexcept;
  size_t opsInFlight() const noexcept;
  size_t stepsInFlight() const noexcept;

  static ForeignProxyCounters foreignCounters() noexcept;
  static void countPxnOp() noexcept;
  // The sink that issued a non-null ProxyOp/ProxyStep handle. The sink must still be alive.
  static ProxySink* ownerOf(void* handle) noexcept;

  uint64_t commId() const { return commId_; }
  int rank() const { return rank_; }

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
  uint64_t commId_;
  int rank_;
};

// The entry for ProxyOp, ProxyStep and NetPlugin starts. Under PXN, NCCL passes these events to this
// process with another process's context and parent pointers, so the comm's sink is only obtained from
// sinkOf() (which reads the context) for a ProxyOp whose pid is ownPid; everything else is routed by
// its parent handle, which this process issued.
template <class SinkOf>
void* startProxyEvent(const ProfEvent& ev, int ownPid, uint64_t nowNs, SinkOf&& sinkOf) noexcept {
  if (ev.type != kEvProxyOp) return ProxySink::startChild(ev, nowNs);
  if (ev.pid != ownPid) {
    ProxySink::countPxnOp();
    return nullptr;
  }
  ProxySink* sink = sinkOf();
  return sink == nullptr ? nullptr : sink->startOp(ev, nowNs);
}

}  // namespace wirewise
