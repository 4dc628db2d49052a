// EventSink: see event_sink.h for the contract. All state transitions of a Coll slot are RMWs on one
// 64-bit control word, so "the collective is complete" becomes true at exactly one transition and
// exactly one thread finalizes it (emits the sample and frees the slot).
#include "telemetry/event_sink.h"

#include <algorithm>
#include <new>

#include "adaptive/types.h"
#include "telemetry/lockfree.h"
#include "telemetry/slot_tag.h"

namespace wirewise {
namespace {

constexpr int kSummaryChannels = 64;  // channels the slow-channel summary covers (NCCL's MAXCHANNELS)

// Coll control word: [gen:32][folders:8][unused:5][inUse:1][poisoned:1][stopped:1][channelsLeft:16].
// "folders" counts KernelCh stops folding their times in right now; a slot is only recycled with 0.
constexpr uint64_t kLeftMask = 0xffff;
constexpr uint64_t kStopped = 1ull << 16;
constexpr uint64_t kPoisoned = 1ull << 17;
constexpr uint64_t kInUse = 1ull << 18;
constexpr uint64_t kFolder = 1ull << 24;
constexpr uint64_t kFolderMask = 0xffull << 24;
// Handles: see telemetry/slot_tag.h.
using slot_tag::kHighTag;
using slot_tag::tagged;
using slot_tag::tagOf;
using slot_tag::untag;

uint32_t genOf(uint64_t c) { return static_cast<uint32_t>(c >> 32); }
uint64_t leftOf(uint64_t c) { return c & kLeftMask; }
bool finalizable(uint64_t c) { return (c & kInUse) && (c & kStopped) && leftOf(c) == 0 && !(c & kFolderMask); }

void atomicMin(std::atomic<uint64_t>& a, uint64_t v) {
  uint64_t cur = a.load(std::memory_order_relaxed);
  while (v < cur && !a.compare_exchange_weak(cur, v, std::memory_order_relaxed)) {
  }
}
void atomicMax(std::atomic<uint64_t>& a, uint64_t v) {
  uint64_t cur = a.load(std::memory_order_relaxed);
  while (v > cur && !a.compare_exchange_weak(cur, v, std::memory_order_relaxed)) {
  }
}

struct alignas(64) CollSlot : SlotHead {
  std::atomic<uint64_t> ctrl{0};
  std::atomic<uint64_t> order{0};  // the start (collCalls) that took it: a slot a pool's worth older is stale
  std::atomic<uint64_t> minStart{UINT64_MAX}, maxStop{0};
  // Per-channel times for the slow-channel summary: bit c of chanSeen once channel c (< 64) stored its
  // duration in chanNs[c]. Only chanSeen is reset per collective; the finalizer reads the seen entries.
  std::atomic<uint64_t> chanSeen{0};
  std::atomic<uint32_t> chanNs[kSummaryChannels];
  // Written by the owner before the control word publishes the slot; read by the finalizer.
  CollSample proto;
  bool sampleable = false;
  std::atomic<uint8_t> opened{0};  // KernelCh children started: learning needs every one of them stopped
  // nChannels << 8 | the KernelCh children it waits for (expectedChildren()). Atomic: a child that arrives
  // after the parent completed reads it while the slot may be refilled.
  std::atomic<uint16_t> shape{0};
};

// KernelCh control word: [gen:32][filling: the folder bit 24][inUse bit 18]. parent packs
// (parent gen << 32 | parent index).
struct alignas(64) ChanSlot : SlotHead {
  std::atomic<uint64_t> ctrl{0};
  std::atomic<uint64_t> parent{0};
  std::atomic<uint64_t> order{0};  // the KernelCh start (chanCalls) that took it
  std::atomic<uint64_t> stopTs{0};
  // Atomic (relaxed) because a late stop reads them while the slot may be taken again: its free then fails.
  std::atomic<uint64_t> startTs{0};
  std::atomic<uint8_t> channelId{0};
};

// The slow-channel summary of one collective from the durations its channels stored (at least two
// needed): the channels above kSlowChannelFactor x the lower median, and the slowest over that median.
// The lower median, so that one slow channel of two still stands out. At most 64 values on the stack.
void summarize(const std::atomic<uint32_t>* chanNs, uint64_t seen, CollSample* out) noexcept {
  uint32_t ns[kSummaryChannels], sorted[kSummaryChannels];
  uint8_t id[kSummaryChannels];
  int n = 0;
  for (uint64_t m = seen; m != 0; m &= m - 1) {
    const int c = __builtin_ctzll(m);
    id[n] = static_cast<uint8_t>(c);
    ns[n] = sorted[n] = chanNs[c].load(std::memory_order_relaxed);
    ++n;
  }
  if (n < 2) return;
  uint32_t* mid = sorted + (n - 1) / 2;
  std::nth_element(sorted, mid, sorted + n);
  const double median = *mid;
  const double slowest = *std::max_element(mid, sorted + n);
  if (median <= 0 || slowest <= kSlowChannelFactor * median) return;
  uint64_t mask = 0;
  for (int i = 0; i < n; ++i)
    if (ns[i] > kSlowChannelFactor * median) mask |= uint64_t{1} << id[i];
  out->slowChannels = mask;
  out->slowRatioQ8 = static_cast<uint16_t>(std::min(65535.0, 256.0 * slowest / median + 0.5));
}

}  // namespace

struct EventSink::Impl {
  Impl(EventSink* owner, int ranks, size_t collPool)
      : nRanks(ranks),
        nColl(static_cast<uint32_t>(collPool == 0 ? 1 : collPool)),
        nChan(nColl * 4),
        colls(new CollSlot[nColl]),
        chans(new ChanSlot[nChan]) {
    for (uint32_t i = 0; i < nColl; ++i) colls[i].type = kEvColl, colls[i].owner = owner, colls[i].index = i;
    for (uint32_t i = 0; i < nChan; ++i) chans[i].type = kEvKernelCh, chans[i].owner = owner, chans[i].index = i;
    for (auto& e : learned) e.store(0, std::memory_order_relaxed);
    // The top 16 address bits carry tags: a pool above 2^48 (never seen without an mmap hint) cannot
    // be tracked, so the sink then refuses every event (counted as pool drops) instead of misbehaving.
    usable = ((reinterpret_cast<uintptr_t>(colls.get() + nColl) | reinterpret_cast<uintptr_t>(chans.get() + nChan)) &
              kHighTag) == 0;
  }

