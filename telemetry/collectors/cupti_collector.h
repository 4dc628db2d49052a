// Opt-in CUPTI Activity collector (CONCURRENT_KERNEL records) for NCCL kernels' device start/end
// times. libcupti is opened with dlopen (name injectable; an already-loaded copy is reused), never
// linked. Only the CUDA 13 record layout (CUpti_ActivityKernel10, CUPTI API 13.x) is understood: any
// other version is refused rather than misread. CUPTI allows one activity client per process (until
// CUDA 13.2 / r610 drivers): if another client (torch.profiler/Kineto, nsys, a sanitizer) holds it,
// start() fails once with that reason and the caller falls back to the profiler's KernelCh timings.
//
// Attribution (attachLaunches): NCCL's v5 profiler reports each kernel launch (KernelLaunch event:
// communicator, CUDA stream) into a LaunchRing (telemetry/launch_ring.h). On each flush the collector
// maps every launch's stream to CUPTI's stream id (cuptiGetStreamIdEx, else cuptiGetStreamId) and pairs,
// per stream, kernel records with launches in launch order: a stream runs its kernels in launch order.
// The collective type from the kernel name is cross-checked against the launch's first collective.
#pragma once

#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json_fwd.hpp>

namespace wirewise {
class LaunchRing;
}

namespace wirewise::collectors {

enum class NcclKernelColl : uint8_t { kOther, kBroadcast, kReduce, kAllGather, kReduceScatter, kAllReduce, kSendRecv,
                                      kGeneric };
constexpr int kNumNcclKernelColls = 8;
const char* ncclKernelCollName(NcclKernelColl c);
// "ncclDevKernel_AllReduce_Sum_f32_RING_LL" (mangled or not), "ncclSymkDevKernel_AllGather_LL", ... -> the
// collective. Only the collective is trusted: NCCL kernel names do not tell the algo/proto that ran.
NcclKernelColl parseNcclKernelName(const char* name);
// A Coll event's func as NCCL prints it ("AllReduce", ...) -> the collective; kOther if unknown.
NcclKernelColl ncclFuncColl(const char* func);

// How a kernel record was tied to a launch.
enum class CuptiMatch : uint8_t {
  kUnattributed,  // no launch for it: no attribution, no KernelLaunch events, stream unmapped, or too late
  kVerified,      // launch found, its first collective agrees with the kernel name (or the kernel is Generic)
  kUnverified,    // launch found, its collective unknown (p2p, host-callback or graph plans): comm only
  kMismatched,    // launch found, its first collective disagrees with the kernel name: not credited
};
const char* cuptiMatchName(CuptiMatch m);

struct CuptiKernel {
  uint64_t startNs = 0, endNs = 0;  // CUPTI timestamps (CLOCK_REALTIME-based ns by default on Linux)
  uint32_t deviceId = 0, streamId = 0, correlationId = 0;
  NcclKernelColl coll = NcclKernelColl::kOther;  // from the kernel name
  // Attribution (attachLaunches only; kUnattributed and zeros otherwise).
  CuptiMatch match = CuptiMatch::kUnattributed;
  uint64_t commId = 0;
  int32_t rank = -1;
  uint64_t launchOrder = 0;                            // LaunchRecord::order
  NcclKernelColl launchColl = NcclKernelColl::kOther;  // the plan's first collective, if claimed
  uint64_t seq = 0;                                    // its seqNumber
  uint32_t planColls = 0;                              // Coll events the plan claimed
};

// Per (communicator, rank): kernels credited to it (verified + unverified) by collective.
struct CuptiCommStats {
  uint64_t commId = 0;
  int32_t rank = -1;
  uint64_t verified = 0, unverified = 0, mismatched = 0;
  uint64_t count[kNumNcclKernelColls] = {};
  uint64_t deviceNs[kNumNcclKernelColls] = {};
};

struct CuptiStats {
  uint64_t records = 0;            // activity records seen (any kind)
  uint64_t ncclKernels = 0;        // kernel records whose name is an NCCL kernel
  uint64_t otherKernels = 0;
  uint64_t noTimestamp = 0;        // start == end == 0: CUPTI's device buffers ran out
  uint64_t dropped = 0;            // cuptiActivityGetNumDroppedRecords, summed
  uint64_t queueOverflow = 0;      // kernels not queued because takeKernels() was not called often enough
  uint64_t count[kNumNcclKernelColls] = {};
  uint64_t deviceNs[kNumNcclKernelColls] = {};
  // Attribution (all zero without attachLaunches).
  uint64_t launches = 0;          // KernelLaunch records taken from the ring
  uint64_t launchesLost = 0;      // the ring was full (LaunchRing::lost)
  uint64_t launchesUnmapped = 0;  // no CUPTI stream id for the stream (default/per-thread stream, error)
  uint64_t staleLaunches = 0;     // skipped: never got a kernel record (graph capture) or queue bound
  uint64_t verified = 0, unverified = 0, mismatched = 0, unattributed = 0;
};

class CuptiCollector {
 public:
  CuptiCollector() = default;
  ~CuptiCollector();  // stop()
  CuptiCollector(const CuptiCollector&) = delete;
  CuptiCollector& operator=(const CuptiCollector&) = delete;

