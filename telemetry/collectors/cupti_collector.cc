#include "telemetry/collectors/cupti_collector.h"

#include <dlfcn.h>

#include <atomic>
#include <cinttypes>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <type_traits>

#include <nlohmann/json.hpp>

#include "common/log_events.h"
#include "common/units.h"
#include "telemetry/launch_ring.h"

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
  // Optional (attribution): (CUcontext, CUstream, uint8_t perThreadStream, uint32_t*) and the older
  // (CUcontext, CUstream, uint32_t*). The context is ignored for a real (non-special) stream handle.
  CuptiResult (*getStreamIdEx)(void*, void*, uint8_t, uint32_t*) = nullptr;
  CuptiResult (*getStreamId)(void*, void*, uint32_t*) = nullptr;
};

namespace {

// start == end == 0: CUPTI's device buffers ran out (counted in noTimestamp).
bool timed(const CuptiKernel& k) { return k.startNs != 0 || k.endNs != 0; }

bool agrees(NcclKernelColl launch, NcclKernelColl kernel) {
  return launch != NcclKernelColl::kOther && (launch == kernel || kernel == NcclKernelColl::kGeneric);
}

std::vector<logev::KernelRow> collRows(const uint64_t* count, const uint64_t* deviceNs) {
  std::vector<logev::KernelRow> rows;
  for (int c = 0; c < kNumNcclKernelColls; ++c) {
    if (count[c] == 0) continue;
    rows.push_back({ncclKernelCollName(static_cast<NcclKernelColl>(c)), count[c],
                    static_cast<double>(deviceNs[c]) / 1e3});
  }
  return rows;
}

}  // namespace

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

NcclKernelColl ncclFuncColl(const char* func) {
  if (!func) return NcclKernelColl::kOther;
  static const struct {
    const char* name;
    NcclKernelColl coll;
  } kFuncs[] = {{"AllReduce", NcclKernelColl::kAllReduce},   {"AllGather", NcclKernelColl::kAllGather},
                {"ReduceScatter", NcclKernelColl::kReduceScatter}, {"Broadcast", NcclKernelColl::kBroadcast},
                {"Reduce", NcclKernelColl::kReduce},         {"SendRecv", NcclKernelColl::kSendRecv},
                // Point-to-point based collectives run SendRecv kernels.
                {"Send", NcclKernelColl::kSendRecv},         {"Recv", NcclKernelColl::kSendRecv},
                {"AlltoAll", NcclKernelColl::kSendRecv},     {"Gather", NcclKernelColl::kSendRecv},
                {"Scatter", NcclKernelColl::kSendRecv}};
  for (const auto& f : kFuncs)
    if (std::strcmp(func, f.name) == 0) return f.coll;
  return NcclKernelColl::kOther;
}

const char* cuptiMatchName(CuptiMatch m) {
  static const char* const kNames[] = {"unattributed", "verified", "unverified", "mismatched"};
  return kNames[static_cast<int>(m)];
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
  api_->getStreamIdEx = reinterpret_cast<decltype(api_->getStreamIdEx)>(::dlsym(lib, "cuptiGetStreamIdEx"));
  api_->getStreamId = reinterpret_cast<decltype(api_->getStreamId)>(::dlsym(lib, "cuptiGetStreamId"));
  streamIdFn_ = api_->getStreamIdEx ? 2 : api_->getStreamId ? 1 : 0;
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
  reason_ = "CUPTI API " + std::to_string(version) + ", concurrent-kernel activity; " +
            (streamIdFn_ == 2   ? std::string("stream ids via cuptiGetStreamIdEx")
             : streamIdFn_ == 1 ? std::string("stream ids via cuptiGetStreamId")
                                : library + " lacks cuptiGetStreamIdEx and cuptiGetStreamId: kernels are counted "
                                            "but cannot be matched to communicators");
  return true;
}

void CuptiCollector::flush(bool forced) {
  if (!active_) return;
  // Read before flushing: every launch whose kernel record this flush can deliver is <= the next pass's mark.
  const uint64_t mark = ring_ ? ring_->pushed() : 0;
  api_->flushAll(forced ? kFlushForced : 0);
  size_t dropped = 0;
  if (api_->getDropped(nullptr, 0, &dropped) == kCuptiSuccess && dropped > 0) {
    std::lock_guard<std::mutex> lock(mu_);
    stats_.dropped += dropped;
  }
  if (ring_) {
    match(false);
    mark_ = mark;
  }
}

bool CuptiCollector::attachLaunches(wirewise::LaunchRing* ring, std::function<void(const std::string&)> log) {
  if (!canAttribute() || ring == nullptr) return false;
  std::lock_guard<std::mutex> lock(mu_);
  ring_ = ring;
  log_ = std::move(log);
  return true;
}

