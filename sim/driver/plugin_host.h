// Plays NCCL for every simulated rank towards one real plugin library: loads it through the NCCL-faithful
// loader (sim/loader), creates a tuner and a profiler context per (communicator, rank), forwards getCollInfo,
// and emits the profiler events NCCL would for each collective, honouring the activation mask the plugin set.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "adaptive/types.h"
#include "common/nccl/common.h"
#include "sim/loader/nccl_loader.h"

namespace wirewise::sim {

// What NCCL hands the profiler about one collective on one rank.
struct CollEmit {
  CollType coll = CollType::AllReduce;
  size_t count = 0;               // elements, as the user passed them (per rank for allgather/reducescatter)
  const char* datatype = nullptr;  // NCCL's string, e.g. "ncclBfloat16"
  int algo = 0, proto = 0, nChannels = 1;
  uint64_t startNs = 0, stopNs = 0;  // this rank's kernel, on the virtual GPU clock
  // Per-channel ends: channel c's KernelCh stops at stopNs - (1 - channelFrac[c]) x (stopNs - spanStartNs),
  // where spanStartNs is the last member's arrival (the bare transfer begins) and channelFrac[c] is the
  // channel's share of the transfer's time in the truth model (1 for the slowest). Null, or channels past
  // fracCount: the channel stops at stopNs.
  uint64_t spanStartNs = 0;
  const double* channelFrac = nullptr;
  int fracCount = 0;
  bool network = false;             // the comm spans nodes: proxy events exist
  size_t bytes = 0;                 // nBytes as the tuner saw it (for proxy step sizes)
};

class PluginHost {
 public:
  // tunerPath: what NCCL_TUNER_PLUGIN would say (a path). profilerPath: NCCL_PROFILER_PLUGIN; "" derives it as
  // libnccl-profiler-wirewise.so next to tunerPath when that exists, else tunerPath itself.
  PluginHost(const std::string& tunerPath, const std::string& profilerPath, ncclDebugLogger_t logger);
  ~PluginHost();  // finalizes every comm that is still open
  PluginHost(const PluginHost&) = delete;
  PluginHost& operator=(const PluginHost&) = delete;

  // Initialises profiler then tuner for each of `members` (ranks of the new communicator, ascending), as
  // initTransportsRank does. A process playing only some ranks (SimOptions::procs) lists those: each keeps its
  // rank in the comm, so commId, nRanks and rank are what NCCL would pass. Returns the comm's index.
  int addComm(uint64_t commId, const std::string& name, int nRanks, int nNodes, int minLocal, int maxLocal,
              const std::vector<int>& members);
  // commCleanup/commFree for every comm, in creation order. Idempotent.
  void finalizeAll();

  // One rank's getCollInfo (member: its rank in the comm, one of those added); table is modified in place;
  // returns the plugin's nChannels (0 = keep NCCL's). Without a tuner the table is left alone and 0 is
  // returned, as NCCL does.
  int getCollInfo(int comm, int member, CollType coll, size_t nBytes, float table[kNumAlgos][kNumProtos]) {
    Comm& c = comms_[comm];
    int nCh = 0;
    const loader::Tuner* t = c.tuner[member].tuner;
    if (t != nullptr) t->getCollInfo(c.tuner[member].context, static_cast<ncclFunc_t>(coll), nBytes, 1, table, 0, &nCh);
    return nCh;
  }
  // The events NCCL emits for one collective on one rank (no-op when no profiler or an empty mask).
  void emitCollective(int comm, int member, const CollEmit& e);

  bool tunerLoaded() const { return tunerLib_->status() == loader::TunerLibrary::Status::Loaded; }
  bool profilerLoaded() const { return profLib_->profiler() != nullptr; }
  // True when tuner and profiler resolved to one loaded object (one plugin instance, as in production).
  bool sameInstance() const;
  int tunerVersion() const;
  int profilerVersion() const;
  int eventMask() const;
  const std::string& tunerPath() const { return tunerPath_; }
  const std::string& profilerPath() const { return profilerPath_; }
  std::string tunerWhy() const { return tunerLib_->why(); }
  std::string profilerWhy() const { return profLib_->why(); }
  uint64_t eventsEmitted() const { return events_; }
  // Tuner contexts created (one per member of every comm added).
  int contexts() const { return contexts_; }

 private:
  struct Comm {
    std::string name;
    uint64_t id = 0;
    std::vector<loader::TunerComm> tuner;
    std::vector<loader::ProfilerComm> prof;
    std::vector<uint64_t> seq;  // per member x collective type: NCCL's comm->seqNumber[func]
    std::vector<int> members;   // the ranks played here; the vectors above are indexed by rank in the comm
    bool open = true;
  };
  void emitProxy(const loader::Profiler& p, void* ctx, void* parent, int member, const CollEmit& e, int mask);

  std::string tunerPath_, profilerPath_;
  ncclDebugLogger_t logger_;
  std::unique_ptr<loader::TunerLibrary> tunerLib_;
  std::unique_ptr<loader::ProfilerLibrary> profLib_;
  std::vector<Comm> comms_;
  uint64_t events_ = 0;
  int contexts_ = 0;
};

// NCCL's strings for the profiler descriptor (ncclFuncToString, ncclAlgoToString, ncclProtoToString).
const char* ncclFuncString(CollType c);
const char* ncclAlgoString(int algo);
const char* ncclProtoString(int proto);

}  // namespace wirewise::sim
