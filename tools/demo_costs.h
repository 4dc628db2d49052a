// The illustrative cost table `wirewise demo` hands the plugin. It is NOT NCCL's cost model: a plain
// latency + bytes / bandwidth per (algorithm, protocol), shaped so that NCCL's minimum moves from
// low-latency to high-bandwidth choices as sizes grow, with the entries NCCL disables marked -1.
#pragma once

#include <cstdint>

#include "common/nccl/common.h"

namespace wirewise::tools {

using DemoTable = float[NCCL_NUM_ALGORITHMS][NCCL_NUM_PROTOCOLS];

// One line saying what the table is, for the demo's header.
const char* illustrativeTableNote();

// Fills t (µs) for collective coll (0..4) of nBytes on nRanks ranks over nNodes nodes. NVLS, NVLS tree,
// CollNet and PAT are -1 (disabled); tree exists only for allreduce; allreduce tree/LL128 and allgather
// ring/LL are disabled too, so that rules asking for them show NCCL's choice standing.
void illustrativeCostTable(int coll, uint64_t nBytes, int nRanks, int nNodes, DemoTable t);

}  // namespace wirewise::tools