std::string CuptiCollector::attribution() const {
  if (!active_) return "off (CUPTI not active)";
  if (streamIdFn_ == 0) return "unavailable (libcupti lacks cuptiGetStreamIdEx and cuptiGetStreamId)";
  if (!ring_) return "off (no launch recorder attached)";
  std::lock_guard<std::mutex> lock(mu_);
  if (saidNoLaunches_ && stats_.launches == 0)
    return "none (NCCL reports no KernelLaunch events: profiler v4 / NCCL < 2.28)";
  return std::string("by stream and launch order (") + (streamIdFn_ == 2 ? "cuptiGetStreamIdEx" : "cuptiGetStreamId") +
         ")";
}

bool CuptiCollector::mapStream(uintptr_t stream, uint32_t* id) {
  // NULL, cudaStreamLegacy (1) and cudaStreamPerThread (2) resolve through the calling thread's current
  // context, which the sampler thread does not have: not mappable.
  if (stream <= 2) return false;
  void* s = reinterpret_cast<void*>(stream);
  if (api_->getStreamIdEx) return api_->getStreamIdEx(nullptr, s, 0, id) == kCuptiSuccess;
  if (api_->getStreamId) return api_->getStreamId(nullptr, s, id) == kCuptiSuccess;
  return false;
}

void CuptiCollector::queueLocked(const CuptiKernel& k) {
  if (queue_.size() >= kMaxQueued) {
    ++stats_.queueOverflow;
    return;
  }
  queue_.push_back(k);
}

void CuptiCollector::credit(CuptiKernel& k, const LaunchInfo& l) {
  k.commId = l.commId;
  k.rank = l.rank;
  k.launchOrder = l.order;
  k.launchColl = l.coll;
  k.seq = l.seq;
  k.planColls = l.colls;
  NcclKernelColl as = k.coll;
  if (l.coll == NcclKernelColl::kOther) {
    k.match = CuptiMatch::kUnverified;
  } else if (agrees(l.coll, k.coll)) {
    k.match = CuptiMatch::kVerified;
    as = l.coll;  // a Generic kernel ran the plan's collectives: credit the first one
  } else {
    k.match = CuptiMatch::kMismatched;
  }
  CuptiCommStats& c = comms_[{l.commId, l.rank}];
  c.commId = l.commId;
  c.rank = l.rank;
  if (k.match == CuptiMatch::kMismatched) {
    ++c.mismatched;
    ++stats_.mismatched;
    return;
  }
  if (k.match == CuptiMatch::kVerified) {
    ++c.verified;
    ++stats_.verified;
  } else {
    ++c.unverified;
    ++stats_.unverified;
  }
  if (!timed(k)) return;  // its launch is consumed, but there is no time to credit
  int i = static_cast<int>(as);
  ++c.count[i];
  if (k.endNs > k.startNs) c.deviceNs[i] += k.endNs - k.startNs;
}

