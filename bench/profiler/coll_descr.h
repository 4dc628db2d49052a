// The Coll event descriptor both profiler benchmarks start: what NCCL 2.28 passes for a bf16 all-reduce
// of 256 Ki elements on the ring with the Simple protocol (static strings, as NCCL's are).
#pragma once

#include <cstdint>

#include "common/nccl/profiler.h"

namespace wirewise::bench {

inline ncclProfilerEventDescr_v5_t collDescr(uint8_t nChannels) {
  ncclProfilerEventDescr_v5_t d{};
  d.type = ncclProfileColl;
  d.coll.func = "AllReduce";
  d.coll.count = 1 << 18;
  d.coll.datatype = "ncclBfloat16";
  d.coll.nChannels = nChannels;
  d.coll.nWarps = 16;
  d.coll.algo = "RING";
  d.coll.proto = "SIMPLE";
  return d;
}

}  // namespace wirewise::bench
