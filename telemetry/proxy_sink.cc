// ProxySink: see proxy_sink.h for the contract. A slot's control word is [gen:32][unused:31][inUse:1];
// the thread whose CAS frees it (stop, or a reclaim) owns its fields until it pushes the index back.
#include "telemetry/proxy_sink.h"

#include "telemetry/lockfree.h"
#include "telemetry/slot_tag.h"

namespace wirewise {
namespace {

constexpr uint64_t kLive = 1;
constexpr uint32_t kNoPath = UINT32_MAX;

uint32_t generationOf(uint64_t c) { return static_cast<uint32_t>(c >> 32); }
uint64_t freed(uint64_t c) { return uint64_t{generationOf(c) + 1} << 32; }
bool liveWithTag(uint64_t c, uint32_t tag) { return (c & kLive) && slot_tag::tagOf(generationOf(c)) == tag; }
// Frees a live slot whose generation matches tag (next generation); false for a late or duplicate stop.
// The caller then owns the slot's fields until it pushes the index back on its free list.
bool release(std::atomic<uint64_t>& ctrl, uint32_t tag) {
  uint64_t c = ctrl.load(std::memory_order_acquire);
  do {
    if (!liveWithTag(c, tag)) return false;
  } while (!ctrl.compare_exchange_weak(c, freed(c), std::memory_order_acq_rel, std::memory_order_acquire));
  return true;
}
template <class Slot>
size_t countInUse(const Slot* slots, uint32_t n) {
  size_t k = 0;
  for (uint32_t i = 0; i < n; ++i) k += (slots[i].ctrl.load(std::memory_order_acquire) & kLive) != 0;
  return k;
}

// path is atomic because a stale child start may read it while the slot's next owner writes it (the
// reader then sees the control word change and backs off).
struct alignas(kSlotAlign) OpSlot : SlotHead {
  std::atomic<uint64_t> ctrl{0};
  std::atomic<uint64_t> order{0};  // start order, to find the stalest op when the pool runs dry
  std::atomic<uint32_t> path{kNoPath};
  uint64_t startNs = 0;
};

// op packs (op gen << 32 | op index): a step whose op is gone is dead and may be reclaimed. It is read
// by reclaimers that do not own the slot, hence atomic; the other fields belong to the slot's owner.
struct alignas(kSlotAlign) StepSlot : SlotHead {
  std::atomic<uint64_t> ctrl{0};
  std::atomic<uint64_t> op{0};
  uint32_t path = kNoPath;
  int8_t state = -1;  // ProxyState, -1 before the first record
  bool inNet = false;
  uint64_t startNs = 0, stateSince = 0;
};

struct alignas(64) PathSlot {
  std::atomic<uint64_t> key{0};  // 0: empty
  std::atomic<uint64_t> ops{0}, plannedSteps{0}, steps{0}, bytes{0}, chunkSize{0};
  std::atomic<uint64_t> opsLive{0}, activeSince{0}, activeNs{0};
  std::atomic<uint64_t> stepsInNet{0}, netSince{0}, netNs{0};
  std::atomic<uint64_t> stateNs[kNumProxyStates] = {};
};

// Union of overlapping intervals: time is added while at least one member is inside. Exact when one
// thread drives the path (NCCL's proxy thread); approximate if two interleave enter/leave.
void enter(std::atomic<uint64_t>& live, std::atomic<uint64_t>& since, uint64_t now) {
  if (live.fetch_add(1, std::memory_order_relaxed) == 0) since.store(now, std::memory_order_relaxed);
}
void leave(std::atomic<uint64_t>& live, std::atomic<uint64_t>& since, std::atomic<uint64_t>& acc, uint64_t now) {
  if (live.fetch_sub(1, std::memory_order_relaxed) != 1) return;
  uint64_t s = since.load(std::memory_order_relaxed);
  if (now > s) acc.fetch_add(now - s, std::memory_order_relaxed);
}

bool isNetState(int s) { return s == kPsSendWait || s == kPsRecvWait; }

uint64_t pathKey(int channel, int peer, bool isSend) {
  return 1 | (uint64_t{isSend} << 1) | (uint64_t{static_cast<uint8_t>(channel)} << 8) |
         (uint64_t{static_cast<uint32_t>(peer)} << 32);
}

std::atomic<uint64_t> gPxnOps{0}, gOrphanSteps{0}, gOrphanNet{0};

}  // namespace

int proxyStateIndex(int s) noexcept {
  switch (s) {
    case kStateSendGpuWait: return kPsSendGpuWait;
    case kStateSendPeerWait: return kPsSendPeerWait;
    case kStateSendWait: return kPsSendWait;
    case kStateRecvWait: return kPsRecvWait;
    case kStateRecvFlushWait: return kPsRecvFlushWait;
    case kStateRecvGpuWait: return kPsRecvGpuWait;
    default: return -1;
  }
}

const char* proxyStateName(int i) noexcept {
  static constexpr const char* kNames[kNumProxyStates] = {"send_gpu_wait", "send_peer_wait", "send_wait",
                                                          "recv_wait",     "recv_flush_wait", "recv_gpu_wait"};
  return i >= 0 && i < kNumProxyStates ? kNames[i] : "unknown";
}

struct ProxySink::Impl {
  Impl(ProxySink* owner, size_t opPool, size_t pathCap)
      : nOp(static_cast<uint32_t>(opPool == 0 ? 1 : opPool)),
        nStep(nOp * 2),
        nPath(roundPow2(pathCap)),
        ops(new OpSlot[nOp]),
        steps(new StepSlot[nStep]),
        paths(new PathSlot[nPath]),
        freeOps(nOp),
        freeSteps(nStep) {
    for (uint32_t i = 0; i < nOp; ++i) ops[i].type = kEvProxyOp, ops[i].owner = owner, ops[i].index = i;
    for (uint32_t i = 0; i < nStep; ++i) steps[i].type = kEvProxyStep, steps[i].owner = owner, steps[i].index = i;
    usable = slot_tag::taggable(ops.get(), nOp) && slot_tag::taggable(steps.get(), nStep);
  }
  static uint32_t roundPow2(size_t n) {
    uint32_t p = 16;
    while (p < n && p < (1u << 20)) p <<= 1;
    return p;
  }

