// A deliberately broken tuner plugin: each context gets its own number at init (a process-wide counter), and
// getCollInfo asks for a channel count that depends on it, so ranks of one communicator disagree. It exists
// only to prove the driver's consistency checker counts divergences.
#include <atomic>
#include <cstdint>

#include "common/nccl/tuner.h"

namespace {

std::atomic<int> gContexts{0};

ncclResult_t initFn(void** context, uint64_t, size_t, size_t, ncclDebugLogger_t, ncclNvlDomainInfo_v5_t*,
                    ncclTunerConstants_v5_t*) {
  *context = reinterpret_cast<void*>(static_cast<intptr_t>(gContexts.fetch_add(1) + 1));
  return ncclSuccess;
}

ncclResult_t getCollInfoFn(void* context, ncclFunc_t, size_t, int, float**, int, int, int, int* nChannels) {
  *nChannels = 1 + static_cast<int>(reinterpret_cast<intptr_t>(context) % 2);
  return ncclSuccess;
}

ncclResult_t finalizeFn(void*) { return ncclSuccess; }

}  // namespace

extern "C" __attribute__((visibility("default"))) const ncclTuner_v5_t ncclTunerPlugin_v5 = {
    "divergent", initFn, getCollInfoFn, finalizeFn};
