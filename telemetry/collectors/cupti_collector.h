// Opt-in CUPTI Activity collector (CONCURRENT_KERNEL records) for NCCL kernels' device start/end
// times. libcupti is opened with dlopen (name injectable; an already-loaded copy is reused), never
// linked. Only the CUDA 13 record layout (CUpti_ActivityKernel10, CUPTI API 13.x) is understood: any
// other version is refused rather than misread. CUPTI allows one activity client per process (until
// CUDA 13.2 / r610 drivers): if another client (torch.profiler/Kineto, nsys, a sanitizer) holds it,
// start() fails once with that reason and the caller falls back to the profiler's KernelCh timings.
#pragma once

#include <cstdint>
#include <deque>
#include <mutex>
#include <string>
#include <vector>

namespace wirewise::collectors {

enum class NcclKernelColl : uint8_t { kOther, kBroadcast, kReduce, kAllGather, kReduceScatter, kAllReduce, kSendRecv,
                                      kGeneric };
constexpr int kNumNcclKernelColls = 8;
const char* ncclKernelCollName(NcclKernelColl c);
// "ncclDevKernel_AllReduce_Sum_f32_RING_LL" (mangled or not), "ncclSymkDevKernel_AllGather_LL", ... -> the
// collective. Only the collective is trusted: NCCL kernel names do not tell the algo/proto that ran.
NcclKernelColl parseNcclKernelName(const char* name);

struct CuptiKernel {
  uint64_t startNs = 0, endNs = 0;  // CUPTI timestamps (CLOCK_REALTIME-based ns by default on Linux)
  uint32_t deviceId = 0, streamId = 0, correlationId = 0;
  NcclKernelColl coll = NcclKernelColl::kOther;
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

  // Hands completed buffers to our callbacks (cuptiActivityFlushAll; blocks, never syncs CUDA).
  void flush(bool forced);
  // Disables the activity kind, force-flushes and detaches: CUPTI is free for others afterwards.
  void stop();

  CuptiStats stats() const;
  std::vector<CuptiKernel> takeKernels();  // NCCL kernels since the last call (bounded queue)
  static constexpr size_t kMaxQueued = 8192;
  static constexpr size_t kBufferBytes = 1 << 20;

  // CUPTI's C callbacks (no user data): routed to the one active collector. Public for the trampolines.
  void onBuffer(uint8_t* buffer, size_t validSize);

 private:
  struct Api;
  Api* api_ = nullptr;
  bool active_ = false;
  std::string reason_ = "not started";
  mutable std::mutex mu_;
  CuptiStats stats_;
  std::deque<CuptiKernel> queue_;
};

}  // namespace wirewise::collectors