  uint32_t findPath(uint64_t key) noexcept;
  OpSlot* takeOp(uint64_t order) noexcept;
  StepSlot* takeStep() noexcept;
  void* startStep(OpSlot* op, uint32_t opTag, uint64_t now) noexcept;
  void endStep(const StepSlot& s, uint64_t now) noexcept;
  void stopOp(OpSlot* s, uint32_t tag, uint64_t now) noexcept;
  void stopStep(StepSlot* s, uint32_t tag, uint64_t now) noexcept;

  bool usable = false;
  uint32_t nOp, nStep, nPath;
  std::unique_ptr<OpSlot[]> ops;
  std::unique_ptr<StepSlot[]> steps;
  std::unique_ptr<PathSlot[]> paths;
  IndexFreeList freeOps, freeSteps;
  std::atomic<uint64_t> order{0};
  std::atomic<uint64_t> opsStarted{0}, opsNullParent{0}, stepsStarted{0}, poolDrops{0}, pathsFull{0}, stale{0},
      reclaimed{0}, netPlugin{0};
};

// Open addressing, linear probing, insert-only: a path once seen keeps its slot for the comm's life.
uint32_t ProxySink::Impl::findPath(uint64_t key) noexcept {
  uint32_t i = static_cast<uint32_t>((key * 0x9e3779b97f4a7c15ull) >> 40) & (nPath - 1);
  for (uint32_t n = 0; n < nPath; ++n, i = (i + 1) & (nPath - 1)) {
    uint64_t k = paths[i].key.load(std::memory_order_acquire);
    if (k == key) return i;
    if (k == 0) {
      if (paths[i].key.compare_exchange_strong(k, key, std::memory_order_acq_rel)) return i;
      if (k == key) return i;  // another thread inserted the same path
    }
  }
  return kNoPath;
}

// Cold path when the pool is empty: an op is stale when more than a pool's worth of ops were started
// (or refused) after it. The proxy stops its ops in about the order it starts them, so a live op is
// never that far behind.
OpSlot* ProxySink::Impl::takeOp(uint64_t newest) noexcept {
  uint32_t idx;
  if (freeOps.pop(&idx)) return &ops[idx];
  OpSlot* best = nullptr;
  uint64_t bestCtrl = 0, bestOrder = UINT64_MAX;
  for (uint32_t i = 0; i < nOp; ++i) {
    uint64_t c = ops[i].ctrl.load(std::memory_order_acquire);
    uint64_t o = ops[i].order.load(std::memory_order_relaxed);
    if ((c & kLive) && o < bestOrder) best = &ops[i], bestCtrl = c, bestOrder = o;
  }
  if (best == nullptr || newest - bestOrder <= nOp) return nullptr;
  if (!best->ctrl.compare_exchange_strong(bestCtrl, freed(bestCtrl), std::memory_order_acq_rel)) return nullptr;
  // Its late stop is now ignored: close its active interval here, adding nothing past its start.
  if (uint32_t path = best->path.load(std::memory_order_relaxed); path != kNoPath) {
    PathSlot& p = paths[path];
    leave(p.opsLive, p.activeSince, p.activeNs, best->startNs);
  }
  reclaimed.fetch_add(1, std::memory_order_relaxed);
  return best;
}

// Cold path: a step is dead when its op was stopped or reclaimed (NCCL stopped the op, not the step).
StepSlot* ProxySink::Impl::takeStep() noexcept {
  uint32_t idx;
  if (freeSteps.pop(&idx)) return &steps[idx];
  for (uint32_t i = 0; i < nStep; ++i) {
    StepSlot& s = steps[i];
    uint64_t c = s.ctrl.load(std::memory_order_acquire);
    if (!(c & kLive)) continue;
    uint64_t op = s.op.load(std::memory_order_relaxed);
    uint64_t oc = ops[static_cast<uint32_t>(op)].ctrl.load(std::memory_order_acquire);
    if ((oc & kLive) && generationOf(oc) == static_cast<uint32_t>(op >> 32)) continue;  // op alive
    if (!s.ctrl.compare_exchange_strong(c, freed(c), std::memory_order_acq_rel)) continue;
    // Count what it did up to its last record; its late stop is ignored.
    endStep(s, s.stateSince);
    reclaimed.fetch_add(1, std::memory_order_relaxed);
    return &s;
  }
  return nullptr;
}

void* ProxySink::startOp(const ProfEvent& ev, uint64_t now) noexcept {
  Impl& m = *impl_;
  if (!m.usable) {
    m.poolDrops.fetch_add(1, std::memory_order_relaxed);
    return nullptr;
  }
  uint32_t path = m.findPath(pathKey(ev.channelId, ev.peer, ev.isSend));
  if (path == kNoPath) {
    m.pathsFull.fetch_add(1, std::memory_order_relaxed);
    return nullptr;
  }
  // Stamped on every attempt, so that ops NCCL never stopped turn stale even while the pool is full.
  uint64_t order = m.order.fetch_add(1, std::memory_order_relaxed);
  OpSlot* s = m.takeOp(order);
  if (s == nullptr) {
    m.poolDrops.fetch_add(1, std::memory_order_relaxed);
    return nullptr;
  }
  PathSlot& p = m.paths[path];
  p.ops.fetch_add(1, std::memory_order_relaxed);
  if (ev.nSteps > 0) p.plannedSteps.fetch_add(static_cast<uint64_t>(ev.nSteps), std::memory_order_relaxed);
  if (ev.chunkSize > 0) p.chunkSize.store(static_cast<uint64_t>(ev.chunkSize), std::memory_order_relaxed);
  enter(p.opsLive, p.activeSince, now);
  if (ev.parent == nullptr) m.opsNullParent.fetch_add(1, std::memory_order_relaxed);
  m.opsStarted.fetch_add(1, std::memory_order_relaxed);
  uint32_t gen = generationOf(s->ctrl.load(std::memory_order_relaxed));
  s->path.store(path, std::memory_order_relaxed);
  s->startNs = now;
  s->order.store(order, std::memory_order_relaxed);
  s->ctrl.store((uint64_t{gen} << 32) | kLive, std::memory_order_release);
  return slot_tag::tagged(s, gen);
}

void* ProxySink::startChild(const ProfEvent& ev, uint64_t now) noexcept {
  const uint64_t want = ev.type == kEvProxyStep ? kEvProxyOp : kEvProxyStep;
  if ((ev.type != kEvProxyStep && ev.type != kEvNetPlugin) || ev.parent == nullptr ||
      slot_tag::headOf(ev.parent)->type != want) {
    (ev.type == kEvProxyStep ? gOrphanSteps : gOrphanNet).fetch_add(1, std::memory_order_relaxed);
    return nullptr;
  }
  ProxySink* sink = ownerOf(ev.parent);
  Impl& m = *sink->impl_;
  if (ev.type == kEvNetPlugin) {
    // Plugin-specific payloads (IB QP, socket); ProxyStep already gives bytes and time per path.
    m.netPlugin.fetch_add(1, std::memory_order_relaxed);
    return nullptr;
  }
  uint32_t tag;
  OpSlot* op = slot_tag::find(m.ops.get(), m.nOp, ev.parent, &tag);
  if (op == nullptr || !liveWithTag(op->ctrl.load(std::memory_order_acquire), tag)) {
    m.stale.fetch_add(1, std::memory_order_relaxed);
    return nullptr;
  }
  return m.startStep(op, tag, now);
}

void* ProxySink::Impl::startStep(OpSlot* op, uint32_t opTag, uint64_t now) noexcept {
  StepSlot* s = takeStep();
  if (s == nullptr) {
    poolDrops.fetch_add(1, std::memory_order_relaxed);
    return nullptr;
  }
  // The op's fields were published by its ctrl store (release); recheck it is the same op afterwards.
  uint64_t oc = op->ctrl.load(std::memory_order_acquire);
  uint32_t path = op->path.load(std::memory_order_relaxed);
  if (!liveWithTag(oc, opTag) || op->ctrl.load(std::memory_order_acquire) != oc) {
    freeSteps.push(s->index);
    stale.fetch_add(1, std::memory_order_relaxed);
    return nullptr;
  }
  uint32_t gen = generationOf(s->ctrl.load(std::memory_order_relaxed));
  s->op.store((uint64_t{generationOf(oc)} << 32) | op->index, std::memory_order_relaxed);
  s->path = path;
  s->state = -1;
  s->inNet = false;
  s->startNs = s->stateSince = now;
  stepsStarted.fetch_add(1, std::memory_order_relaxed);
  s->ctrl.store((uint64_t{gen} << 32) | kLive, std::memory_order_release);
  return slot_tag::tagged(s, gen);
}

// Folds a finished (or reclaimed) step into its path: the time in its last state, its network interval.
void ProxySink::Impl::endStep(const StepSlot& s, uint64_t now) noexcept {
  PathSlot& p = paths[s.path];
  if (s.state >= 0 && now > s.stateSince)
    p.stateNs[s.state].fetch_add(now - s.stateSince, std::memory_order_relaxed);
  if (s.inNet) leave(p.stepsInNet, p.netSince, p.netNs, now);
  p.steps.fetch_add(1, std::memory_order_relaxed);
}

void ProxySink::Impl::stopOp(OpSlot* s, uint32_t tag, uint64_t now) noexcept {
  if (!release(s->ctrl, tag)) {
    stale.fetch_add(1, std::memory_order_relaxed);
    return;
  }
  PathSlot& p = paths[s->path.load(std::memory_order_relaxed)];
  leave(p.opsLive, p.activeSince, p.activeNs, now);
  freeOps.push(s->index);
}

void ProxySink::Impl::stopStep(StepSlot* s, uint32_t tag, uint64_t now) noexcept {
  if (!release(s->ctrl, tag)) {
    stale.fetch_add(1, std::memory_order_relaxed);
    return;
  }
  endStep(*s, now);
  freeSteps.push(s->index);
}

void ProxySink::stop(void* handle, uint64_t now) noexcept {
  if (handle == nullptr) return;
  Impl& m = *impl_;
  uint32_t tag;
  if (StepSlot* s = slot_tag::find(m.steps.get(), m.nStep, handle, &tag)) return m.stopStep(s, tag, now);
  if (OpSlot* s = slot_tag::find(m.ops.get(), m.nOp, handle, &tag)) m.stopOp(s, tag, now);
}

// NCCL records a step's states from the thread that starts and stops it. The tag check and the field
// updates are not one atomic step: a stale record racing the slot's next owner could misplace one
// interval, which only a NCCL start/stop mismatch makes possible.
void ProxySink::recordState(void* handle, int state, uint64_t transSize, uint64_t now) noexcept {
  int idx = proxyStateIndex(state);
  if (handle == nullptr || idx < 0) return;  // ProxyOp InProgress and others carry nothing we use
  Impl& m = *impl_;
  uint32_t tag;
  StepSlot* s = slot_tag::find(m.steps.get(), m.nStep, handle, &tag);
  if (s == nullptr) return;
  if (!liveWithTag(s->ctrl.load(std::memory_order_acquire), tag)) {
    m.stale.fetch_add(1, std::memory_order_relaxed);
    return;
  }
  // A repeated state continues the current one (NCCL repeats SendPeerWait while it polls isend): its
  // time runs on from the first, and a repeated SendWait/RecvFlushWait must not count bytes twice.
  if (idx == s->state) return;
  PathSlot& p = m.paths[s->path];
  if (s->state >= 0 && now > s->stateSince)
    p.stateNs[s->state].fetch_add(now - s->stateSince, std::memory_order_relaxed);
  if (s->inNet) {
    leave(p.stepsInNet, p.netSince, p.netNs, now);
    s->inNet = false;
  }
  if (idx == kPsSendWait || idx == kPsRecvFlushWait) p.bytes.fetch_add(transSize, std::memory_order_relaxed);
  if (isNetState(idx)) {
    enter(p.stepsInNet, p.netSince, now);
    s->inNet = true;
  }
  s->state = static_cast<int8_t>(idx);
  s->stateSince = now;
}

ProxySink::ProxySink(uint64_t commId, int rank, size_t opPoolSize, size_t pathCapacity)
    : impl_(std::make_unique<Impl>(this, opPoolSize, pathCapacity)), commId_(commId), rank_(rank) {}

ProxySink::~ProxySink() = default;

size_t ProxySink::paths(NetPathTotals* out, size_t max) const noexcept {
  const Impl& m = *impl_;
  size_t n = 0;
  for (uint32_t i = 0; i < m.nPath && n < max; ++i) {
    const PathSlot& p = m.paths[i];
    uint64_t k = p.key.load(std::memory_order_acquire);
    if (k == 0) continue;
    NetPathTotals& t = out[n++];
    t.isSend = (k >> 1) & 1;
    t.channel = static_cast<int>((k >> 8) & 0xff);
    t.peer = static_cast<int32_t>(static_cast<uint32_t>(k >> 32));
    t.ops = p.ops.load(std::memory_order_relaxed);
    t.plannedSteps = p.plannedSteps.load(std::memory_order_relaxed);
    t.steps = p.steps.load(std::memory_order_relaxed);
    t.bytes = p.bytes.load(std::memory_order_relaxed);
    t.chunkSize = p.chunkSize.load(std::memory_order_relaxed);
    t.activeNs = p.activeNs.load(std::memory_order_relaxed);
    t.netNs = p.netNs.load(std::memory_order_relaxed);
    for (int s = 0; s < kNumProxyStates; ++s) t.stateNs[s] = p.stateNs[s].load(std::memory_order_relaxed);
  }
  return n;
}

size_t ProxySink::pathCapacity() const noexcept { return impl_->nPath; }

ProxyCounters ProxySink::counters() const noexcept {
  const Impl& m = *impl_;
  ProxyCounters c;
  c.opsStarted = m.opsStarted.load(std::memory_order_relaxed);
  c.opsNullParent = m.opsNullParent.load(std::memory_order_relaxed);
  c.stepsStarted = m.stepsStarted.load(std::memory_order_relaxed);
  c.droppedPoolExhausted = m.poolDrops.load(std::memory_order_relaxed);
  c.droppedPathsFull = m.pathsFull.load(std::memory_order_relaxed);
  c.staleEvents = m.stale.load(std::memory_order_relaxed);
  c.reclaimed = m.reclaimed.load(std::memory_order_relaxed);
  c.netPluginEvents = m.netPlugin.load(std::memory_order_relaxed);
  return c;
}

size_t ProxySink::opsInFlight() const noexcept { return countInUse(impl_->ops.get(), impl_->nOp); }

size_t ProxySink::stepsInFlight() const noexcept { return countInUse(impl_->steps.get(), impl_->nStep); }

ForeignProxyCounters ProxySink::foreignCounters() noexcept {
  ForeignProxyCounters c;
  c.pxnOps = gPxnOps.load(std::memory_order_relaxed);
  c.orphanSteps = gOrphanSteps.load(std::memory_order_relaxed);
  c.orphanNetPlugin = gOrphanNet.load(std::memory_order_relaxed);
  return c;
}

void ProxySink::countPxnOp() noexcept { gPxnOps.fetch_add(1, std::memory_order_relaxed); }

ProxySink* ProxySink::ownerOf(void* handle) noexcept {
  if (handle == nullptr) return nullptr;
  return static_cast<ProxySink*>(slot_tag::headOf(handle)->owner);
}

}  // namespace wirewise