  template <class Slot>
  static Slot* find(Slot* base, uint32_t n, void* handle, uint32_t* tag) {
    return slot_tag::find(base, n, handle, tag);
  }

  void* startColl(const CollStart& ev) noexcept;
  void* startChannel(const ChannelStart& ev) noexcept;
  void recordStop(ChanSlot* ch, uint32_t tag, uint64_t pTimer) noexcept;
  void stopColl(CollSlot* s, uint32_t tag) noexcept;
  void stopChannel(ChanSlot* ch, uint32_t tag) noexcept;
  CollSlot* claimColl(uint64_t k, uint32_t* gen) noexcept;
  bool takeColl(CollSlot* s, uint64_t k, bool orStale, uint32_t* gen) noexcept;
  ChanSlot* claimChannel(uint64_t k, uint32_t* gen) noexcept;
  bool takeChannel(ChanSlot* ch, uint64_t k, bool orStale, uint32_t* gen) noexcept;
  uint8_t expectedChildren(uint8_t nChannels) const noexcept;
  enum class ChanEnd { kTimed, kUntimed, kLost };
  void consumeChannel(CollSlot* p, uint32_t pgen, uint64_t start, uint64_t stop, ChanEnd end,
                      int channel = -1) noexcept;
  void finalize(CollSlot* s, uint64_t c) noexcept;

