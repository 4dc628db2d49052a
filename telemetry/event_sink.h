// Per-communicator profiler state: Coll and KernelCh events in, CollSamples out.
//
// NCCL calls start/stop/record from several threads (Coll from the launch or a CUDA host-callback
// thread, KernelCh from the proxy thread). Coll slots come from a fixed pool allocated at construction,
// taken in turn: start k takes the first free slot of k .. k+7 (mod pool), else the first one a pool's
// worth of starts old and still incomplete (stale, reclaimed on the spot), else drops the event; so
// every event costs O(1), however many collectives leaked. A KernelCh has no slot of its own: it lives
// in its parent's slot (channel c's start and stop times, one bit of the slot's open channels), so a
// child costs no claim and its parent needs no search. Completed collectives go, as records still
// holding NCCL's name pointers, into a bounded lock-free ring that one consumer (the runtime's background
// thread) drains, resolving the names there: NCCL's thread never compares a string. A full ring drops
// and counts. Nothing here allocates, locks or logs after construction.
//
// Completion: a Coll stop only means "enqueued" (NCCL stops a Coll at launch, before its channels
// report), so it is not waited for: a collective is complete once its KernelCh children have stopped; its
// time is max(channel stop) - min(channel start) on the GPU clock. A Coll of 0 channels is complete at
// its start (unsampled; no handle). Channels with a stop of 0 or before their start are counted but not timed; a channel id of 64
// or more (NCCL's MAXCHANNELS is 64) is counted and leaves the collective without a sample, as does a
// channel that starts twice. Children expected: nChannels, unless NCCL was seen to emit fewer for a Coll
// of that many channels (a stale collective that got m < nChannels children, all stopped): then m, until
// one more than m arrives.
// Slow channels: at completion the sample gets a mask of the channels above 1.2x the median channel's
// time and the slowest/median ratio (CollSample::slowChannels, slowRatioQ8; both 0 when no channel
// stands out or fewer than two were timed). A degraded NIC shows as the channels NCCL maps to it
// (rail-aligned) finishing late.
//
// Handles are Coll slot addresses tagged with 16 bits of the slot's generation, and for a KernelCh its
// channel + 1 (telemetry/slot_tag.h), so a late stop for a recycled slot is recognised and ignored.
// Handles are opaque: never dereference one. NCCL's stopEvent and recordEventState carry no context:
// ownerOf() finds the sink from a handle. Toggle ncclProfileColl and ncclProfileKernelCh together: a
// Coll started without KernelCh events never completes and is only recycled once stale (counted in
// droppedIncomplete).
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>

#include "telemetry/coll_sample.h"
#include "telemetry/prof_event.h"

namespace wirewise {

struct SinkCounters {
  uint64_t collsStarted = 0;          // Coll events that got a slot
  uint64_t samplesEmitted = 0;        // samples pushed into the ring
  uint64_t droppedPoolExhausted = 0;  // Colls refused: no slot in their turn was free or stale
  uint64_t droppedRingFull = 0;       // completed samples lost: consumer too slow
  uint64_t droppedIncomplete = 0;     // collectives recycled while stale, or that lost a KernelCh
  uint64_t orphanEvents = 0;          // KernelCh with a null/foreign/recycled parent, one too many, a
                                      // channel started or stopped twice, or one beyond 64
  uint64_t unsampled = 0;             // completed without a usable time: no timed channel
  uint64_t unresolved = 0;            // emitted, then dropped by drain(): unknown func or datatype
};
// Every started Coll ends in exactly one of: samplesEmitted, droppedRingFull, droppedIncomplete,
// unsampled, or is still in flight (collsInFlight()). Of samplesEmitted, drain() delivers all but the
// unresolved ones.

class EventSink {
 public:
  // collPoolSize Coll slots (about 1.2 KiB each, their 64 channels included) and a ring of ringSize
  // samples, each rounded up to a power of two. All memory is allocated here.
  EventSink(uint64_t commId, int rank, int nRanks, size_t collPoolSize, size_t ringSize);
  ~EventSink();
  EventSink(const EventSink&) = delete;
  EventSink& operator=(const EventSink&) = delete;

  // Profiler callbacks (any thread). start returns a handle or null ("not tracked"); stop and recordState
  // accept any pointer and ignore what is not inside this sink's pools.
  void* start(const ProfEvent& ev) noexcept;
  void stop(void* handle) noexcept;
  void recordState(void* handle, int state, uint64_t pTimer) noexcept;
  // The profiler core's hot path: the two starts without a ProfEvent, stop for a handle whose slot head
  // the caller has read and found this sink's, and KernelChStop for any handle with a sub-index (only
  // this sink's KernelCh handles carry one: telemetry/slot_tag.h). No range checks: a handle, or a
  // KernelCh's non-null parent, that no sink of this process returned is undefined behaviour here.
  void* startColl(const CollStart& c) noexcept;
  void* startChannel(const ChannelStart& c) noexcept;
  void stopOwn(void* handle) noexcept;
  static void recordStopOwn(void* handle, uint64_t pTimer) noexcept;

  // Single consumer: moves up to `max` samples into out, resolving NCCL's names (records whose func or
  // datatype is unknown are dropped and counted in unresolved); returns how many.
  size_t drain(CollSample* out, size_t max) noexcept;
  SinkCounters counters() const noexcept;
  // Collectives and channels currently open (O(pool size); for finalize-time checks and tests).
  size_t collsInFlight() const noexcept;
  size_t channelsInFlight() const noexcept;

  // The sink that issued a non-null handle (null for null). The sink must still be alive.
  static EventSink* ownerOf(void* handle) noexcept;

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
// Note: NCCL 2.28's ncclDatatypeToString has no case for ncclUint8 and reports it as "Unknown".
int datatypeSize(const char* name) noexcept;
// NCCL's algo/proto/func strings ("RING", "LL128", "AllReduce") to our indices; -1 if unknown.
// Case-insensitive. collIndexFromName knows only the five tuner collectives (CollType values).
int algoIndexFromName(const char* name) noexcept;
int protoIndexFromName(const char* name) noexcept;
int collIndexFromName(const char* name) noexcept;

}  // namespace wirewise
