// The tuner's one core entry point. Every tuner_vN shim converts NCCL's arguments into these types and
// calls here; nothing below this line knows which NCCL interface version called.
#pragma once

#include <cstddef>
#include <cstdint>

#include "adaptive/types.h"
#include "common/nccl/common.h"

namespace wirewise {

struct TunerInitArgs {
  int abiVersion = 5;     // which exported struct NCCL chose (2..5), for the log
  bool hasCommId = false; // v2..v4 get no commId: we then derive a per-process id (observe-only for agreement)
  uint64_t commId = 0;
  size_t nRanks = 0;
  size_t nNodes = 0;
  ncclDebugLogger_t logger = nullptr;
  // v5 only; null otherwise.
  int nNvlDomains = -1, minRanksPerNvlDomain = -1, maxRanksPerNvlDomain = -1;
};

// Creates the comm's context (and the process-wide runtime on first use). Never fails because of
// configuration: bad settings or tables degrade to "keep NCCL's choice". Returns ncclSuccess unless
// memory could not be had, and then *context stays null.
ncclResult_t tunerInit(const TunerInitArgs& args, void** context) noexcept;

// Applies the table in force to NCCL's cost table. Never allocates, locks, logs or fails: on any
// doubt the table and *nChannels stay as NCCL set them. Always returns ncclSuccess.
ncclResult_t tunerGetCollInfo(void* context, const CollRequest& req, CostTableView table, int* nChannels) noexcept;

// Tears the comm down; the runtime goes when its last comm (tuner or profiler) does. Null-safe.
ncclResult_t tunerFinalize(void* context) noexcept;

}  // namespace wirewise
