// wirewise's own declarations of NCCL's profiler plugin ABI, versions 4 to 6 (NCCL 2.28 tries v5 first, 2.29 to
// 2.32 v6; 2.32's v7 is left out until a tagged release confirms its layout).
//
// Written from shared/research/nccl-abi.md §4, §8 and §9; never copied from NCCL. Sizes and offsets below are
// the values measured by compiling NCCL v2.28.9-1's own headers (v4, v5) and v2.30.7-1's (v6).
#pragma once

#include <sys/types.h>

#include <cstddef>
#include <cstdint>

#include "common/nccl/common.h"

// Event type bits (nccl_profiler.h). v4 knows only the first eight, v5 the first twelve.
enum {
  ncclProfileGroup = (1 << 0),
  ncclProfileColl = (1 << 1),
  ncclProfileP2p = (1 << 2),
  ncclProfileProxyOp = (1 << 3),
  ncclProfileProxyStep = (1 << 4),
  ncclProfileProxyCtrl = (1 << 5),
  ncclProfileKernelCh = (1 << 6),
  ncclProfileNetPlugin = (1 << 7),
  ncclProfileGroupApi = (1 << 8),
  ncclProfileCollApi = (1 << 9),
  ncclProfileP2pApi = (1 << 10),
  ncclProfileKernelLaunch = (1 << 11),
  ncclProfileCeColl = (1 << 12),   // v6: a collective NCCL runs on copy engines (no kernel, no KernelCh)
  ncclProfileCeSync = (1 << 13),   // v6: its synchronisation, a child of CeColl
  ncclProfileCeBatch = (1 << 14),  // v6: one batch of its copies, a child of CeColl
};