void CuptiCollector::match(bool final) {
  // Launches first, outside mu_: mapping calls into CUPTI, whose worker may be delivering a buffer to
  // onBuffer (which takes mu_) while holding CUPTI's own locks.
  std::vector<std::pair<uint32_t, LaunchInfo>> fresh;
  std::vector<std::pair<uintptr_t, int64_t>> ids;  // this pass's stream -> id (-1: unmappable)
  uint64_t popped = 0, unmapped = 0;
  wirewise::LaunchRecord r;
  while (ring_->pop(final ? UINT64_MAX : mark_, &r)) {
    ++popped;
    // Mapped anew each pass: a destroyed stream's handle may come back as another stream.
    int64_t id = -1;
    bool cached = false;
    for (const auto& [s, v] : ids)
      if (s == r.stream) {
        id = v;
        cached = true;
        break;
      }
    if (!cached) {
      uint32_t v = 0;
      id = mapStream(r.stream, &v) ? static_cast<int64_t>(v) : -1;
      ids.emplace_back(r.stream, id);
    }
    if (id < 0) {
      ++unmapped;
      continue;
    }
    LaunchInfo li;
    li.order = r.order;
    li.commId = r.commId;
    li.rank = r.rank;
    li.colls = r.colls;
    li.seq = r.seq;
    li.coll = ncclFuncColl(r.func);
    fresh.emplace_back(static_cast<uint32_t>(id), li);
  }
  const bool noLaunchesEver = ring_->pushed() == 0;
  ++pass_;
  bool sayNoLaunches = false;
  {
    std::lock_guard<std::mutex> lock(mu_);
    stats_.launches += popped;
    stats_.launchesUnmapped += unmapped;
    stats_.launchesLost = ring_->lost();
    for (auto& [id, li] : fresh) {
      auto& q = byStream_[id];
      if (q.size() >= kMaxPending) {
        q.pop_front();
        ++stats_.staleLaunches;
      }
      q.push_back(li);
    }
    for (const CuptiKernel& k : incoming_) pending_.push_back({k, pass_});
    incoming_.clear();
    // Kernel records in arrival order; CUPTI delivers a stream's records in execution order, which is
    // the stream's launch order.
    std::deque<PendingKernel> waiting;
    for (PendingKernel& p : pending_) {
      auto it = byStream_.find(p.k.streamId);
      if (it != byStream_.end() && !it->second.empty()) {
        auto& q = it->second;
        // The front launch disagrees and the next one agrees: the front never ran as a kernel of its own
        // (captured into a graph, or its record was dropped). Skip it rather than shift every pairing.
        if (q.size() > 1 && q[0].coll != NcclKernelColl::kOther && !agrees(q[0].coll, p.k.coll) &&
            agrees(q[1].coll, p.k.coll)) {
          q.pop_front();
          ++stats_.staleLaunches;
        }
        credit(p.k, q.front());
        q.pop_front();
        if (timed(p.k)) queueLocked(p.k);
        continue;
      }
      if (final || pass_ >= p.seenPass + kMatchPasses) {
        ++stats_.unattributed;
        if (timed(p.k)) queueLocked(p.k);
        if (noLaunchesEver && !saidNoLaunches_) sayNoLaunches = saidNoLaunches_ = true;
        continue;
      }
      waiting.push_back(p);
    }
    pending_.swap(waiting);
    if (final) {
      for (auto& [id, q] : byStream_) stats_.staleLaunches += q.size();
      byStream_.clear();
    }
  }
  if (sayNoLaunches && log_)
    log_("cupti: NCCL kernel records arrive but NCCL reports no KernelLaunch events (profiler v4 / NCCL before "
         "2.28, or no communicator runs the wirewise profiler): kernels are counted per collective, not "
         "attributed to communicators");
}

void CuptiCollector::stop() {
  if (!active_) return;
  api_->disable(kKindConcurrentKernel);
  flush(true);
  if (ring_) match(true);  // every launch is in by now: what is still unmatched stays so
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
      // Still a kernel of its stream: it must consume its launch, or every later pairing shifts by one.
      if (ring_ && incoming_.size() + pending_.size() < kMaxPending) incoming_.push_back(k);
      continue;
    }
    int c = static_cast<int>(coll);
    ++stats_.count[c];
    if (k.endNs > k.startNs) stats_.deviceNs[c] += k.endNs - k.startNs;
    if (!ring_) {
      queueLocked(k);
    } else if (incoming_.size() + pending_.size() >= kMaxPending) {
      ++stats_.unattributed;  // the matcher is far behind: give this one up at once
      queueLocked(k);
    } else {
      incoming_.push_back(k);
    }
  }
}

CuptiStats CuptiCollector::stats() const {
  std::lock_guard<std::mutex> lock(mu_);
  return stats_;
}

std::vector<CuptiCommStats> CuptiCollector::commStats() const {
  std::lock_guard<std::mutex> lock(mu_);
  std::vector<CuptiCommStats> out;
  out.reserve(comms_.size());
  for (const auto& [key, c] : comms_) out.push_back(c);
  return out;
}

nlohmann::json CuptiCollector::report() const {
  std::string how = attribution();
  std::lock_guard<std::mutex> lock(mu_);
  const CuptiStats& s = stats_;
  if (s.records == 0 && s.launches == 0) return nullptr;
  logev::CuptiKernels ev;
  for (const auto& [key, c] : comms_)
    ev.comms.push_back({hexId(c.commId), c.rank, c.verified, c.unverified, c.mismatched, collRows(c.count, c.deviceNs)});
  ev.attribution = how;
  ev.records = s.records;
  ev.ncclKernels = s.ncclKernels;
  ev.otherKernels = s.otherKernels;
  ev.noTimestamp = s.noTimestamp;
  ev.dropped = s.dropped;
  ev.colls = collRows(s.count, s.deviceNs);
  ev.launches = s.launches;
  ev.launchesLost = s.launchesLost;
  ev.launchesUnmapped = s.launchesUnmapped;
  ev.staleLaunches = s.staleLaunches;
  ev.verified = s.verified;
  ev.unverified = s.unverified;
  ev.mismatched = s.mismatched;
  ev.unattributed = s.unattributed;
  return ev;
}

std::vector<CuptiKernel> CuptiCollector::takeKernels() {
  std::lock_guard<std::mutex> lock(mu_);
  std::vector<CuptiKernel> out(queue_.begin(), queue_.end());
  queue_.clear();
  return out;
}

}  // namespace wirewise::collectors
