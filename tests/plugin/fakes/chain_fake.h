// What the counting fake profiler (chain_fake.cc) saw, for WIREWISE_PROFILER_CHAIN's tests: the library is
// loaded by wirewise; the test opens the same file (the dynamic loader hands back the same instance) and
// reads this record through chainFake().
#pragma once

#include <atomic>
#include <cstdint>

#include "common/nccl/common.h"

struct ChainFake {
  // Set by the test before an init.
  int maskToSet = 0;
  ncclResult_t initResult = ncclSuccess;
  bool throwAtInit = false;
  // Counted by the fake. Per event type: the index of its bit (ncclProfileColl = 1 << 1: index 1).
  std::atomic<uint64_t> inits[7];  // by the version of the entry point called
  std::atomic<uint64_t> finalizes, start[16], stop[16], record[16], states[32];
  std::atomic<uint64_t> parents;       // non-null parents that are handles this fake issued
  std::atomic<uint64_t> nullParents[16];
  std::atomic<uint64_t> badParents;    // a non-null parent this fake never issued
  std::atomic<uint64_t> groupParents, badGroupParents;  // v5/v6 coll.parentGroup
  std::atomic<uint64_t> badHandles;    // stop/record of a handle it never issued, or already stopped
  std::atomic<uint64_t> badContexts;   // a start with a context it never gave, or a wrong finalize
  std::atomic<uint64_t> lastKernelChStop;  // the pTimer of the last KernelChStop
  std::atomic<int> lastInitMask;       // what the mask pointer held when init returned
};

extern "C" ChainFake* chainFake();
extern "C" void chainFakeReset();
