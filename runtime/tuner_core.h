// The tuner's one core entry point. Every tuner_vN shim converts NCCL's arguments into these types and
// calls here; nothing below this line knows which NCCL interface version called.
#pragma once

#include <cstddef>
#include <cstdint>

#include "adaptive/types.h"
#include "common/nccl/common.h"

namespace wirewise {

struct TunerInitArgs {
  int abiVersion = 5;     // which exported struct NCCL chose (2..7), for the log
  bool hasCommId = false; // v2..v4 get no commId: we then derive a per-process id (observe-only for agreement)
  uint64_t commId = 0;
  size_t nRanks = 0;
  size_t nNodes = 0;
  ncclDebugLogger_t logger = nullptr;
  // v5+ only; -1 otherwise.
  int nNvlDomains = -1, minRanksPerNvlDomain = -1, maxRanksPerNvlDomain = -1;
};

// Creates the comm's context (and the process-wide runtime on first use). Never fails because of
// configuration: bad settings or tables degrade to "keep NCCL's choice". Returns ncclSuccess unless
// memory could not be had, and then *context stays null.
ncclResult_t tunerInit(const TunerInitArgs& args, void** context) noexcept;

// Applies the table in force to NCCL's cost table. Never allocates, locks, logs or fails: on any
// doubt the table and *nChannels stay as NCCL set them. Always returns ncclSuccess.
ncclResult_t tunerGetCollInfo(void* context, const CollRequest& req, CostTableView table, int* nChannels) noexcept;

// One getChunkSize call (tuner v6+), converted. nBytes is what NCCL passes: for kernel collectives one
// channel's share of the collective (NCCL asks per share, with nChannels 1), for CollNet the whole.
struct ChunkRequest {
  int collType = 0;  // raw value from NCCL; validated by the core
  size_t nBytes = 0;
  int algo = -1, proto = -1;  // what NCCL runs
  int nChannels = 0;
};

// Answers from the table in force only, so that every rank answers the same: *chunkSize becomes the table's
// chunk size for (collType, nBytes) when it has one, its algorithm and protocol match what NCCL runs (kAny
// matches any) and, rounded down to the protocol's grain, it is at least one grain (below that NCCL would
// divide by zero). Otherwise NCCL's pre-filled value stays. Never allocates, locks, logs or fails.
ncclResult_t tunerGetChunkSize(void* context, const ChunkRequest& req, size_t* chunkSize) noexcept;

// Tears the comm down; the runtime goes when its last comm (tuner or profiler) does. Null-safe.
ncclResult_t tunerFinalize(void* context) noexcept;

}  // namespace wirewise
