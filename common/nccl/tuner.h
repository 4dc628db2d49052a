// wirewise's own declarations of NCCL's tuner plugin ABI, versions 2 to 5 (NCCL 2.28.9 tries v5, v4, v3, v2).
//
// Written from shared/research/nccl-abi.md §3 and §8; never copied from NCCL. Sizes and offsets below are
// the values measured by compiling NCCL v2.28.9-1's own headers.
#pragma once

#include <cstddef>
#include <cstdint>

#include "common/nccl/common.h"

#define NCCL_NUM_ALGORITHMS_V5 7
#define NCCL_NUM_PROTOCOLS_V5 3
#define NCCL_NUM_HW_LINKS_V5 3
#define NCCL_NUM_COMPCAPS_V5 4
#define NCCL_NUM_TUNING_SCALES_V5 3

extern "C" {

typedef struct {
  int nNvlDomains;            // number of NVLink domains
  int minRanksPerNvlDomain;   // fewest ranks in any NVLink domain
  int maxRanksPerNvlDomain;   // most ranks in any NVLink domain
} ncclNvlDomainInfo_v5_t;

// In/out at init: NCCL's default cost-model constants; a plugin may overwrite them for this comm.
typedef struct {
  double baseLatencies[NCCL_NUM_ALGORITHMS_V5][NCCL_NUM_PROTOCOLS_V5];                         // µs
  double hwLatencies[NCCL_NUM_HW_LINKS_V5][NCCL_NUM_ALGORITHMS_V5][NCCL_NUM_PROTOCOLS_V5];     // µs per hop
  double llMaxBws[NCCL_NUM_COMPCAPS_V5][NCCL_NUM_TUNING_SCALES_V5];                            // GB/s
  double perChMaxRingLL128Bws[NCCL_NUM_COMPCAPS_V5][NCCL_NUM_TUNING_SCALES_V5];
  double perChMaxTreeLL128Bws[NCCL_NUM_COMPCAPS_V5][NCCL_NUM_TUNING_SCALES_V5];
  double perChMaxTreeBws[NCCL_NUM_COMPCAPS_V5][NCCL_NUM_TUNING_SCALES_V5];
  double perChMaxNVLSTreeBws[NCCL_NUM_COMPCAPS_V5][NCCL_NUM_TUNING_SCALES_V5];
} ncclTunerConstants_v5_t;

// getCollInfo's collCostTable is really a flat float[numAlgo][numProto] cast to float**: never index it
// as float**. nChannels arrives set to 0, which means "keep NCCL's channel count".
typedef struct {
  const char* name;
  ncclResult_t (*init)(void** context, uint64_t commId, size_t nRanks, size_t nNodes, ncclDebugLogger_t logFunction,
                       ncclNvlDomainInfo_v5_t* nvlDomainInfo, ncclTunerConstants_v5_t* constants);
  ncclResult_t (*getCollInfo)(void* context, ncclFunc_t collType, size_t nBytes, int numPipeOps,
                              float** collCostTable, int numAlgo, int numProto, int regBuff, int* nChannels);
  ncclResult_t (*finalize)(void* context);
} ncclTuner_v5_t;

typedef struct {
  const char* name;
  // Unlike v5, the context is the *last* argument.
  ncclResult_t (*init)(size_t nRanks, size_t nNodes, ncclDebugLogger_t logFunction, void** context);
  ncclResult_t (*getCollInfo)(void* context, ncclFunc_t collType, size_t nBytes, int numPipeOps,
                              float** collCostTable, int numAlgo, int numProto, int regBuff, int* nChannels);
  ncclResult_t (*destroy)(void* context);
} ncclTuner_v4_t;

typedef struct {
  const char* name;
  ncclResult_t (*init)(size_t nRanks, size_t nNodes, ncclDebugLogger_t logFunction, void** context);
  // No regBuff.
  ncclResult_t (*getCollInfo)(void* context, ncclFunc_t collType, size_t nBytes, int numPipeOps,
                              float** collCostTable, int numAlgo, int numProto, int* nChannels);
  ncclResult_t (*destroy)(void* context);
} ncclTuner_v3_t;

typedef struct {
  const char* name;
  ncclResult_t (*init)(size_t nRanks, size_t nNodes, ncclDebugLogger_t logFunction, void** context);
  // No cost table: the plugin names one (algorithm, protocol); NCCL's v2 adapter zeroes that cell.
  ncclResult_t (*getCollInfo)(void* context, ncclFunc_t collType, size_t nBytes, int collNetSupport,
                              int nvlsSupport, int numPipeOps, int* algorithm, int* protocol, int* nChannels);
  ncclResult_t (*destroy)(void* context);
} ncclTuner_v2_t;

}  // extern "C"

static_assert(sizeof(ncclTuner_v5_t) == 32 && alignof(ncclTuner_v5_t) == 8);
static_assert(sizeof(ncclTuner_v4_t) == 32 && alignof(ncclTuner_v4_t) == 8);
static_assert(sizeof(ncclTuner_v3_t) == 32 && alignof(ncclTuner_v3_t) == 8);
static_assert(sizeof(ncclTuner_v2_t) == 32 && alignof(ncclTuner_v2_t) == 8);
static_assert(offsetof(ncclTuner_v5_t, init) == 8 && offsetof(ncclTuner_v5_t, getCollInfo) == 16 &&
              offsetof(ncclTuner_v5_t, finalize) == 24);
static_assert(sizeof(ncclTunerConstants_v5_t) == 1152 && alignof(ncclTunerConstants_v5_t) == 8);
static_assert(offsetof(ncclTunerConstants_v5_t, hwLatencies) == 168);
static_assert(offsetof(ncclTunerConstants_v5_t, llMaxBws) == 672);
static_assert(offsetof(ncclTunerConstants_v5_t, perChMaxNVLSTreeBws) == 1056);
static_assert(sizeof(ncclNvlDomainInfo_v5_t) == 12 && alignof(ncclNvlDomainInfo_v5_t) == 4);