extern "C" {

// Same values for v1..v5. Names of 23/24 differ between NCCL's own files; only the numbers matter.
typedef enum : int {
  ncclProfilerProxyOpSendPosted = 0,  // 0..7 deprecated since v4
  ncclProfilerProxyOpSendRemFifoWait = 1,
  ncclProfilerProxyOpSendTransmitted = 2,
  ncclProfilerProxyOpSendDone = 3,
  ncclProfilerProxyOpRecvPosted = 4,
  ncclProfilerProxyOpRecvReceived = 5,
  ncclProfilerProxyOpRecvTransmitted = 6,
  ncclProfilerProxyOpRecvDone = 7,
  ncclProfilerProxyStepSendGPUWait = 8,
  ncclProfilerProxyStepSendWait = 9,
  ncclProfilerProxyStepRecvWait = 10,
  ncclProfilerProxyStepRecvFlushWait = 11,
  ncclProfilerProxyStepRecvGPUWait = 12,
  ncclProfilerProxyCtrlIdle = 13,
  ncclProfilerProxyCtrlActive = 14,
  ncclProfilerProxyCtrlSleep = 15,
  ncclProfilerProxyCtrlWakeup = 16,
  ncclProfilerProxyCtrlAppend = 17,
  ncclProfilerProxyCtrlAppendEnd = 18,
  ncclProfilerProxyOpInProgress_v4 = 19,
  ncclProfilerProxyStepSendPeerWait_v4 = 20,
  ncclProfilerNetPluginUpdate = 21,
  ncclProfilerKernelChStop = 22,
  ncclProfilerGroupStartApiStop = 23,
  ncclProfilerGroupEndApiStart = 24,
  ncclProfilerCeCollStart = 25,  // 25..30: v6 only
  ncclProfilerCeCollComplete = 26,
  ncclProfilerCeSyncStart = 27,
  ncclProfilerCeSyncComplete = 28,
  ncclProfilerCeBatchStart = 29,
  ncclProfilerCeBatchComplete = 30,
} ncclProfilerEventState_t;

typedef ncclProfilerEventState_t ncclProfilerEventState_v4_t;
typedef ncclProfilerEventState_t ncclProfilerEventState_v5_t;
typedef ncclProfilerEventState_t ncclProfilerEventState_v6_t;

typedef struct {
  uint64_t type;    // one ncclProfile* bit (uint8_t in v4)
  void* parentObj;  // the parent's handle as this plugin returned it; may be NULL
  int rank;         // originating rank
  union {
    struct {
      bool graphCaptured;
      int groupDepth;
    } groupApi;
    struct {
      const char* func;
      size_t count;
      const char* datatype;
      int root;
      void* stream;
      bool graphCaptured;
    } collApi;
    struct {
      const char* func;
      size_t count;
      const char* datatype;
      void* stream;
      bool graphCaptured;
    } p2pApi;
    struct {
      void* stream;
    } kernelLaunch;
    struct {
      uint64_t seqNumber;  // per collective type, not per communicator
      const char* func;
      void const* sendBuff;
      void* recvBuff;
      size_t count;  // elements
      int root;
      const char* datatype;
      uint8_t nChannels;
      uint8_t nWarps;
      const char* algo;
      const char* proto;
      void* parentGroup;
    } coll;
    struct {
      const char* func;
      void* buff;
      const char* datatype;
      size_t count;
      int peer;
      uint8_t nChannels;
      void* parentGroup;
    } p2p;
    struct {
      pid_t pid;  // under PXN another process's proxy may report; check before touching parentObj
      uint8_t channelId;
      int peer;
      int nSteps;
      int chunkSize;
      int isSend;
    } proxyOp;
    struct {
      int step;
    } proxyStep;
    struct {
      uint8_t channelId;
      uint64_t pTimer;  // start, GPU %globaltimer ns
    } kernelCh;
    struct {
      int64_t id;
      void* data;
    } netPlugin;
  };
} ncclProfilerEventDescr_v5_t;

typedef union {
  struct {
    size_t transSize;
  } proxyStep;
  struct {
    int appendedProxyOps;
  } proxyCtrl;
  struct {
    void* data;
  } netPlugin;
  struct {
    uint64_t pTimer;  // stop, GPU %globaltimer ns
  } kernelCh;
} ncclProfilerEventStateArgs_v5_t;

typedef struct {
  const char* name;
  // *eActivationMask points at one process-global int that NCCL reads atomically on every event.
  ncclResult_t (*init)(void** context, uint64_t commId, int* eActivationMask, const char* commName, int nNodes,
                       int nranks, int rank, ncclDebugLogger_t logfn);
  ncclResult_t (*startEvent)(void* context, void** eHandle, ncclProfilerEventDescr_v5_t* eDescr);
  ncclResult_t (*stopEvent)(void* eHandle);
  ncclResult_t (*recordEventState)(void* eHandle, ncclProfilerEventState_v5_t eState,
                                   ncclProfilerEventStateArgs_v5_t* eStateArgs);
  ncclResult_t (*finalize)(void* context);
} ncclProfiler_v5_t;

// v6 (NCCL 2.29+): v5's descriptor, same size, with three copy-engine members added to the union.
typedef struct {
  uint64_t type;
  void* parentObj;
  int rank;
  union {
    struct {
      bool graphCaptured;
      int groupDepth;
    } groupApi;
    struct {
      const char* func;
      size_t count;
      const char* datatype;
      int root;
      void* stream;
      bool graphCaptured;
    } collApi;
    struct {
      const char* func;
      size_t count;
      const char* datatype;
      void* stream;
      bool graphCaptured;
    } p2pApi;
    struct {
      void* stream;
    } kernelLaunch;
    struct {
      uint64_t seqNumber;
      const char* func;
      void const* sendBuff;
      void* recvBuff;
      size_t count;
      int root;
      const char* datatype;
      uint8_t nChannels;
      uint8_t nWarps;
      const char* algo;
      const char* proto;
      void* parentGroup;
    } coll;
    struct {
      const char* func;
      void* buff;
      const char* datatype;
      size_t count;
      int peer;
      uint8_t nChannels;
      void* parentGroup;
    } p2p;
    struct {
      pid_t pid;
      uint8_t channelId;
      int peer;
      int nSteps;
      int chunkSize;
      int isSend;
    } proxyOp;
    struct {
      int step;
    } proxyStep;
    struct {
      uint8_t channelId;
      uint64_t pTimer;
    } kernelCh;
    struct {
      int64_t id;
      void* data;
    } netPlugin;
    // Started and stopped on the host around the launch of the copies (NCCL 2.30 ce_coll.cc): its times bracket
    // the enqueue, not the copies' execution, so they are no measure of the collective.
    struct {
      uint64_t seqNumber;
      const char* func;
      void const* sendBuff;
      void* recvBuff;
      size_t count;
      int root;
      const char* datatype;
      const char* syncStrategy;  // "MC" (NVLS multicast) or "UC"
      bool intraBatchSync;
      uint32_t batchSize;
      uint32_t numBatches;
      uint32_t ceSeqNum;
      void* stream;
    } ceColl;
    struct {
      bool isComplete;
      int nRanks;
    } ceCollSync;
    struct {
      int numOps;
      size_t totalBytes;
      bool useIntraSync;
    } ceCollBatch;
  };
} ncclProfilerEventDescr_v6_t;

typedef ncclProfilerEventStateArgs_v5_t ncclProfilerEventStateArgs_v6_t;

typedef struct {
  const char* name;
  ncclResult_t (*init)(void** context, uint64_t commId, int* eActivationMask, const char* commName, int nNodes,
                       int nranks, int rank, ncclDebugLogger_t logfn);
  ncclResult_t (*startEvent)(void* context, void** eHandle, ncclProfilerEventDescr_v6_t* eDescr);
  ncclResult_t (*stopEvent)(void* eHandle);
  ncclResult_t (*recordEventState)(void* eHandle, ncclProfilerEventState_v6_t eState,
                                   ncclProfilerEventStateArgs_v6_t* eStateArgs);
  ncclResult_t (*finalize)(void* context);
} ncclProfiler_v6_t;

typedef struct {
  uint8_t type;  // uint64_t from v5 on
  void* parentObj;
  int rank;
  union {
    struct {
      uint64_t seqNumber;
      const char* func;
      void const* sendBuff;
      void* recvBuff;
      size_t count;
      int root;
      const char* datatype;
      uint8_t nChannels;
      uint8_t nWarps;
      const char* algo;
      const char* proto;
    } coll;
    struct {
      const char* func;
      void* buff;
      const char* datatype;
      size_t count;
      int peer;
      uint8_t nChannels;
    } p2p;
    struct {
      pid_t pid;
      uint8_t channelId;
      int peer;
      int nSteps;
      int chunkSize;
      int isSend;
    } proxyOp;
    struct {
      int step;
    } proxyStep;
    struct {
      uint8_t channelId;
      uint64_t pTimer;
    } kernelCh;
    struct {
      int64_t id;
      void* data;
    } netPlugin;
  };
} ncclProfilerEventDescr_v4_t;

typedef ncclProfilerEventStateArgs_v5_t ncclProfilerEventStateArgs_v4_t;

typedef struct {
  const char* name;
  // Argument order differs from v5: mask before commName, commHash after it.
  ncclResult_t (*init)(void** context, int* eActivationMask, const char* commName, uint64_t commHash, int nNodes,
                       int nranks, int rank, ncclDebugLogger_t logfn);
  ncclResult_t (*startEvent)(void* context, void** eHandle, ncclProfilerEventDescr_v4_t* eDescr);
  ncclResult_t (*stopEvent)(void* eHandle);
  ncclResult_t (*recordEventState)(void* eHandle, ncclProfilerEventState_v4_t eState,
                                   ncclProfilerEventStateArgs_v4_t* eStateArgs);
  ncclResult_t (*finalize)(void* context);
} ncclProfiler_v4_t;

}  // extern "C"

