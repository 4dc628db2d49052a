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
};

}  // namespace wirewise