  // Loads the library, checks the API version, registers the buffer callbacks and enables
  // CONCURRENT_KERNEL. false + reason() when anything is missing or CUPTI is held by another client.
  bool start(const std::string& library);
  bool available() const { return active_; }
  const std::string& reason() const { return reason_; }

  // Turns on attribution: launches are popped from `ring` (this collector becomes its only consumer) and
  // matched. False (and nothing attached) when not started or libcupti has neither stream-id function.
  // `log` says things once (e.g. "no KernelLaunch events"); may be empty.
  bool attachLaunches(wirewise::LaunchRing* ring, std::function<void(const std::string&)> log);
  bool canAttribute() const { return active_ && streamIdFn_ != 0; }
  bool attributing() const { return ring_ != nullptr; }
  std::string attribution() const;  // one line: how (or why not) kernels are tied to communicators

  // Hands completed buffers to our callbacks (cuptiActivityFlushAll; blocks, never syncs CUDA), then
  // matches what is pending. Call from one thread (the sampler).
  void flush(bool forced);
  // Disables the activity kind, force-flushes and detaches: CUPTI is free for others afterwards.
  void stop();

  CuptiStats stats() const;
  std::vector<CuptiCommStats> commStats() const;  // cumulative, ordered by (commId, rank)
  // The adaptation-log event "cupti_kernels" (cumulative totals), or null when nothing was seen yet.
  nlohmann::json report() const;
  // NCCL kernels since the last call (bounded queue). With attribution a kernel is queued once matched,
  // or once it is given up (kMatchPasses flushes after it arrived).
  std::vector<CuptiKernel> takeKernels();
  static constexpr size_t kMaxQueued = 8192;
  static constexpr size_t kBufferBytes = 1 << 20;
  static constexpr uint64_t kMatchPasses = 2;
  static constexpr size_t kMaxPending = 1 << 16;  // kernel records, and launches per stream, awaiting a match

  // CUPTI's C callbacks (no user data): routed to the one active collector. Public for the trampolines.
  void onBuffer(uint8_t* buffer, size_t validSize);

 private:
  struct Api;
  Api* api_ = nullptr;
  bool active_ = false;
  std::string reason_ = "not started";
  int streamIdFn_ = 0;  // 2: cuptiGetStreamIdEx, 1: cuptiGetStreamId, 0: neither
  mutable std::mutex mu_;
  CuptiStats stats_;
  std::deque<CuptiKernel> queue_;

  // Attribution. ring_, log_, mark_, pass_ are the flushing thread's; the rest is guarded by mu_.
  struct PendingKernel {
    CuptiKernel k;
    uint64_t seenPass;
  };
  struct LaunchInfo {
    uint64_t order = 0, commId = 0, seq = 0;
    int32_t rank = -1;
    uint32_t colls = 0;
    NcclKernelColl coll = NcclKernelColl::kOther;  // the plan's first collective; kOther if unknown
  };
  void match(bool final);
  bool mapStream(uintptr_t stream, uint32_t* id);
  void credit(CuptiKernel& k, const LaunchInfo& l);
  void queueLocked(const CuptiKernel& k);
  wirewise::LaunchRing* ring_ = nullptr;
  std::function<void(const std::string&)> log_;
  uint64_t mark_ = 0;  // ring_->pushed() before the previous pass's flush: launches up to it are popped
  uint64_t pass_ = 0;
  bool saidNoLaunches_ = false;
  std::vector<CuptiKernel> incoming_;  // from onBuffer, any thread
  std::deque<PendingKernel> pending_;
  std::map<uint32_t, std::deque<LaunchInfo>> byStream_;  // CUPTI stream id -> launches in order
  std::map<std::pair<uint64_t, int32_t>, CuptiCommStats> comms_;
};

}  // namespace wirewise::collectors
