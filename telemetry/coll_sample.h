// One completed collective as measured by the profiler face: GPU-timed, per rank.
#pragma once

#include <cstdint>

namespace wirewise {

struct CollSample {
  uint64_t seqNumber = 0;   // NCCL's per-collective-type sequence number
  // This comm's Coll events started before this one (dropped ones included): NCCL starts them in the order
  // it asked the tuner, so this equals the tuner's collective index and locates the sample between boundaries.
  uint64_t collIndex = 0;
  uint64_t bytes = 0;       // count x sizeof(datatype) (x nRanks for AllGather/ReduceScatter): the tuner's nBytes
  uint64_t durationNs = 0;  // max over channels of (KernelCh stop - start), GPU timer
  int8_t coll = -1;         // CollType value, -1 if unknown
  int8_t algo = -1;         // NCCL_ALGO_* index, -1 if unknown
  int8_t proto = -1;        // NCCL_PROTO_* index, -1 if unknown
  uint8_t nChannels = 0;
  // Channels that ran more than kSlowChannelFactor x the median channel (bit = channelId < 64), and the
  // slowest over the median channel time x 256 (saturating at 65535); both 0 unless a channel was slow.
  uint64_t slowChannels = 0;
  uint16_t slowRatioQ8 = 0;
};

// One completed collective as the profiler records it on NCCL's thread: NCCL's own strings and element
// count, not yet resolved (EventSink::drain resolves them into a CollSample on the consumer's thread, so
// that NCCL's thread never compares a string). The strings are NCCL's static ones (ncclFuncToString and
// the like): they outlive every record.
struct CollRecord {
  uint64_t seqNumber = 0;
  uint64_t collIndex = 0;
  uint64_t count = 0;  // elements, per rank for AllGather/ReduceScatter
  const char* func = nullptr;
  const char* datatype = nullptr;
  const char* algo = nullptr;
  const char* proto = nullptr;
  uint64_t durationNs = 0;
  uint64_t slowChannels = 0;
  uint16_t slowRatioQ8 = 0;
  uint8_t nChannels = 0;
};

// A channel is slow when its time exceeds the median channel's by this factor: well above the spread of
// a healthy kernel's channels, well below what a shared degraded NIC does (2x and more).
inline constexpr double kSlowChannelFactor = 1.2;

}  // namespace wirewise
