// The conversions every shim shares: NCCL's arguments in, our types out. Templates over the descriptor
// type because v4 and v5 descriptors name the same fields at different offsets.
#pragma once

#include "adaptive/types.h"
#include "plugin/nccl/profiler.h"
#include "plugin/nccl/tuner.h"
#include "runtime/profiler_core.h"
#include "runtime/tuner_core.h"

namespace wirewise::shim {

// v2..v4 init: no commId, NVLink domains or constants.
inline ncclResult_t legacyTunerInit(int version, size_t nRanks, size_t nNodes, ncclDebugLogger_t log, void** context) {
  TunerInitArgs args;
  args.abiVersion = version;
  args.nRanks = nRanks;
  args.nNodes = nNodes;
  args.logger = log;
  return tunerInit(args, context);
}

// v3..v5 getCollInfo: collCostTable is a flat float[numAlgo][numProto] that NCCL casts to float**.
inline ncclResult_t costTableGetCollInfo(void* context, ncclFunc_t collType, size_t nBytes, int numPipeOps,
                                         float** collCostTable, int numAlgo, int numProto, int regBuff,
                                         int* nChannels) {
  CostTableView table(reinterpret_cast<float*>(collCostTable), numAlgo, numProto);
  return tunerGetCollInfo(context, {static_cast<int>(collType), nBytes, numPipeOps, regBuff, true}, table, nChannels);
}

// v4 and v5 profiler init take the same values in a different order.
inline ncclResult_t profilerInitShim(int version, void** context, uint64_t commId, int* eActivationMask,
                                     const char* commName, int nNodes, int nRanks, int rank, ncclDebugLogger_t log) {
  ProfilerInitArgs args;
  args.abiVersion = version;
  args.commId = commId;
  args.activationMask = eActivationMask;
  args.commName = commName;
  args.nNodes = nNodes;
  args.nRanks = nRanks;
  args.rank = rank;
  args.logger = log;
  return profilerInit(args, context);
}

template <typename Descr>
ProfEvent toProfEvent(const Descr& d) {
  ProfEvent ev;
  ev.type = d.type;
  ev.parent = d.parentObj;
  ev.rank = d.rank;
  if (d.type == ncclProfileColl) {
    ev.seqNumber = d.coll.seqNumber;
    ev.func = d.coll.func;
    ev.count = d.coll.count;
    ev.datatype = d.coll.datatype;
    ev.nChannels = d.coll.nChannels;
    ev.algo = d.coll.algo;
    ev.proto = d.coll.proto;
  } else if (d.type == ncclProfileKernelCh) {
    ev.channelId = d.kernelCh.channelId;
    ev.pTimer = d.kernelCh.pTimer;
  }
  return ev;
}

template <typename Descr>
ncclResult_t startEvent(void* context, void** eHandle, Descr* d) {
  if (eHandle == nullptr) return ncclSuccess;
  *eHandle = d == nullptr ? nullptr : profilerStartEvent(context, toProfEvent(*d));
  return ncclSuccess;  // NCCL ignores these return values; success regardless
}

inline ncclResult_t stopEvent(void* eHandle) {
  profilerStopEvent(eHandle);
  return ncclSuccess;
}

// eStateArgs may be null (GroupApi states); only KernelChStop carries a value we use.
inline ncclResult_t recordEventState(void* eHandle, ncclProfilerEventState_t eState,
                                     ncclProfilerEventStateArgs_v5_t* eStateArgs) {
  uint64_t pTimer = (eState == ncclProfilerKernelChStop && eStateArgs != nullptr) ? eStateArgs->kernelCh.pTimer : 0;
  profilerRecordState(eHandle, static_cast<int>(eState), pTimer);
  return ncclSuccess;
}

}  // namespace wirewise::shim
