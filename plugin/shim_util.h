// The conversions every shim shares: NCCL's arguments in, our types out. Templates over the descriptor
// type because v4 and v5 descriptors name the same fields at different offsets.
#pragma once

#include "adaptive/types.h"
#include "common/nccl/profiler.h"
#include "common/nccl/tuner.h"
#include "plugin/profiler_chain_shim.h"
#include "runtime/profiler_core.h"
#include "runtime/tuner_core.h"

namespace wirewise::shim {

// Our version-independent constants are NCCL's values (telemetry/prof_event.h cannot include NCCL's ABI).
static_assert(kEvColl == ncclProfileColl && kEvKernelCh == ncclProfileKernelCh && kEvProxyOp == ncclProfileProxyOp &&
              kEvProxyStep == ncclProfileProxyStep && kEvNetPlugin == ncclProfileNetPlugin &&
              kEvKernelLaunch == ncclProfileKernelLaunch && kEvCeColl == ncclProfileCeColl);
static_assert(kStateSendGpuWait == ncclProfilerProxyStepSendGPUWait &&
              kStateSendWait == ncclProfilerProxyStepSendWait && kStateRecvWait == ncclProfilerProxyStepRecvWait &&
              kStateRecvFlushWait == ncclProfilerProxyStepRecvFlushWait &&
              kStateRecvGpuWait == ncclProfilerProxyStepRecvGPUWait &&
              kStateSendPeerWait == ncclProfilerProxyStepSendPeerWait_v4 &&
              kStateKernelChStop == ncclProfilerKernelChStop);

// v2..v4 init: no commId, NVLink domains or constants.
inline ncclResult_t legacyTunerInit(int version, size_t nRanks, size_t nNodes, ncclDebugLogger_t log, void** context) {
  TunerInitArgs args;
  args.abiVersion = version;
  args.nRanks = nRanks;
  args.nNodes = nNodes;
  args.logger = log;
  return tunerInit(args, context);
}

// v5..v7 init: commId and NVLink domains (v6's and v7's domain info is v5's type). The constants are NCCL's
// own stand; we leave them as they are.
inline ncclResult_t nvlDomainTunerInit(int version, void** context, uint64_t commId, size_t nRanks, size_t nNodes,
                                       ncclDebugLogger_t log, const ncclNvlDomainInfo_v5_t* nvlDomainInfo) {
  TunerInitArgs args;
  args.abiVersion = version;
  args.hasCommId = true;
  args.commId = commId;
  args.nRanks = nRanks;
  args.nNodes = nNodes;
  args.logger = log;
  if (nvlDomainInfo != nullptr) {
    args.nNvlDomains = nvlDomainInfo->nNvlDomains;
    args.minRanksPerNvlDomain = nvlDomainInfo->minRanksPerNvlDomain;
    args.maxRanksPerNvlDomain = nvlDomainInfo->maxRanksPerNvlDomain;
  }
  return tunerInit(args, context);
}

// v6 and v7 getChunkSize.
inline ncclResult_t getChunkSize(void* context, ncclFunc_t collType, size_t nBytes, int algo, int proto,
                                 int nChannels, size_t* chunkSize) {
  return tunerGetChunkSize(context, {static_cast<int>(collType), nBytes, algo, proto, nChannels}, chunkSize);
}

// v3..v7 getCollInfo: collCostTable is a flat float[numAlgo][numProto] that NCCL casts to float**.
// Flattened: the core's hot path is inlined here (its rare paths are noinline), which saves the call,
// the request's trip through memory and a second prologue on every collective.
__attribute__((flatten)) inline ncclResult_t costTableGetCollInfo(void* context, ncclFunc_t collType, size_t nBytes,
                                                                  int /*numPipeOps*/, float** collCostTable,
                                                                  int numAlgo, int numProto, int /*regBuff*/,
                                                                  int* nChannels) {
  CostTableView table(reinterpret_cast<float*>(collCostTable), numAlgo, numProto);
  return tunerGetCollInfo(context, {static_cast<int>(collType), true, nBytes}, table, nChannels);
}

// v4, v5 and v6 profiler init take the same values (v4 in a different order).
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

// Every event but Coll and KernelCh (startEvent passes those on their own).
template <typename Descr>
ProfEvent toProfEvent(const Descr& d) {
  ProfEvent ev;
  ev.type = d.type;
  ev.parent = d.parentObj;
  ev.rank = d.rank;
  if (d.type == ncclProfileProxyOp) {
    ev.pid = static_cast<int>(d.proxyOp.pid);
    ev.channelId = d.proxyOp.channelId;
    ev.peer = d.proxyOp.peer;
    ev.nSteps = d.proxyOp.nSteps;
    ev.chunkSize = d.proxyOp.chunkSize;
    ev.isSend = d.proxyOp.isSend != 0;
  } else if (d.type == ncclProfileProxyStep) {
    ev.step = d.proxyStep.step;
  }
  if constexpr (requires { d.kernelLaunch.stream; }) {  // v5 and v6 descriptors
    if (d.type == ncclProfileKernelLaunch) ev.stream = d.kernelLaunch.stream;
  }
  return ev;
}

// The two events of every collective go straight to their own entry points: building a whole ProfEvent
// for them cost more instructions than the sink spends on them. Each kind has its own function, reached
// by a tail call, so that each saves only the registers it needs; the Coll and KernelCh ones are
// flattened, as getCollInfo is: the sink's hot path is inlined and reads NCCL's descriptor directly (its
// rare paths are noinline).
template <typename Descr>
[[gnu::noinline]] __attribute__((flatten)) ncclResult_t startCollEvent(void* context, void** eHandle, const Descr* d) {
  *eHandle = profilerStartColl(context, {.seqNumber = d->coll.seqNumber,
                                         .func = d->coll.func,
                                         .count = d->coll.count,
                                         .datatype = d->coll.datatype,
                                         .algo = d->coll.algo,
                                         .proto = d->coll.proto,
                                         .nChannels = d->coll.nChannels});
  return ncclSuccess;
}

template <typename Descr>
[[gnu::noinline]] __attribute__((flatten)) ncclResult_t startKernelChEvent(void* context, void** eHandle,
                                                                           const Descr* d) {
  *eHandle = profilerStartKernelCh(
      context, {.parent = d->parentObj, .pTimer = d->kernelCh.pTimer, .channelId = d->kernelCh.channelId});
  return ncclSuccess;
}

template <typename Descr>
[[gnu::noinline]] ncclResult_t startOtherEvent(void* context, void** eHandle, const Descr* d) {
  *eHandle = profilerStartEvent(context, toProfEvent(*d));
  return ncclSuccess;
}

template <typename Descr>
ncclResult_t startOwnEvent(void* context, void** eHandle, Descr* d) {
  if (d->type == ncclProfileColl) return startCollEvent(context, eHandle, d);
  if (d->type == ncclProfileKernelCh) return startKernelChEvent(context, eHandle, d);
  return startOtherEvent(context, eHandle, d);
}

// NCCL ignores the return values; success regardless.
template <typename Descr>
ncclResult_t startEvent(void* context, void** eHandle, Descr* d) {
  if (eHandle == nullptr) return ncclSuccess;
  if (d == nullptr) {
    *eHandle = nullptr;
    return ncclSuccess;
  }
  // A chained comm (WIREWISE_PROFILER_CHAIN) is told by its context's low bit: with chaining off, this
  // test is all it costs.
  if (chain::isChained(context)) [[unlikely]]
    return startChainedEvent(context, eHandle, d);
  return startOwnEvent(context, eHandle, d);
}

inline ncclResult_t stopEvent(void* eHandle) {
  profilerStopEvent(eHandle);
  return ncclSuccess;
}

// eStateArgs may be null (GroupApi states). We use KernelChStop's pTimer and the ProxyStep states'
// transSize (meaningful at SendWait and RecvFlushWait only: NCCL passes a stale size with the others).
inline ncclResult_t recordEventState(void* eHandle, ncclProfilerEventState_t eState,
                                     ncclProfilerEventStateArgs_v5_t* eStateArgs) {
  uint64_t arg = 0;
  if (eStateArgs != nullptr) {
    if (eState == ncclProfilerKernelChStop)
      arg = eStateArgs->kernelCh.pTimer;
    else if (eState == ncclProfilerProxyStepSendWait || eState == ncclProfilerProxyStepRecvFlushWait)
      arg = eStateArgs->proxyStep.transSize;
  }
  profilerRecordState(eHandle, static_cast<int>(eState), eStateArgs, arg);
  return ncclSuccess;
}

}  // namespace wirewise::shim
