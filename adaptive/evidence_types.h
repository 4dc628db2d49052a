// What members tell the coordinator's policy at each boundary, in wirewise's own types (the control plane's
// wire format carries exactly these): completed collectives as the profiler measured them, and NCCL's own
// cost table for each (collective, size bucket) the first time the tuner saw it.
#pragma once

#include <atomic>
#include <cstdint>
#include <string>
#include <vector>

#include "adaptive/buckets.h"
#include "adaptive/types.h"

namespace wirewise::adapt {

// One collective as one rank measured it (GPU-timed KernelCh span). algo/proto/nChannels are what NCCL
// says it ran (the profiler's Coll event), so evidence is keyed by what actually happened, not by what
// the table asked for.
struct Sample {
  uint64_t seqNumber = 0;  // NCCL's per-collective-type sequence number: the same on every rank
  uint64_t bytes = 0;      // the tuner's nBytes
  uint32_t durationNs = 0;
  int8_t coll = -1, algo = -1, proto = -1;
  uint8_t nChannels = 0;
  // Per-channel summary of the KernelCh times (telemetry/event_sink.h), set only when some channel was
  // slow: bit c when channel c ran more than 1.2x the median channel's time, and the slowest channel's
  // time over the median's in 1/256 units (saturating). 0 and 0 otherwise, and wherever the profiler's
  // channel times are coarse (all equal).
  uint64_t slowChannels = 0;
  uint16_t slowRatioQ8 = 0;
  friend bool operator==(const Sample&, const Sample&) = default;
};

// NCCL's cost table (µs; < 0 or >= 3.6e9: disabled) for one (collective, bucket), taken at the first
// collective of that bucket. It tells the planner which entries NCCL allows and what NCCL predicts.
struct Sight {
  int8_t coll = -1;
  uint8_t bucket = 0;
  uint64_t bytes = 0;
  float cost[kNumAlgos][kNumProtos] = {};
  friend bool operator==(const Sight&, const Sight&) = default;
};

// A link the member's host sees as not healthy (from telemetry/collectors): the evidence that localises
// a slowdown ("node 3's mlx5_1 trained down to a quarter", "network latency rose on node 3's rail:eth1").
// Only unhealthy links travel. For rails, capacityRatio is the measured rate over the peer rails' median
// and errorsPerSec the retransmitted segments per second.
struct LinkNote {
  std::string link;             // "host/mlx5_1:1", "host/gpu0:nvlink3", at most kMaxLinkName bytes
  uint8_t state = 1;            // 1 degraded, 2 down
  float capacityRatio = 1;      // nominal / best nominal seen (1 = full speed)
  float errorsPerSec = 0;
  // Network latency, measured on the net plugin's own rails (0 = not measured): the smoothed RTT now and
  // its baseline (the minimum over a window of busy samples), in microseconds.
  float rttUs = 0;
  float baselineRttUs = 0;
  friend bool operator==(const LinkNote&, const LinkNote&) = default;
};
inline constexpr size_t kMaxLinkName = 64;

struct MemberEvidence {
  uint64_t memberId = 0;
  std::vector<Sample> samples;
  std::vector<Sight> sights;
  std::vector<LinkNote> links;
};

// Written once per slot by the thread that calls getCollInfo (state 0 -> 1 -> 2), read by the control
// plane's I/O thread (2 -> 3 once sent). Fixed size, allocated at tuner init: the hot path never allocates.
struct SightSlot {
  std::atomic<uint8_t> state{0};
  uint64_t bytes = 0;
  float cost[kNumAlgos][kNumProtos] = {};
};
struct SightTable {
  enum : uint8_t { kEmpty = 0, kWriting = 1, kReady = 2, kSent = 3 };
  SightSlot slots[kNumCollTypes * SizeBuckets::kCount];  // by collBucket(collective, bucket)
};

}  // namespace wirewise::adapt