static_assert(sizeof(ncclProfiler_v6_t) == 48 && alignof(ncclProfiler_v6_t) == 8);
static_assert(sizeof(ncclProfilerEventDescr_v6_t) == 112 && alignof(ncclProfilerEventDescr_v6_t) == 8);
static_assert(offsetof(ncclProfilerEventDescr_v6_t, ceColl.seqNumber) == 24 &&
              offsetof(ncclProfilerEventDescr_v6_t, ceColl.count) == 56 &&
              offsetof(ncclProfilerEventDescr_v6_t, ceColl.datatype) == 72 &&
              offsetof(ncclProfilerEventDescr_v6_t, ceColl.syncStrategy) == 80 &&
              offsetof(ncclProfilerEventDescr_v6_t, ceColl.intraBatchSync) == 88 &&
              offsetof(ncclProfilerEventDescr_v6_t, ceColl.batchSize) == 92 &&
              offsetof(ncclProfilerEventDescr_v6_t, ceColl.numBatches) == 96 &&
              offsetof(ncclProfilerEventDescr_v6_t, ceColl.ceSeqNum) == 100 &&
              offsetof(ncclProfilerEventDescr_v6_t, ceColl.stream) == 104);
static_assert(offsetof(ncclProfilerEventDescr_v6_t, ceCollSync.nRanks) == 28 &&
              offsetof(ncclProfilerEventDescr_v6_t, ceCollBatch.totalBytes) == 32 &&
              offsetof(ncclProfilerEventDescr_v6_t, ceCollBatch.useIntraSync) == 40);
