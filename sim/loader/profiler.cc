// The profiler version shims of NCCL 2.28.9 (src/plugin/profiler/profiler_v{4,5}.cc) and 2.29+ (v6, and the
// v5 shim that drops copy-engine events). Facts: nccl-abi.md §4.1, §9.
#include <dlfcn.h>

#include <cstring>

#include "sim/loader/nccl_loader.h"

namespace wirewise::loader {
namespace {

const ncclProfiler_v6_t* v6(const void* s) { return static_cast<const ncclProfiler_v6_t*>(s); }
const ncclProfiler_v5_t* v5(const void* s) { return static_cast<const ncclProfiler_v5_t*>(s); }

static_assert(sizeof(ncclProfilerEventDescr_v5_t) == sizeof(ncclProfilerEventDescr_v6_t));

bool isCopyEngineType(uint64_t type) {
  return type == ncclProfileCeColl || type == ncclProfileCeSync || type == ncclProfileCeBatch;
}
bool isCopyEngineState(ncclProfilerEventState_t s) { return s >= ncclProfilerCeCollStart && s <= ncclProfilerCeBatchComplete; }
const ncclProfiler_v4_t* v4(const void* s) { return static_cast<const ncclProfiler_v4_t*>(s); }

// Builds the v4 descriptor NCCL's shim would pass; false when the v5 type has no v4 equivalent.
bool toV4(const ncclProfilerEventDescr_v5_t& d, ncclProfilerEventDescr_v4_t* out) {
  ncclProfilerEventDescr_v4_t o{};  // NCCL leaves unset fields as stack garbage; zero is the honest stand-in
  o.type = static_cast<uint8_t>(d.type);
  o.parentObj = d.parentObj;
  o.rank = d.rank;
  switch (d.type) {
    case ncclProfileGroup:
    case ncclProfileProxyCtrl:
      break;
    case ncclProfileColl:
      o.coll.seqNumber = d.coll.seqNumber;
      o.coll.func = d.coll.func;
      o.coll.sendBuff = d.coll.sendBuff;
      o.coll.recvBuff = d.coll.recvBuff;
      o.coll.count = d.coll.count;
      o.coll.root = d.coll.root;
      o.coll.datatype = d.coll.datatype;
      o.coll.nChannels = d.coll.nChannels;
      o.coll.nWarps = d.coll.nWarps;
      o.coll.algo = d.coll.algo;
      o.coll.proto = d.coll.proto;
      // v4 has no API events: a Coll's parent is its Group again.
      o.parentObj = d.coll.parentGroup;
      break;
    case ncclProfileP2p:
      o.p2p.func = d.p2p.func;
      o.p2p.buff = d.p2p.buff;
      o.p2p.count = d.p2p.count;
      o.p2p.datatype = d.p2p.datatype;
      o.p2p.peer = d.p2p.peer;  // NCCL's shim does not copy p2p.nChannels
      o.parentObj = d.p2p.parentGroup;
      break;
    case ncclProfileProxyOp:
      o.proxyOp.pid = d.proxyOp.pid;
      o.proxyOp.channelId = d.proxyOp.channelId;
      o.proxyOp.peer = d.proxyOp.peer;
      o.proxyOp.nSteps = d.proxyOp.nSteps;
      o.proxyOp.chunkSize = d.proxyOp.chunkSize;
      o.proxyOp.isSend = d.proxyOp.isSend;
      break;
    case ncclProfileProxyStep:
      o.proxyStep.step = d.proxyStep.step;
      break;
    case ncclProfileKernelCh:
      o.kernelCh.channelId = d.kernelCh.channelId;
      o.kernelCh.pTimer = d.kernelCh.pTimer;
      break;
    case ncclProfileNetPlugin:
      o.netPlugin.id = d.netPlugin.id;
      o.netPlugin.data = d.netPlugin.data;
      break;
    default:
      return false;
  }
  *out = o;
  return true;
}

// The state arguments NCCL's v4 shim forwards; false for states it swallows.
bool toV4(ncclProfilerEventState_t state, const ncclProfilerEventStateArgs_v5_t* args,
          ncclProfilerEventStateArgs_v4_t* out) {
  const ncclProfilerEventStateArgs_v5_t in = args != nullptr ? *args : ncclProfilerEventStateArgs_v5_t{};
  const ncclProfilerEventStateArgs_v5_t* a = &in;
  ncclProfilerEventStateArgs_v4_t o{};
  switch (state) {
    case ncclProfilerProxyOpInProgress_v4:
      break;
    case ncclProfilerProxyStepSendGPUWait:
    case ncclProfilerProxyStepSendPeerWait_v4:
    case ncclProfilerProxyStepSendWait:
    case ncclProfilerProxyStepRecvWait:
    case ncclProfilerProxyStepRecvFlushWait:
    case ncclProfilerProxyStepRecvGPUWait:
      o.proxyStep.transSize = a->proxyStep.transSize;
      break;
    case ncclProfilerNetPluginUpdate:
      o.netPlugin.data = a->netPlugin.data;
      break;
    case ncclProfilerKernelChStop:
      o.kernelCh.pTimer = a->kernelCh.pTimer;
      break;
    case ncclProfilerProxyCtrlIdle:
    case ncclProfilerProxyCtrlActive:
    case ncclProfilerProxyCtrlSleep:
    case ncclProfilerProxyCtrlWakeup:
    case ncclProfilerProxyCtrlAppend:
    case ncclProfilerProxyCtrlAppendEnd:
      o.proxyCtrl.appendedProxyOps = a->proxyCtrl.appendedProxyOps;
      break;
    default:
      return false;
  }
  *out = o;
  return true;
}

}  // namespace

int newestProfilerVersion(NcclRelease r) { return r == NcclRelease::V2_28 ? 5 : 6; }

std::unique_ptr<Profiler> Profiler::load(void* handle, std::string* why, NcclRelease release) {
  if (handle != nullptr) {
    if (newestProfilerVersion(release) >= 6)
      if (const void* s = dlsym(handle, "ncclProfiler_v6")) return std::unique_ptr<Profiler>(new Profiler(6, s));
    if (const void* s = dlsym(handle, "ncclProfiler_v5")) return std::unique_ptr<Profiler>(new Profiler(5, s));
    if (const void* s = dlsym(handle, "ncclProfiler_v4")) return std::unique_ptr<Profiler>(new Profiler(4, s));
    // NCCL 2.28.9 would go on to use these; this harness only speaks v5 and v4.
    for (const char* old : {"ncclProfiler_v3", "ncclProfiler_v2", "ncclProfiler_v1"}) {
      if (dlsym(handle, old) != nullptr) {
        if (why != nullptr) *why = std::string(old) + " found: NCCL 2.28.9 accepts it, this harness does not";
        return nullptr;
      }
    }
  }
  if (why != nullptr) *why = "no ncclProfiler_v5..v1 symbol: profiler plugin is unsupported";
  return nullptr;
}

std::unique_ptr<Profiler> Profiler::loadVersion(void* handle, int version, std::string* why) {
  // What an NCCL release that knows only this version would find: lets tests drive each exported struct.
  if (handle != nullptr && version >= 4 && version <= 6) {
    std::string symbol = "ncclProfiler_v" + std::to_string(version);
    if (const void* s = dlsym(handle, symbol.c_str())) return std::unique_ptr<Profiler>(new Profiler(version, s));
  }
  if (why != nullptr) *why = "no ncclProfiler_v" + std::to_string(version) + " symbol (this harness speaks v4 to v6)";
  return nullptr;
}

const char* Profiler::name() const { return *static_cast<const char* const*>(symbol_); }

ncclResult_t Profiler::init(void** context, uint64_t commId, int* eActivationMask, const char* commName, int nNodes,
                            int nRanks, int rank, ncclDebugLogger_t log) const {
  if (version_ == 6) return v6(symbol_)->init(context, commId, eActivationMask, commName, nNodes, nRanks, rank, log);
  if (version_ == 5) return v5(symbol_)->init(context, commId, eActivationMask, commName, nNodes, nRanks, rank, log);
  return v4(symbol_)->init(context, eActivationMask, commName, commId, nNodes, nRanks, rank, log);
}

ncclResult_t Profiler::startEvent(void* context, void** handle, ncclProfilerEventDescr_v6_t* descr) const {
  *handle = nullptr;
  if (version_ == 6) return v6(symbol_)->startEvent(context, handle, descr);
  if (isCopyEngineType(descr->type)) return ncclSuccess;
  ncclProfilerEventDescr_v5_t d5;  // every member v5 has sits where v5 has it (static_asserts in profiler.h)
  std::memcpy(&d5, descr, sizeof d5);
  return startEvent(context, handle, &d5);
}

ncclResult_t Profiler::startEvent(void* context, void** handle, ncclProfilerEventDescr_v5_t* descr) const {
  *handle = nullptr;
  if (version_ == 6) {
    ncclProfilerEventDescr_v6_t d6;
    std::memcpy(&d6, descr, sizeof d6);
    return v6(symbol_)->startEvent(context, handle, &d6);
  }
  if (version_ == 5) return v5(symbol_)->startEvent(context, handle, descr);
  ncclProfilerEventDescr_v4_t d4;
  if (!toV4(*descr, &d4)) return ncclSuccess;
  return v4(symbol_)->startEvent(context, handle, &d4);
}

ncclResult_t Profiler::stopEvent(void* handle) const {
  if (version_ == 6) return v6(symbol_)->stopEvent(handle);
  return version_ == 5 ? v5(symbol_)->stopEvent(handle) : v4(symbol_)->stopEvent(handle);
}

ncclResult_t Profiler::recordEventState(void* handle, ncclProfilerEventState_t state,
                                        ncclProfilerEventStateArgs_v5_t* args) const {
  if (version_ == 6) return v6(symbol_)->recordEventState(handle, state, args);
  if (isCopyEngineState(state)) return ncclSuccess;
  if (version_ == 5) return v5(symbol_)->recordEventState(handle, state, args);
  ncclProfilerEventStateArgs_v4_t a4;
  if (!toV4(state, args, &a4)) return ncclSuccess;
  return v4(symbol_)->recordEventState(handle, state, &a4);
}

ncclResult_t Profiler::finalize(void* context) const {
  if (version_ == 6) return v6(symbol_)->finalize(context);
  return version_ == 5 ? v5(symbol_)->finalize(context) : v4(symbol_)->finalize(context);
}

}  // namespace wirewise::loader
