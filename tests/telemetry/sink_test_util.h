// Helpers shared by the EventSink tests: build ProfEvents the way the plugin shims will.
#pragma once

#include <gtest/gtest.h>

#include "telemetry/event_sink.h"

namespace wirewise::testing {

inline ProfEvent collEvent(uint64_t seq, uint8_t nChannels, size_t count = 1024, const char* func = "AllReduce",
                           const char* dtype = "ncclFloat32", const char* algo = "RING", const char* proto = "SIMPLE") {
  ProfEvent ev;
  ev.type = kEvColl;
  ev.seqNumber = seq;
  ev.func = func;
  ev.count = count;
  ev.datatype = dtype;
  ev.nChannels = nChannels;
  ev.algo = algo;
  ev.proto = proto;
  return ev;
}

inline ProfEvent chanEvent(void* parent, uint8_t channel, uint64_t start) {
  ProfEvent ev;
  ev.type = kEvKernelCh;
  ev.parent = parent;
  ev.channelId = channel;
  ev.pTimer = start;
  return ev;
}

// One KernelCh as NCCL's proxy reports it: start, record the stop time, stop.
inline bool runChannel(EventSink& sink, void* coll, uint8_t channel, uint64_t start, uint64_t stop) {
  void* h = sink.start(chanEvent(coll, channel, start));
  if (h == nullptr) return false;
  sink.recordState(h, kStateKernelChStop, stop);
  sink.stop(h);
  return true;
}

// Every started Coll is accounted for exactly once.
inline void expectBalanced(const EventSink& sink) {
  SinkCounters c = sink.counters();
  EXPECT_EQ(c.collsStarted,
            c.samplesEmitted + c.droppedRingFull + c.droppedIncomplete + c.unsampled + sink.collsInFlight());
}

}  // namespace wirewise::testing
