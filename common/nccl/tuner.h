// wirewise's own declarations of NCCL's tuner plugin ABI, versions 2 to 7 (NCCL 2.28 tries v5..v2, 2.30 v6..v2,
// 2.32 v7..v2).
//
// Written from shared/research/nccl-abi.md §3, §8 and §9; never copied from NCCL. Sizes and offsets below are
// the values measured by compiling NCCL v2.28.9-1's own headers (v2..v5), v2.30.7-1's (v6), and §9's v7 row.
#pragma once

#include <cstddef>
#include <cstdint>

#include "common/nccl/common.h"

#define NCCL_NUM_ALGORITHMS_V5 7
#define NCCL_NUM_PROTOCOLS_V5 3
#define NCCL_NUM_HW_LINKS_V5 3
#define NCCL_NUM_COMPCAPS_V5 4
#define NCCL_NUM_TUNING_SCALES_V5 3
#define NCCL_NUM_COMPCAPS_V7 5  // v7 adds a row per table for one more compute capability

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

// v6 (NCCL 2.30+): v5's constants and domain info, v5's four members, then getChunkSize (may be null).
typedef ncclTunerConstants_v5_t ncclTunerConstants_v6_t;
typedef ncclNvlDomainInfo_v5_t ncclNvlDomainInfo_v6_t;

// Called after algorithm, protocol and channels are fixed, once per part of a collective NCCL schedules (for
// kernel collectives: each channel's share, with nChannels 1), with *chunkSize pre-filled with NCCL's own value.
// NCCL clamps the answer to its buffer's step, casts it to int and rounds it down to the protocol's grain (an
// answer below the grain becomes 0: a division by zero later). A non-success return fails the collective.
typedef ncclResult_t (*ncclTunerGetChunkSize_t)(void* context, ncclFunc_t collType, size_t nBytes, int algo,
                                                int proto, int nChannels, size_t* chunkSize);

typedef struct {
  const char* name;
  ncclResult_t (*init)(void** context, uint64_t commId, size_t nRanks, size_t nNodes, ncclDebugLogger_t logFunction,
                       ncclNvlDomainInfo_v6_t* nvlDomainInfo, ncclTunerConstants_v6_t* constants);
  ncclResult_t (*getCollInfo)(void* context, ncclFunc_t collType, size_t nBytes, int numPipeOps,
                              float** collCostTable, int numAlgo, int numProto, int regBuff, int* nChannels);
  ncclResult_t (*finalize)(void* context);
  ncclTunerGetChunkSize_t getChunkSize;
} ncclTuner_v6_t;

// v7 (NCCL 2.32): v6's members; only the constants grow (five compute-capability rows instead of four).
typedef ncclNvlDomainInfo_v5_t ncclNvlDomainInfo_v7_t;
typedef struct {
  double baseLatencies[NCCL_NUM_ALGORITHMS_V5][NCCL_NUM_PROTOCOLS_V5];
  double hwLatencies[NCCL_NUM_HW_LINKS_V5][NCCL_NUM_ALGORITHMS_V5][NCCL_NUM_PROTOCOLS_V5];
  double llMaxBws[NCCL_NUM_COMPCAPS_V7][NCCL_NUM_TUNING_SCALES_V5];
  double perChMaxRingLL128Bws[NCCL_NUM_COMPCAPS_V7][NCCL_NUM_TUNING_SCALES_V5];
  double perChMaxTreeLL128Bws[NCCL_NUM_COMPCAPS_V7][NCCL_NUM_TUNING_SCALES_V5];
  double perChMaxTreeBws[NCCL_NUM_COMPCAPS_V7][NCCL_NUM_TUNING_SCALES_V5];
  double perChMaxNVLSTreeBws[NCCL_NUM_COMPCAPS_V7][NCCL_NUM_TUNING_SCALES_V5];
} ncclTunerConstants_v7_t;

typedef struct {
  const char* name;
  ncclResult_t (*init)(void** context, uint64_t commId, size_t nRanks, size_t nNodes, ncclDebugLogger_t logFunction,
                       ncclNvlDomainInfo_v7_t* nvlDomainInfo, ncclTunerConstants_v7_t* constants);
  ncclResult_t (*getCollInfo)(void* context, ncclFunc_t collType, size_t nBytes, int numPipeOps,
                              float** collCostTable, int numAlgo, int numProto, int regBuff, int* nChannels);
  ncclResult_t (*finalize)(void* context);
  ncclTunerGetChunkSize_t getChunkSize;
} ncclTuner_v7_t;

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

static_assert(sizeof(ncclTuner_v7_t) == 40 && alignof(ncclTuner_v7_t) == 8);
static_assert(sizeof(ncclTuner_v6_t) == 40 && alignof(ncclTuner_v6_t) == 8);
static_assert(offsetof(ncclTuner_v6_t, finalize) == 24 && offsetof(ncclTuner_v6_t, getChunkSize) == 32);
static_assert(offsetof(ncclTuner_v7_t, finalize) == 24 && offsetof(ncclTuner_v7_t, getChunkSize) == 32);
static_assert(sizeof(ncclTunerConstants_v7_t) == 1272 && alignof(ncclTunerConstants_v7_t) == 8);
static_assert(offsetof(ncclTunerConstants_v7_t, llMaxBws) == 672 &&
              offsetof(ncclTunerConstants_v7_t, perChMaxRingLL128Bws) == 792 &&
              offsetof(ncclTunerConstants_v7_t, perChMaxTreeLL128Bws) == 912 &&
              offsetof(ncclTunerConstants_v7_t, perChMaxTreeBws) == 1032 &&
              offsetof(ncclTunerConstants_v7_t, perChMaxNVLSTreeBws) == 1152);
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
