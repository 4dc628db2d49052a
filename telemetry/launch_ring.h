// NCCL kernel launches as the v5 profiler announces them (KernelLaunch event, NCCL 2.28+), for the CUPTI
// collector to match its kernel records against (telemetry/collectors/cupti_collector.h).
//
// NCCL starts a KernelLaunch event on the launching thread right before cuLaunchKernelEx, one per plan,
// with the communicator's profiler context and the CUDA stream. The descriptor names no collective: in
// the direct (non-graph) path NCCL starts the plan's Coll events on the same thread right after the
// launch returns (hostStreamPlanTask), so a Coll event on the thread that launched last for this
// communicator is claimed by that launch. Plans whose Coll events come from CUDA's host-callback thread
// (graph capture, CUDA_LAUNCH_BLOCKING, a persistent plan in flight) are not claimed: collective unknown.
//
// One LaunchRing per process (any launching thread pushes, the collector's sampler thread pops), one
// CommLaunchRecorder per communicator. Callback side: lock-free, no allocation, no system call.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>

#include "telemetry/mpsc_ring.h"

namespace wirewise {

struct LaunchRecord {
  uint64_t order = 0;  // process-wide launch number in push order, from 1
  uint64_t commId = 0;
  int32_t rank = -1;
  uintptr_t stream = 0;        // the cudaStream_t NCCL launched on
  uint32_t colls = 0;          // Coll events claimed by this launch; 0 = collective unknown
  const char* func = nullptr;  // first claimed Coll's func (NCCL's static string, e.g. "AllReduce")
  uint64_t seq = 0;            // first claimed Coll's seqNumber (per collective type in NCCL)
};

// A bounded MPSC ring of launches (telemetry/mpsc_ring.h), with claimable collective fields.
class LaunchRing {
 public:
  explicit LaunchRing(size_t minCapacity);  // rounded up to a power of two; allocates here only

  // Returns the launch's order, or 0 when the ring is full (counted in lost()).
  uint64_t push(uint64_t commId, int rank, uintptr_t stream) noexcept;
  // Adds a Coll to launch `order` while the launch is still in the ring (not yet popped).
  void claim(uint64_t order, const char* func, uint64_t seq) noexcept;
  // Single consumer: the oldest launch if its order <= limit and it is fully written.
  bool pop(uint64_t limit, LaunchRecord* out) noexcept;

  uint64_t pushed() const noexcept { return ring_.reserved(); }  // orders reserved
  uint64_t lost() const noexcept { return lost_.load(std::memory_order_relaxed); }
  size_t capacity() const { return ring_.capacity(); }

 private:
  struct Slot {
    uint64_t commId = 0;
    uintptr_t stream = 0;
    int32_t rank = -1;
    // Written by the launching thread only (one thread launches a communicator's plans at a time).
    std::atomic<uint32_t> colls{0};
    std::atomic<const char*> func{nullptr};
    std::atomic<uint64_t> collSeq{0};
  };
  static_assert(sizeof(MpscRing<Slot>::Cell) == 48, "the runtime sizes its ring by this");
  MpscRing<Slot> ring_;
  // Written only when the ring is full; lies past the ring's consumer line, off the producers' hot line.
  std::atomic<uint64_t> lost_{0};
};

// Per communicator: pushes its launches and lets the launching thread's next Coll events claim the last one.
class CommLaunchRecorder {
 public:
  CommLaunchRecorder(LaunchRing* ring, uint64_t commId, int rank) : ring_(ring), commId_(commId), rank_(rank) {}
  bool enabled() const { return ring_ != nullptr; }
  void onKernelLaunch(const void* stream) noexcept;
  // Every Coll event calls this; inline so that the usual case, no CUPTI matching (null ring), costs one
  // predictable branch and no call.
  void onColl(const char* func, uint64_t seq) noexcept {
    if (ring_ != nullptr) claimColl(func, seq);
  }

 private:
  [[gnu::noinline]] void claimColl(const char* func, uint64_t seq) noexcept;  // out of the Coll start's way

  LaunchRing* ring_;
  uint64_t commId_;
  int rank_;
  std::atomic<uint64_t> open_{0};       // order of this comm's last launch, 0 if none or not recorded
  std::atomic<uintptr_t> openThread_{0};  // pthread_self() of the thread that launched it
};

}  // namespace wirewise