// Every member v5 has sits where v5 has it: a v5 descriptor is a v6 one without the copy-engine members.
static_assert(offsetof(ncclProfilerEventDescr_v6_t, coll.algo) == offsetof(ncclProfilerEventDescr_v5_t, coll.algo) &&
              offsetof(ncclProfilerEventDescr_v6_t, coll.parentGroup) ==
                  offsetof(ncclProfilerEventDescr_v5_t, coll.parentGroup) &&
              offsetof(ncclProfilerEventDescr_v6_t, kernelCh.pTimer) ==
                  offsetof(ncclProfilerEventDescr_v5_t, kernelCh.pTimer) &&
              offsetof(ncclProfilerEventDescr_v6_t, proxyOp.isSend) ==
                  offsetof(ncclProfilerEventDescr_v5_t, proxyOp.isSend) &&
              offsetof(ncclProfilerEventDescr_v6_t, p2p.parentGroup) ==
                  offsetof(ncclProfilerEventDescr_v5_t, p2p.parentGroup) &&
              offsetof(ncclProfilerEventDescr_v6_t, collApi.graphCaptured) ==
                  offsetof(ncclProfilerEventDescr_v5_t, collApi.graphCaptured));
static_assert(sizeof(ncclProfiler_v5_t) == 48 && alignof(ncclProfiler_v5_t) == 8);
static_assert(sizeof(ncclProfiler_v4_t) == 48 && alignof(ncclProfiler_v4_t) == 8);
static_assert(sizeof(ncclProfilerEventDescr_v5_t) == 112 && alignof(ncclProfilerEventDescr_v5_t) == 8);
static_assert(sizeof(ncclProfilerEventDescr_v4_t) == 104 && alignof(ncclProfilerEventDescr_v4_t) == 8);
static_assert(sizeof(ncclProfilerEventStateArgs_v5_t) == 8 && sizeof(ncclProfilerEventStateArgs_v4_t) == 8);
static_assert(sizeof(ncclProfilerEventState_t) == 4);
static_assert(offsetof(ncclProfilerEventDescr_v5_t, parentObj) == 8);
static_assert(offsetof(ncclProfilerEventDescr_v5_t, rank) == 16);
static_assert(offsetof(ncclProfilerEventDescr_v5_t, coll) == 24);
static_assert(offsetof(ncclProfilerEventDescr_v5_t, coll.seqNumber) == 24);
static_assert(offsetof(ncclProfilerEventDescr_v5_t, coll.count) == 56);
static_assert(offsetof(ncclProfilerEventDescr_v5_t, coll.nChannels) == 80);
static_assert(offsetof(ncclProfilerEventDescr_v5_t, coll.algo) == 88);
static_assert(offsetof(ncclProfilerEventDescr_v5_t, coll.proto) == 96);
static_assert(offsetof(ncclProfilerEventDescr_v5_t, coll.parentGroup) == 104);
static_assert(offsetof(ncclProfilerEventDescr_v5_t, kernelLaunch.stream) == 24);  // v5 only: v4 has no KernelLaunch
static_assert(offsetof(ncclProfilerEventDescr_v5_t, kernelCh.channelId) == 24);
static_assert(offsetof(ncclProfilerEventDescr_v5_t, kernelCh.pTimer) == 32);
static_assert(offsetof(ncclProfilerEventDescr_v5_t, proxyOp.channelId) == 28);
static_assert(offsetof(ncclProfilerEventDescr_v5_t, proxyOp.peer) == 32);
static_assert(offsetof(ncclProfilerEventDescr_v5_t, proxyOp.nSteps) == 36);
static_assert(offsetof(ncclProfilerEventDescr_v5_t, proxyOp.chunkSize) == 40);
static_assert(offsetof(ncclProfilerEventDescr_v5_t, proxyOp.isSend) == 44);
static_assert(offsetof(ncclProfilerEventDescr_v4_t, parentObj) == 8);
static_assert(offsetof(ncclProfilerEventDescr_v4_t, rank) == 16);
static_assert(offsetof(ncclProfilerEventDescr_v4_t, coll.seqNumber) == 24);
static_assert(offsetof(ncclProfilerEventDescr_v4_t, coll.nChannels) == 80);
static_assert(offsetof(ncclProfilerEventDescr_v4_t, coll.algo) == 88);
static_assert(offsetof(ncclProfilerEventDescr_v4_t, kernelCh.pTimer) == 32);
