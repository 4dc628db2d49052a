// Per-communicator profiler state: Coll and KernelCh events in, CollSamples out.
//
// NCCL calls start/stop/record from several threads (Coll from the launch or a CUDA host-callback
// thread, KernelCh from the proxy thread). Event objects come from fixed pools allocated at
// construction; when a pool is empty the event is dropped (null handle) and counted. Completed
// samples go into a bounded lock-free ring that one consumer (the runtime's background thread)
// drains; a full ring drops and counts too. Nothing here allocates, locks or logs after construction.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>

#include "telemetry/coll_sample.h"
#include "telemetry/prof_event.h"

namespace wirewise {

struct SinkCounters {
  uint64_t collsStarted = 0;
  uint64_t samplesEmitted = 0;
  uint64_t droppedPoolExhausted = 0;  // events refused: no free slot
  uint64_t droppedRingFull = 0;       // completed samples lost: consumer too slow
  uint64_t droppedIncomplete = 0;     // collectives recycled before all channels reported
  uint64_t orphanEvents = 0;          // KernelCh with a null or foreign parent
};

class EventSink {
 public:
  EventSink(uint64_t commId, int rank, int nRanks, size_t collPoolSize, size_t ringSize);
  ~EventSink();
  EventSink(const EventSink&) = delete;
  EventSink& operator=(const EventSink&) = delete;

  // Profiler callbacks (any thread). start returns a handle or null ("not tracked").
  void* start(const ProfEvent& ev) noexcept;
  void stop(void* handle) noexcept;
  void recordState(void* handle, int state, uint64_t pTimer) noexcept;

  // Single consumer: moves up to `max` samples into out; returns how many.
  size_t drain(CollSample* out, size_t max) noexcept;
  SinkCounters counters() const noexcept;

  uint64_t commId() const { return commId_; }
  int rank() const { return rank_; }
  int nRanks() const { return nRanks_; }

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
  uint64_t commId_;
  int rank_;
  int nRanks_;
};

// Bytes per element for NCCL's datatype names ("ncclFloat32", "ncclBfloat16", ...); 0 if unknown.
int datatypeSize(const char* name) noexcept;
// NCCL's algo/proto/func strings ("RING", "LL128", "AllReduce") to our indices; -1 if unknown.
int algoIndexFromName(const char* name) noexcept;
int protoIndexFromName(const char* name) noexcept;
int collIndexFromName(const char* name) noexcept;

}  // namespace wirewise
