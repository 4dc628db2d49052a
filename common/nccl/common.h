// wirewise's own declarations of the types NCCL 2.28 shares between its plugin kinds.
//
// Written from the facts in shared/research/nccl-abi.md §1 (NCCL v2.28.9-1); never copied from NCCL.
// Values are pinned by static_assert so a typo cannot silently change the ABI.
#pragma once

#include <cstddef>
#include <cstdint>

extern "C" {

// nccl.h: return codes. Only ncclSuccess ever leaves getCollInfo and the profiler callbacks.
typedef enum : int {
  ncclSuccess = 0,
  ncclUnhandledCudaError = 1,
  ncclSystemError = 2,
  ncclInternalError = 3,
  ncclInvalidArgument = 4,
  ncclInvalidUsage = 5,
  ncclRemoteError = 6,
  ncclInProgress = 7,
  ncclNumResults = 8
} ncclResult_t;

// nccl_common.h: log levels (an int-sized enum) and subsystem bit flags.
typedef enum : int {
  NCCL_LOG_NONE = 0,
  NCCL_LOG_VERSION = 1,
  NCCL_LOG_WARN = 2,
  NCCL_LOG_INFO = 3,
  NCCL_LOG_ABORT = 4,
  NCCL_LOG_TRACE = 5
} ncclDebugLogLevel;

typedef enum : int {
  NCCL_INIT = 0x1,
  NCCL_COLL = 0x2,
  NCCL_P2P = 0x4,
  NCCL_SHM = 0x8,
  NCCL_NET = 0x10,
  NCCL_GRAPH = 0x20,
  NCCL_TUNING = 0x40,
  NCCL_ENV = 0x80,
  NCCL_ALLOC = 0x100,
  NCCL_CALL = 0x200,
  NCCL_PROXY = 0x400,
  NCCL_NVLS = 0x800,
  NCCL_BOOTSTRAP = 0x1000,
  NCCL_REG = 0x2000,
  NCCL_PROFILE = 0x4000,
  NCCL_RAS = 0x8000
} ncclDebugLogSubSys;

// printf-style and variadic; NCCL passes its own ncclDebugLog.
typedef void (*ncclDebugLogger_t)(ncclDebugLogLevel level, unsigned long flags, const char* file, int line,
                                  const char* fmt, ...);

// nccl_common.h: collective kinds. The tuner only ever sees 0..4 (NCCL_NUM_FUNCTIONS = 5).
typedef enum : int {
  ncclFuncBroadcast = 0,
  ncclFuncReduce = 1,
  ncclFuncAllGather = 2,
  ncclFuncReduceScatter = 3,
  ncclFuncAllReduce = 4,
  ncclFuncSendRecv = 5,
  ncclFuncSend = 6,
  ncclFuncRecv = 7,
  ncclFuncAlltoAll = 8,
  ncclFuncScatter = 9,
  ncclFuncGather = 10,
  ncclNumFuncs = 11
} ncclFunc_t;

}  // extern "C"

// nccl_tuner.h: algorithm and protocol indices into the cost table.
#define NCCL_ALGO_UNDEF -1
#define NCCL_ALGO_TREE 0
#define NCCL_ALGO_RING 1
#define NCCL_ALGO_COLLNET_DIRECT 2
#define NCCL_ALGO_COLLNET_CHAIN 3
#define NCCL_ALGO_NVLS 4
#define NCCL_ALGO_NVLS_TREE 5
#define NCCL_ALGO_PAT 6
#define NCCL_NUM_ALGORITHMS 7

#define NCCL_PROTO_UNDEF -1
#define NCCL_PROTO_LL 0
#define NCCL_PROTO_LL128 1
#define NCCL_PROTO_SIMPLE 2
#define NCCL_NUM_PROTOCOLS 3

// A double literal that NCCL compares against float entries: "this combination is disabled".
#define NCCL_ALGO_PROTO_IGNORE -1.0

#define NCCL_HW_NVLINK 0
#define NCCL_HW_PCI 1
#define NCCL_HW_NET 2

// NCCL's enums are int-sized C enums. Ours name int as their underlying type, so that any value NCCL (or a
// fuzzer) passes is a valid value of the type: without it a value outside the enumerators' range would be
// undefined behaviour to load (UBSan's -fsanitize=enum), and the core would have nothing sound to check.
static_assert(sizeof(ncclResult_t) == 4 && sizeof(ncclDebugLogLevel) == 4 && sizeof(ncclFunc_t) == 4,
              "NCCL passes these enums as int");
static_assert(ncclNumResults == 8 && ncclFuncAllReduce == 4 && ncclNumFuncs == 11, "enum values per NCCL 2.28.9");