  int nRanks;
  bool usable = false;
  uint32_t nColl, nChan;
  std::unique_ptr<CollSlot[]> colls;
  std::unique_ptr<ChanSlot[]> chans;
  // The KernelCh children NCCL was seen to emit for a Coll of n channels, when fewer than n (0: n itself).
  std::atomic<uint8_t> learned[256];
  std::unique_ptr<SampleRing> ring;
  std::atomic<uint64_t> collCalls{0}, chanCalls{0};
  std::atomic<uint64_t> started{0}, emitted{0}, poolDrops{0}, ringDrops{0}, incomplete{0}, orphans{0}, unsampled{0};
};

// Slots are taken in turn, in O(1): start k looks at slots k, k+1, ... (mod pool), at most kProbe of
// them, and takes the first free one, else the first stale one. Stale: taken by a start a whole pool's
// worth of starts earlier and still not finished. For a Coll slot that means a collective that is not coming back whole
// (one communicator's collectives share a stream and complete in order: a start/stop mismatch, children
// never enabled, an aborted communicator or a mask change); for a KernelCh slot, a channel whose stop
// never came (NCCL's proxy issues start, record and stop back to back). A stale slot is reclaimed on the
// spot, and its old owner's late events then fail their tag check. With none of the kProbe free or
// stale (a pool's worth in flight, all young) the event is dropped and counted, as a full pool's was.
// claimColl and claimChannel spell the same loop out: one template taking takeColl/takeChannel as a
// lambda measured 15-20 instructions more per Coll+KernelCh pair (bench.callgrind_profiler).
constexpr uint32_t kProbe = 8;

namespace {

// Taken a pool's worth of starts before start k: old enough to be reclaimed if still in use.
template <class Slot>
bool aged(const Slot& s, uint64_t k, uint32_t n) noexcept {
  return k - s.order.load(std::memory_order_relaxed) >= n;
}

}  // namespace

CollSlot* EventSink::Impl::claimColl(uint64_t k, uint32_t* gen) noexcept {
  for (bool stale : {false, true})
    for (uint32_t i = 0; i < std::min(kProbe, nColl); ++i) {
      CollSlot* s = &colls[(k + i) % nColl];
      if (takeColl(s, k, stale, gen)) return s;
    }
  return nullptr;
}

// Takes s for start k if it is free (or stale, when orStale); false when it is neither, or is being
// folded or finalized at this very moment (a late child of its old owner).
bool EventSink::Impl::takeColl(CollSlot* s, uint64_t k, bool orStale, uint32_t* gen) noexcept {
  uint64_t c = s->ctrl.load(std::memory_order_acquire);
  for (;;) {
    const bool stale = (c & kInUse) != 0;
    if (stale && (!orStale || (c & kFolderMask) || finalizable(c) || !aged(*s, k, nColl))) return false;
    // Held with one folder while it is refilled, so that no late child of the old owner can touch it.
    const uint32_t g = genOf(c) + (stale ? 1 : 0);
    if (!s->ctrl.compare_exchange_weak(c, (uint64_t{g} << 32) | kInUse | kFolder, std::memory_order_acq_rel,
                                       std::memory_order_acquire))
      continue;
    if (stale) {
      incomplete.fetch_add(1, std::memory_order_relaxed);
      // What NCCL actually emitted for it: some children, all stopped, none since a pool's worth of
      // collectives. From now on a Coll of that many channels waits for that many children, so that a
      // release that emits fewer KernelCh events than channels loses no more samples (one more child
      // than expected undoes it: startChannel).
      const uint8_t seen = static_cast<uint8_t>((s->shape.load(std::memory_order_relaxed) & 0xff) - leftOf(c));
      const uint8_t n = s->proto.nChannels;
      if ((c & kStopped) && !(c & kPoisoned) && seen > 0 && seen < n &&
          s->opened.load(std::memory_order_relaxed) == seen)
        learned[n].store(seen, std::memory_order_relaxed);
    }
    s->order.store(k, std::memory_order_relaxed);
    *gen = g;
    return true;
  }
}

ChanSlot* EventSink::Impl::claimChannel(uint64_t k, uint32_t* gen) noexcept {
  for (bool stale : {false, true})
    for (uint32_t i = 0; i < std::min(kProbe, nChan); ++i) {
      ChanSlot* ch = &chans[(k + i) % nChan];
      if (takeChannel(ch, k, stale, gen)) return ch;
    }
  return nullptr;
}

bool EventSink::Impl::takeChannel(ChanSlot* ch, uint64_t k, bool orStale, uint32_t* gen) noexcept {
  uint64_t c = ch->ctrl.load(std::memory_order_acquire);
  for (;;) {
    if (c & kInUse) {
      if (!orStale || (c & kFolder) || !aged(*ch, k, nChan)) return false;
      // Its stop never came: free it (next generation); its parent counts it as lost.
      const uint64_t par = ch->parent.load(std::memory_order_acquire);
      if (!ch->ctrl.compare_exchange_weak(c, uint64_t{genOf(c) + 1} << 32, std::memory_order_acq_rel,
                                          std::memory_order_acquire))
        continue;
      orphans.fetch_add(1, std::memory_order_relaxed);
      consumeChannel(&colls[static_cast<uint32_t>(par)], static_cast<uint32_t>(par >> 32), 0, 0, ChanEnd::kLost);
      c = uint64_t{genOf(c) + 1} << 32;
    }
    // Held (the folder bit: "being filled") until startChannel publishes it, so that no other start
    // takes its order for an old one.
    if (ch->ctrl.compare_exchange_weak(c, c | kInUse | kFolder, std::memory_order_acq_rel,
                                       std::memory_order_acquire)) {
      ch->order.store(k, std::memory_order_relaxed);
      *gen = genOf(c);
      return true;
    }
  }
}

uint8_t EventSink::Impl::expectedChildren(uint8_t nChannels) const noexcept {
  const uint8_t l = learned[nChannels].load(std::memory_order_relaxed);
  return l != 0 ? l : nChannels;
}

void* EventSink::Impl::startColl(const CollStart& ev) noexcept {
  const uint64_t collIndex = collCalls.fetch_add(1, std::memory_order_relaxed);
  uint32_t gen;
  CollSlot* s = claimColl(collIndex, &gen);
  if (s == nullptr) {
    poolDrops.fetch_add(1, std::memory_order_relaxed);
    return nullptr;
  }
  int coll = collIndexFromName(ev.func);
  int typeSize = datatypeSize(ev.datatype);
  uint64_t bytes = static_cast<uint64_t>(ev.count) * static_cast<uint64_t>(typeSize);
  // NCCL's Coll count is per rank for AllGather/ReduceScatter; the tuner saw nRanks x that.
  if (coll == static_cast<int>(CollType::AllGather) || coll == static_cast<int>(CollType::ReduceScatter)) {
    bytes *= static_cast<uint64_t>(nRanks > 0 ? nRanks : 1);
  }
  s->proto = CollSample{};
  s->proto.seqNumber = ev.seqNumber;
  s->proto.collIndex = collIndex;
  s->proto.bytes = bytes;
  s->proto.coll = static_cast<int8_t>(coll);
  s->proto.algo = static_cast<int8_t>(algoIndexFromName(ev.algo));
  s->proto.proto = static_cast<int8_t>(protoIndexFromName(ev.proto));
  s->proto.nChannels = ev.nChannels;
  const uint8_t expected = expectedChildren(ev.nChannels);
  s->shape.store(static_cast<uint16_t>(ev.nChannels << 8 | expected), std::memory_order_relaxed);
  s->sampleable = coll >= 0 && typeSize > 0;
  s->minStart.store(UINT64_MAX, std::memory_order_relaxed);
  s->maxStop.store(0, std::memory_order_relaxed);
  s->chanSeen.store(0, std::memory_order_relaxed);
  s->opened.store(0, std::memory_order_relaxed);
  // release: publishes the fields above to whichever thread finalizes this slot.
  s->ctrl.store((uint64_t{gen} << 32) | kInUse | expected, std::memory_order_release);
  started.fetch_add(1, std::memory_order_relaxed);
  return tagged(s, gen);
}

void EventSink::Impl::stopColl(CollSlot* s, uint32_t tag) noexcept {
  uint64_t c = s->ctrl.load(std::memory_order_acquire);
  for (;;) {
    // A stop for a recycled slot (tag mismatch) or a second stop is ignored.
    if (!(c & kInUse) || tagOf(genOf(c)) != tag || (c & kStopped)) return;
    uint64_t n = c | kStopped;
    if (s->ctrl.compare_exchange_weak(c, n, std::memory_order_acq_rel, std::memory_order_acquire)) {
      if (finalizable(n)) finalize(s, n);
      return;
    }
  }
}

void* EventSink::Impl::startChannel(const ChannelStart& ev) noexcept {
  uint32_t tag;
  CollSlot* p = ev.parent ? find(colls.get(), nColl, ev.parent, &tag) : nullptr;
  uint64_t pc = p ? p->ctrl.load(std::memory_order_acquire) : 0;
  if (p == nullptr || !(pc & kInUse) || tagOf(genOf(pc)) != tag || leftOf(pc) == 0) {
    // A child beyond what was expected of a parent that was waiting for fewer than its channels: NCCL
    // emits them all again, so expect them all (the parent completed early and its sample is one).
    const uint16_t shape = p != nullptr ? p->shape.load(std::memory_order_relaxed) : 0;
    if ((shape & 0xff) < (shape >> 8) &&
        (tagOf(genOf(pc)) == tag || (!(pc & kInUse) && tagOf(genOf(pc)) == tagOf(tag + 1))))
      learned[shape >> 8].store(0, std::memory_order_relaxed);
    orphans.fetch_add(1, std::memory_order_relaxed);
    return nullptr;
  }
  uint32_t pgen = genOf(pc);
  uint32_t gen;
  ChanSlot* ch = claimChannel(chanCalls.fetch_add(1, std::memory_order_relaxed), &gen);
  if (ch == nullptr) {
    poolDrops.fetch_add(1, std::memory_order_relaxed);
    // The parent can no longer be timed completely: count this channel as done, untimed, and poison
    // the parent so it completes (and frees its slot) without a misleading sample.
    consumeChannel(p, pgen, 0, 0, ChanEnd::kLost);
    return nullptr;
  }
  ch->startTs.store(ev.pTimer, std::memory_order_relaxed);
  ch->channelId.store(ev.channelId, std::memory_order_relaxed);
  ch->stopTs.store(0, std::memory_order_relaxed);
  ch->parent.store((uint64_t{pgen} << 32) | p->index, std::memory_order_relaxed);
  p->opened.fetch_add(1, std::memory_order_relaxed);
  ch->ctrl.store((uint64_t{gen} << 32) | kInUse, std::memory_order_release);
  return tagged(ch, gen);
}

void EventSink::Impl::stopChannel(ChanSlot* ch, uint32_t tag) noexcept {
  // Read the fields while the slot is still ours, then free it (next generation): a slot is taken again
  // only when its turn comes (startChannel), and the free below fails if it was reclaimed meanwhile.
  const uint64_t start = ch->startTs.load(std::memory_order_relaxed);
  const uint64_t stop = ch->stopTs.load(std::memory_order_relaxed);
  const uint64_t par = ch->parent.load(std::memory_order_acquire);
  const int channel = ch->channelId.load(std::memory_order_relaxed);
  uint64_t c = ch->ctrl.load(std::memory_order_acquire);
  for (;;) {
    if (!(c & kInUse) || tagOf(genOf(c)) != tag) return;  // late stop of a recycled slot
    if (ch->ctrl.compare_exchange_weak(c, uint64_t{genOf(c) + 1} << 32, std::memory_order_acq_rel,
                                       std::memory_order_acquire))
      break;
  }
  // telemetry.md 4.6: some channels report a stop of 0; those (and stop < start) are not timed.
  ChanEnd end = stop != 0 && stop >= start ? ChanEnd::kTimed : ChanEnd::kUntimed;
  consumeChannel(&colls[static_cast<uint32_t>(par)], static_cast<uint32_t>(par >> 32), start, stop, end, channel);
}

// Counts one channel of parent p (generation pgen) as done, folding in [start, stop] when timed. A
// channel lost for want of a slot poisons the parent: it completes, but yields no sample.
void EventSink::Impl::consumeChannel(CollSlot* p, uint32_t pgen, uint64_t start, uint64_t stop, ChanEnd end,
                                     int channel) noexcept {
  bool lost = end == ChanEnd::kLost;
  uint64_t c = p->ctrl.load(std::memory_order_acquire);
  for (;;) {
    if (!(c & kInUse) || genOf(c) != pgen || leftOf(c) == 0 || (c & kFolderMask) == kFolderMask) {
      orphans.fetch_add(1, std::memory_order_relaxed);  // parent recycled, or one channel too many
      return;
    }
    // Enter: claim one channel credit and hold the slot (folders + 1) while folding.
    uint64_t n = c - 1 + kFolder + (lost ? kPoisoned & ~c : 0);
    if (p->ctrl.compare_exchange_weak(c, n, std::memory_order_acq_rel, std::memory_order_acquire)) break;
  }
  if (end == ChanEnd::kTimed) {
    atomicMin(p->minStart, start);
    atomicMax(p->maxStop, stop);
    // Published to the finalizer by the control word's release below, like the two above.
    if (channel >= 0 && channel < kSummaryChannels) {
      p->chanNs[channel].store(static_cast<uint32_t>(std::min<uint64_t>(stop - start, UINT32_MAX)),
                               std::memory_order_relaxed);
      p->chanSeen.fetch_or(uint64_t{1} << channel, std::memory_order_relaxed);
    }
  }
  uint64_t n = p->ctrl.fetch_sub(kFolder, std::memory_order_acq_rel) - kFolder;
  if (finalizable(n)) finalize(p, n);
}

void EventSink::Impl::finalize(CollSlot* s, uint64_t c) noexcept {
  uint64_t minStart = s->minStart.load(std::memory_order_relaxed);
  uint64_t maxStop = s->maxStop.load(std::memory_order_relaxed);
  if (c & kPoisoned) {
    incomplete.fetch_add(1, std::memory_order_relaxed);
  } else if (!s->sampleable || minStart == UINT64_MAX || maxStop < minStart) {
    unsampled.fetch_add(1, std::memory_order_relaxed);
  } else {
    CollSample out = s->proto;
    out.durationNs = maxStop - minStart;
    const uint64_t seen = s->chanSeen.load(std::memory_order_relaxed);
    if ((seen & (seen - 1)) != 0) summarize(s->chanNs, seen, &out);  // two channels or more
    if (ring->push(out)) {
      emitted.fetch_add(1, std::memory_order_relaxed);
    } else {
      ringDrops.fetch_add(1, std::memory_order_relaxed);
    }
  }
  s->ctrl.store(uint64_t{genOf(c) + 1} << 32, std::memory_order_release);
}

EventSink::EventSink(uint64_t commId, int rank, int nRanks, size_t collPoolSize, size_t ringSize)
    : impl_(std::make_unique<Impl>(this, nRanks, collPoolSize)), commId_(commId), rank_(rank), nRanks_(nRanks) {
  impl_->ring = std::make_unique<SampleRing>(ringSize);
}

EventSink::~EventSink() = default;

void* EventSink::start(const ProfEvent& ev) noexcept {
  if (ev.type == kEvColl) return startColl(collStartOf(ev));
  if (ev.type == kEvKernelCh) return startChannel(channelStartOf(ev));
  return nullptr;
}

void* EventSink::startColl(const CollStart& c) noexcept {
  if (!impl_->usable) [[unlikely]] {
    impl_->poolDrops.fetch_add(1, std::memory_order_relaxed);
    return nullptr;
  }
  return impl_->startColl(c);
}

void* EventSink::startChannel(const ChannelStart& c) noexcept {
  if (!impl_->usable) [[unlikely]] {
    impl_->poolDrops.fetch_add(1, std::memory_order_relaxed);
    return nullptr;
  }
  return impl_->startChannel(c);
}

void EventSink::stop(void* handle) noexcept {
  if (handle == nullptr) return;
  uint32_t tag;
  if (CollSlot* s = Impl::find(impl_->colls.get(), impl_->nColl, handle, &tag)) return impl_->stopColl(s, tag);
  if (ChanSlot* ch = Impl::find(impl_->chans.get(), impl_->nChan, handle, &tag)) impl_->stopChannel(ch, tag);
}

void EventSink::recordState(void* handle, int state, uint64_t pTimer) noexcept {
  if (handle == nullptr || state != kStateKernelChStop) return;
  uint32_t tag;
  if (ChanSlot* ch = Impl::find(impl_->chans.get(), impl_->nChan, handle, &tag)) impl_->recordStop(ch, tag, pTimer);
}

// The slot head names the pool: Coll and KernelCh slots are the only kinds this sink issues.
void EventSink::stopOwn(void* handle) noexcept {
  SlotHead* h = reinterpret_cast<SlotHead*>(untag(handle));
  if (h->type == kEvColl)
    impl_->stopColl(static_cast<CollSlot*>(h), slot_tag::tagOfHandle(handle));
  else
    impl_->stopChannel(static_cast<ChanSlot*>(h), slot_tag::tagOfHandle(handle));
}

void EventSink::recordStopOwn(void* handle, uint64_t pTimer) noexcept {
  SlotHead* h = reinterpret_cast<SlotHead*>(untag(handle));
  if (h->type == kEvKernelCh) impl_->recordStop(static_cast<ChanSlot*>(h), slot_tag::tagOfHandle(handle), pTimer);
}

void EventSink::Impl::recordStop(ChanSlot* ch, uint32_t tag, uint64_t pTimer) noexcept {
  uint64_t c = ch->ctrl.load(std::memory_order_acquire);
  // A recycled slot (tag mismatch) is left alone. The check and the store are not one atomic step; a
  // slot is only recycled once its parent is gone, and NCCL records right before it stops, so the
  // window is a stale event racing the slot's next owner, whose own record then overwrites it.
  if ((c & kInUse) && tagOf(genOf(c)) == tag) ch->stopTs.store(pTimer, std::memory_order_relaxed);
}

size_t EventSink::drain(CollSample* out, size_t max) noexcept {
  if (out == nullptr) return 0;
  size_t n = 0;
  while (n < max && impl_->ring->pop(&out[n])) ++n;
  return n;
}

SinkCounters EventSink::counters() const noexcept {
  const Impl& m = *impl_;
  SinkCounters c;
  c.collsStarted = m.started.load(std::memory_order_relaxed);
  c.samplesEmitted = m.emitted.load(std::memory_order_relaxed);
  c.droppedPoolExhausted = m.poolDrops.load(std::memory_order_relaxed);
  c.droppedRingFull = m.ringDrops.load(std::memory_order_relaxed);
  c.droppedIncomplete = m.incomplete.load(std::memory_order_relaxed);
  c.orphanEvents = m.orphans.load(std::memory_order_relaxed);
  c.unsampled = m.unsampled.load(std::memory_order_relaxed);
  return c;
}

size_t EventSink::collsInFlight() const noexcept {
  size_t n = 0;
  for (uint32_t i = 0; i < impl_->nColl; ++i) n += (impl_->colls[i].ctrl.load(std::memory_order_acquire) & kInUse) != 0;
  return n;
}

size_t EventSink::channelsInFlight() const noexcept {
  size_t n = 0;
  for (uint32_t i = 0; i < impl_->nChan; ++i) n += (impl_->chans[i].ctrl.load(std::memory_order_acquire) & kInUse) != 0;
  return n;
}

EventSink* EventSink::ownerOf(void* handle) noexcept {
  if (handle == nullptr) return nullptr;
  return static_cast<EventSink*>(slot_tag::headOf(handle)->owner);
}

}  // namespace wirewise
