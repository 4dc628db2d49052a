#include "telemetry/collectors/cupti_collector.h"

#include <dlfcn.h>

#include <atomic>
#include <type_traits>
#include <cstdlib>
#include <cstring>

namespace wirewise::collectors {
namespace {

// CUPTI 13.0 values (cupti_result.h, cupti_activity.h); our own declarations, nothing is linked.
using CuptiResult = int;
constexpr CuptiResult kCuptiSuccess = 0;
constexpr CuptiResult kCuptiMaxLimitReached = 12;
constexpr CuptiResult kCuptiMultipleSubscribers = 39;
constexpr int kKindConcurrentKernel = 10;
constexpr uint32_t kFlushForced = 1;
// CUpti_ActivityKernel10 (packed, 8-aligned; 216 bytes in CUDA 13.0): offsets of the fields we read.
constexpr size_t kOffStart = 16, kOffEnd = 24, kOffDevice = 40, kOffStream = 48, kOffCorrelation = 92,
                 kOffName = 104, kKernel10Size = 216;

using RequestFn = void (*)(uint8_t**, size_t*, size_t*);
using CompleteFn = void (*)(void*, uint32_t, uint8_t*, size_t, size_t);

// CUPTI's buffer callbacks carry no user pointer, and CUPTI itself is process-wide: one collector at a time.
std::atomic<CuptiCollector*> g_active{nullptr};

void requestBuffer(uint8_t** buffer, size_t* size, size_t* maxRecords) {
  // A fresh buffer per request: reusing one static buffer duplicated records in nvFuser (Fuser#5402).
  *buffer = static_cast<uint8_t*>(std::aligned_alloc(8, CuptiCollector::kBufferBytes));
  *size = *buffer ? CuptiCollector::kBufferBytes : 0;
  *maxRecords = 0;
}

void completeBuffer(void*, uint32_t, uint8_t* buffer, size_t, size_t validSize) {
  if (CuptiCollector* c = g_active.load()) c->onBuffer(buffer, validSize);
  std::free(buffer);
}

template <typename T>
T load(const uint8_t* p, size_t off) {
  T v;
  std::memcpy(&v, p + off, sizeof v);
  return v;
}

}  // namespace

struct CuptiCollector::Api {
  CuptiResult (*getVersion)(uint32_t*) = nullptr;
  CuptiResult (*registerCallbacks)(RequestFn, CompleteFn) = nullptr;
  CuptiResult (*enable)(int) = nullptr;
  CuptiResult (*disable)(int) = nullptr;
  CuptiResult (*getNextRecord)(uint8_t*, size_t, uint8_t**) = nullptr;
  CuptiResult (*flushAll)(uint32_t) = nullptr;
  CuptiResult (*getDropped)(void*, uint32_t, size_t*) = nullptr;
};

const char* ncclKernelCollName(NcclKernelColl c) {
  static const char* const kNames[] = {"other",     "broadcast", "reduce",   "allgather",
                                       "reducescatter", "allreduce", "sendrecv", "generic"};
  return kNames[static_cast<int>(c)];
}

NcclKernelColl parseNcclKernelName(const char* name) {
  if (!name) return NcclKernelColl::kOther;
  const char* p = std::strstr(name, "ncclDevKernel_");
  size_t skip = 14;
  if (!p) {
    p = std::strstr(name, "ncclSymkDevKernel_");
    skip = 18;
  }
  if (!p) return NcclKernelColl::kOther;
  p += skip;
  // Longest names first: "ReduceScatter" before "Reduce".
  static const struct {
    const char* prefix;
    NcclKernelColl coll;
  } kColls[] = {{"ReduceScatter", NcclKernelColl::kReduceScatter}, {"AllReduce", NcclKernelColl::kAllReduce},
                {"AllGather", NcclKernelColl::kAllGather},         {"Broadcast", NcclKernelColl::kBroadcast},
                {"Reduce", NcclKernelColl::kReduce},               {"SendRecv", NcclKernelColl::kSendRecv},
                {"Generic", NcclKernelColl::kGeneric}};
  for (const auto& c : kColls) {
    if (std::strncmp(p, c.prefix, std::strlen(c.prefix)) == 0) return c.coll;
  }
  return NcclKernelColl::kOther;
}

CuptiCollector::~CuptiCollector() {
  stop();
  delete api_;
}

bool CuptiCollector::start(const std::string& library) {
  if (active_) return true;
  void* lib = ::dlopen(library.c_str(), RTLD_NOW | RTLD_NOLOAD);  // reuse a copy the app already loaded
  if (!lib) lib = ::dlopen(library.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!lib) {
    const char* err = ::dlerror();
    reason_ = "dlopen " + library + " failed: " + (err ? err : "unknown error");
    return false;
  }
  if (!api_) api_ = new Api();
  std::string missing;
  auto sym = [&](const char* n, auto* out) {
    *out = reinterpret_cast<std::remove_pointer_t<decltype(out)>>(::dlsym(lib, n));
    if (!*out && missing.empty()) missing = n;
  };
  sym("cuptiGetVersion", &api_->getVersion);
  sym("cuptiActivityRegisterCallbacks", &api_->registerCallbacks);
  sym("cuptiActivityEnable", &api_->enable);
  sym("cuptiActivityDisable", &api_->disable);
  sym("cuptiActivityGetNextRecord", &api_->getNextRecord);
  sym("cuptiActivityFlushAll", &api_->flushAll);
  sym("cuptiActivityGetNumDroppedRecords", &api_->getDropped);
  if (!missing.empty()) {
    reason_ = library + " lacks symbol " + missing;
    return false;
  }
  uint32_t version = 0;
  if (api_->getVersion(&version) != kCuptiSuccess || version < 130000 || version >= 140000) {
    reason_ = "CUPTI API version " + std::to_string(version) + " not supported (the kernel record layout is "
              "known for 13.x only)";
    return false;
  }
  CuptiCollector* expected = nullptr;
  if (!g_active.compare_exchange_strong(expected, this)) {
    reason_ = "another wirewise CUPTI collector is active in this process";
    return false;
  }
  CuptiResult r = api_->registerCallbacks(&requestBuffer, &completeBuffer);
  if (r == kCuptiSuccess) r = api_->enable(kKindConcurrentKernel);
  if (r != kCuptiSuccess) {
    g_active.store(nullptr);
    reason_ = r == kCuptiMultipleSubscribers
                  ? "another CUPTI client holds this process (CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED); "
                    "backing off, kernel times come from the NCCL profiler"
                  : "CUPTI activity setup failed with error " + std::to_string(r);
    return false;
  }
  active_ = true;
  reason_ = "CUPTI API " + std::to_string(version) + ", concurrent-kernel activity";
  return true;
}

void CuptiCollector::flush(bool forced) {
  if (!active_) return;
  api_->flushAll(forced ? kFlushForced : 0);
  size_t dropped = 0;
  if (api_->getDropped(nullptr, 0, &dropped) == kCuptiSuccess && dropped > 0) {
    std::lock_guard<std::mutex> lock(mu_);
    stats_.dropped += dropped;
  }
}

void CuptiCollector::stop() {
  if (!active_) return;
  api_->disable(kKindConcurrentKernel);
  flush(true);
  active_ = false;
  CuptiCollector* self = this;
  g_active.compare_exchange_strong(self, nullptr);
  reason_ = "stopped";
}

void CuptiCollector::onBuffer(uint8_t* buffer, size_t validSize) {
  std::lock_guard<std::mutex> lock(mu_);
  uint8_t* rec = nullptr;
  // Iterate until CUPTI says the buffer is exhausted; any other error (INVALID_KIND: an incomplete
  // record) also ends the buffer.
  while (api_->getNextRecord(buffer, validSize, &rec) == kCuptiSuccess && rec) {
    ++stats_.records;
    if (load<int32_t>(rec, 0) != kKindConcurrentKernel) continue;
    if (static_cast<size_t>(rec - buffer) + kKernel10Size > validSize) break;
    NcclKernelColl coll = parseNcclKernelName(load<const char*>(rec, kOffName));
    if (coll == NcclKernelColl::kOther) {
      ++stats_.otherKernels;
      continue;
    }
    CuptiKernel k;
    k.startNs = load<uint64_t>(rec, kOffStart);
    k.endNs = load<uint64_t>(rec, kOffEnd);
    k.deviceId = load<uint32_t>(rec, kOffDevice);
    k.streamId = load<uint32_t>(rec, kOffStream);
    k.correlationId = load<uint32_t>(rec, kOffCorrelation);
    k.coll = coll;
    ++stats_.ncclKernels;
    if (k.startNs == 0 && k.endNs == 0) {
      ++stats_.noTimestamp;
      continue;
    }
    int c = static_cast<int>(coll);
    ++stats_.count[c];
    if (k.endNs > k.startNs) stats_.deviceNs[c] += k.endNs - k.startNs;
    if (queue_.size() >= kMaxQueued) {
      ++stats_.queueOverflow;
      continue;
    }
    queue_.push_back(k);
  }
}

CuptiStats CuptiCollector::stats() const {
  std::lock_guard<std::mutex> lock(mu_);
  return stats_;
}

std::vector<CuptiKernel> CuptiCollector::takeKernels() {
  std::lock_guard<std::mutex> lock(mu_);
  std::vector<CuptiKernel> out(queue_.begin(), queue_.end());
  queue_.clear();
  return out;
}

}  // namespace wirewise::collectors
