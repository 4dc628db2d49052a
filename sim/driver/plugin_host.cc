#include "sim/driver/plugin_host.h"

#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <stdexcept>

namespace wirewise::sim {
namespace {

std::string deriveProfilerPath(const std::string& tunerPath) {
  const size_t slash = tunerPath.rfind('/');
  if (slash == std::string::npos) return tunerPath;  // a bare name: NCCL's search rules apply to both
  const std::string link = tunerPath.substr(0, slash) + "/libnccl-profiler-wirewise.so";
  struct stat st {};
  return ::stat(link.c_str(), &st) == 0 ? link : tunerPath;
}

}  // namespace

const char* ncclFuncString(CollType c) {
  switch (c) {
    case CollType::Broadcast: return "Broadcast";
    case CollType::Reduce: return "Reduce";
    case CollType::AllGather: return "AllGather";
    case CollType::ReduceScatter: return "ReduceScatter";
    case CollType::AllReduce: return "AllReduce";
  }
  return "Unknown";
}

const char* ncclAlgoString(int algo) {
  static const char* const kNames[kNumAlgos] = {"TREE", "RING", "COLLNET_DIRECT", "COLLNET_CHAIN",
                                                "NVLS", "NVLS_TREE", "PAT"};
  return algo >= 0 && algo < kNumAlgos ? kNames[algo] : "Unknown";
}

const char* ncclProtoString(int proto) {
  static const char* const kNames[kNumProtos] = {"LL", "LL128", "SIMPLE"};
  return proto >= 0 && proto < kNumProtos ? kNames[proto] : "Unknown";
}

PluginHost::PluginHost(const std::string& tunerPath, const std::string& profilerPath, ncclDebugLogger_t logger)
    : tunerPath_(tunerPath),
      profilerPath_(profilerPath.empty() ? deriveProfilerPath(tunerPath) : profilerPath),
      logger_(logger),
      tunerLib_(std::make_unique<loader::TunerLibrary>(tunerPath_, std::nullopt)),
      profLib_(std::make_unique<loader::ProfilerLibrary>(profilerPath_, std::nullopt)) {}

PluginHost::~PluginHost() { finalizeAll(); }

int PluginHost::addComm(uint64_t commId, const std::string& name, int nRanks, int nNodes, int minLocal,
                        int maxLocal, const std::vector<int>& members) {
  Comm c;
  c.name = name;
  c.id = commId;
  c.tuner.resize(nRanks);
  c.prof.resize(nRanks);
  c.seq.assign(static_cast<size_t>(nRanks) * kNumCollTypes, 0);
  for (int r : members)
    if (r < 0 || r >= nRanks) throw std::invalid_argument("addComm: member " + std::to_string(r) + " outside the comm");
  c.members = members;
  for (int r : c.members) {
    // init.cc: the profiler is initialised before the proxy thread, the tuner after topology and channels.
    profLib_->initComm(&c.prof[r], commId, c.name.c_str(), nNodes, nRanks, r, logger_);
    tunerLib_->load(&c.tuner[r]);
    if (c.tuner[r].tuner != nullptr) {
      ncclNvlDomainInfo_v5_t nvl{nNodes, minLocal, maxLocal};
      // NCCL hands its default model constants in; the simulated NCCL model keeps its own and does not read
      // them back (docs/simulator.md), so zeros are passed rather than invented values.
      ncclTunerConstants_v5_t constants{};
      c.tuner[r].tuner->init(&c.tuner[r].context, commId, static_cast<size_t>(nRanks), static_cast<size_t>(nNodes),
                             logger_, &nvl, &constants);
    }
    ++contexts_;
  }
  comms_.push_back(std::move(c));
  return static_cast<int>(comms_.size()) - 1;
}

void PluginHost::finalizeAll() {
  for (Comm& c : comms_) {
    if (!c.open) continue;
    for (int r : c.members) {
      // commCleanup: tuner finalize then unload; commFree: profiler finalize.
      if (c.tuner[r].tuner != nullptr) c.tuner[r].tuner->finalize(c.tuner[r].context);
      tunerLib_->unload(&c.tuner[r]);
      profLib_->finalizeComm(&c.prof[r]);
    }
    c.open = false;
  }
}

bool PluginHost::sameInstance() const {
  return tunerLib_->lastOpen().handle != nullptr && tunerLib_->lastOpen().handle == profLib_->lastOpen().handle;
}

int PluginHost::tunerVersion() const {
  for (const Comm& c : comms_)
    for (const auto& t : c.tuner)
      if (t.tuner != nullptr) return t.tuner->version();
  return 0;
}

int PluginHost::profilerVersion() const { return profLib_->profiler() ? profLib_->profiler()->version() : 0; }

int PluginHost::eventMask() const { return __atomic_load_n(profLib_->eventMask(), __ATOMIC_RELAXED); }

void PluginHost::emitCollective(int comm, int member, const CollEmit& e) {
  const loader::Profiler* p = profLib_->profiler();
  if (p == nullptr) return;
  // NCCL reads the process-wide mask atomically for each operation.
  const int mask = __atomic_load_n(profLib_->eventMask(), __ATOMIC_RELAXED);
  if (mask == 0) return;
  Comm& c = comms_[comm];
  void* ctx = c.prof[member].context;
  uint64_t& seq = c.seq[static_cast<size_t>(member) * kNumCollTypes + static_cast<int>(e.coll)];

  void* collHandle = nullptr;
  if (mask & ncclProfileColl) {
    ncclProfilerEventDescr_v5_t d{};
    d.type = ncclProfileColl;
    d.parentObj = nullptr;  // the CollApi handle; CollApi events are not in the mask
    d.rank = member;
    d.coll.seqNumber = seq;
    d.coll.func = ncclFuncString(e.coll);
    d.coll.count = e.count;
    d.coll.root = 0;
    d.coll.datatype = e.datatype;
    d.coll.nChannels = static_cast<uint8_t>(e.nChannels);
    d.coll.nWarps = 0;  // not modelled
    d.coll.algo = ncclAlgoString(e.algo);
    d.coll.proto = ncclProtoString(e.proto);
    d.coll.parentGroup = nullptr;  // Group events are not in the mask
    p->startEvent(ctx, &collHandle, &d);
    // Coll stop means "enqueued": it comes before the kernel's channels report.
    p->stopEvent(collHandle);
    events_ += 2;
  }
  ++seq;
  if ((mask & (ncclProfileProxyOp | ncclProfileProxyStep)) && e.network)
    emitProxy(*p, ctx, collHandle, member, e, mask);
  if (mask & ncclProfileKernelCh) {
    for (int ch = 0; ch < e.nChannels; ++ch) {
      ncclProfilerEventDescr_v5_t d{};
      d.type = ncclProfileKernelCh;
      d.parentObj = collHandle;
      d.rank = member;
      d.kernelCh.channelId = static_cast<uint8_t>(ch);
      d.kernelCh.pTimer = e.startNs;
      void* h = nullptr;
      p->startEvent(ctx, &h, &d);
      ncclProfilerEventStateArgs_v5_t args{};
      args.kernelCh.pTimer = e.stopNs;
      if (e.channelFrac != nullptr && ch < e.fracCount && e.stopNs > e.spanStartNs) {
        const double span = static_cast<double>(e.stopNs - e.spanStartNs);
        const double early = (1.0 - std::clamp(e.channelFrac[ch], 0.0, 1.0)) * span;
        args.kernelCh.pTimer = e.stopNs - static_cast<uint64_t>(early);
      }
      p->recordEventState(h, ncclProfilerKernelChStop, &args);
      p->stopEvent(h);
    }
    events_ += 3ull * static_cast<uint64_t>(e.nChannels);
  }
}

// An approximation of the proxy's work for a network collective: per channel one send and one receive
// ProxyOp towards the ring neighbours, with ProxyStep events for each chunk in NCCL's state order. No timing
// is carried (NCCL's proxy events have none of their own: a plugin timestamps them itself).
void PluginHost::emitProxy(const loader::Profiler& p, void* ctx, void* parent, int member, const CollEmit& e,
                           int mask) {
  const int nCh = std::max(1, e.nChannels);
  const int chunk = e.proto == 2 ? (512 << 10) : e.proto == 1 ? (120 << 10) : (32 << 10);
  const double factor = e.coll == CollType::AllReduce ? 2.0 : 1.0;
  const size_t perChannel = static_cast<size_t>(factor * static_cast<double>(e.bytes) / nCh);
  const int nSteps = static_cast<int>(std::clamp<size_t>((perChannel + chunk - 1) / chunk, 1, 64));
  for (int ch = 0; ch < nCh; ++ch) {
    for (int isSend = 1; isSend >= 0; --isSend) {
      void* op = nullptr;
      if (mask & ncclProfileProxyOp) {
        ncclProfilerEventDescr_v5_t d{};
        d.type = ncclProfileProxyOp;
        d.parentObj = parent;
        d.rank = member;
        d.proxyOp.pid = ::getpid();
        d.proxyOp.channelId = static_cast<uint8_t>(ch);
        d.proxyOp.peer = isSend ? member + 1 : member - 1;  // ring neighbours (may lie outside; informational)
        d.proxyOp.nSteps = nSteps;
        d.proxyOp.chunkSize = chunk;
        d.proxyOp.isSend = isSend;
        p.startEvent(ctx, &op, &d);
        ++events_;
      }
      if (mask & ncclProfileProxyStep) {
        for (int s = 0; s < nSteps; ++s) {
          ncclProfilerEventDescr_v5_t d{};
          d.type = ncclProfileProxyStep;
          d.parentObj = op;
          d.rank = member;
          d.proxyStep.step = s;
          void* h = nullptr;
          p.startEvent(ctx, &h, &d);
          ncclProfilerEventStateArgs_v5_t args{};
          args.proxyStep.transSize = static_cast<size_t>(chunk);
          if (isSend) {
            p.recordEventState(h, ncclProfilerProxyStepSendGPUWait, &args);
            p.recordEventState(h, ncclProfilerProxyStepSendWait, &args);
          } else {
            p.recordEventState(h, ncclProfilerProxyStepRecvWait, &args);
            p.recordEventState(h, ncclProfilerProxyStepRecvFlushWait, &args);
            p.recordEventState(h, ncclProfilerProxyStepRecvGPUWait, &args);
          }
          p.stopEvent(h);
          events_ += 3;
        }
      }
      if (op != nullptr) {
        p.stopEvent(op);
        ++events_;
      }
    }
  }
}

}  // namespace wirewise::sim
