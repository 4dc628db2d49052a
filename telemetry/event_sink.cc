// EventSink: see event_sink.h for the contract. All state transitions of a Coll slot are RMWs on one
// 64-bit control word, so "the collective is complete" becomes true at exactly one transition and
// exactly one thread finalizes it (emits the sample and frees the slot). A KernelCh child has no slot of
// its own: it lives in its parent's, as one bit of `live` and one entry of t0/t1.
#include "telemetry/event_sink.h"

#include <algorithm>
#include <bit>

#include "adaptive/types.h"
#include "telemetry/lockfree.h"
#include "telemetry/slot_tag.h"

namespace wirewise {
namespace {

// A Coll slot keeps kMaxChannels channels, NCCL's MAXCHANNELS (adaptive/types.h).
static_assert(kMaxChannels + 1 <= static_cast<int>(slot_tag::kMaxSub), "channel + 1 is a handle's sub-index");

// Coll control word: [gen:16][unused:8][folders:16][unused:6][inUse:1][poisoned:1][channelsLeft:16]. The
// generation sits where a handle carries its tag (slot_tag::kTagBits), so the two compare in place.
// "folders" counts threads working inside the slot right now (a child starting or stopping); a slot is
// only recycled with 0. They are the threads that call NCCL's profiler for one collective at one moment
// (its proxy thread, a few at most): 16 bits cannot overflow, so entering does not test for room. The
// Coll's own stop is not in the word: it only means "enqueued", and the collective is whole once its
// children have stopped, so a Coll stop costs a handle check and nothing more.
constexpr uint64_t kLeftMask = 0xffff;
constexpr uint64_t kPoisoned = 1ull << 17;
constexpr uint64_t kInUse = 1ull << 18;
constexpr uint64_t kFolder = 1ull << 24;
constexpr uint64_t kFolderMask = 0xffffull << 24;
// Handles: see telemetry/slot_tag.h. A Tag is a generation in the top 16 bits, as both the control word
// and a handle carry it; the next generation is tag + kNextGen (it wraps with the tag).
using Tag = uint64_t;
constexpr uint64_t kNextGen = uint64_t{1} << slot_tag::kTagShift;
using slot_tag::untag;

Tag genOf(uint64_t c) { return c & slot_tag::kTagBits; }
uint64_t leftOf(uint64_t c) { return c & kLeftMask; }
bool finalizable(uint64_t c) { return (c & kInUse) && leftOf(c) == 0 && !(c & kFolderMask); }
// The same, for the word a folder's leaving left: the slot is in use (the folder held it).
bool finalizableAfterLeave(uint64_t n) { return (n & (kLeftMask | kFolderMask)) == 0; }
// A child may enter the slot of generation tag `tag`: that generation, and a channel still expected (so
// in use: a free slot's word is its generation alone).
bool enterable(uint64_t c, Tag tag) { return genOf(c) == tag && leftOf(c) != 0; }

struct alignas(kSlotAlign) CollSlot : SlotHead {
  std::atomic<uint64_t> ctrl{0};
  std::atomic<uint64_t> order{0};  // the start (collCalls) that took it: a slot a pool's worth older is stale
  // Bit c of live: channel c's KernelCh started and not yet stopped. Bit c of timed: channel c stopped
  // with a usable time, t0[c]..t1[c] on the GPU clock. Both reset per collective; t0/t1 are written by
  // the child's start (t1 by its KernelChStop record) and read by the finalizer for the timed bits only.
  std::atomic<uint64_t> live{0}, timed{0};
  // Written by the owner before the control word publishes the slot; completed and pushed by the
  // finalizer.
  CollRecord rec;
  // nChannels << 8 | the KernelCh children it waits for (expectedChildren()). Atomic: a child that arrives
  // after the parent completed reads it while the slot may be refilled.
  std::atomic<uint16_t> shape{0};
  std::atomic<uint64_t> t0[kMaxChannels], t1[kMaxChannels];
};

// The slow-channel summary of one collective from its timed channels (at least two needed): the
// channels above kSlowChannelFactor x the lower median, and the slowest over that median. The lower
// median, so that one slow channel of two still stands out. At most 64 values on the stack.
void summarize(const uint32_t* ns, const uint8_t* id, int n, CollRecord* out) noexcept {
  uint32_t sorted[kMaxChannels];
  std::copy(ns, ns + n, sorted);
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

// max(stop) - min(start) over two or more timed channels, and each channel's own time for the summary.
// Out of line: its arrays would give the one-channel case a large stack frame.
[[gnu::noinline]] void timeChannels(const CollSlot* s, uint64_t timed, CollRecord* out) noexcept {
  uint32_t ns[kMaxChannels];
  uint8_t id[kMaxChannels];
  uint64_t minStart = UINT64_MAX, maxStop = 0;
  int n = 0;
  for (uint64_t m = timed; m != 0; m &= m - 1, ++n) {
    const int ch = __builtin_ctzll(m);
    const uint64_t a = s->t0[ch].load(std::memory_order_relaxed), b = s->t1[ch].load(std::memory_order_relaxed);
    minStart = std::min(minStart, a);
    maxStop = std::max(maxStop, b);
    id[n] = static_cast<uint8_t>(ch);
    ns[n] = static_cast<uint32_t>(std::min<uint64_t>(b - a, UINT32_MAX));
  }
  out->durationNs = maxStop - minStart;
  summarize(ns, id, n, out);
}

}  // namespace

struct EventSink::Impl {
  Impl(EventSink* owner, size_t collPool)
      : nColl(static_cast<uint32_t>(std::bit_ceil(collPool == 0 ? 1 : collPool))), colls(new CollSlot[nColl]) {
    for (uint32_t i = 0; i < nColl; ++i) colls[i].type = kEvColl, colls[i].owner = owner, colls[i].index = i;
    for (auto& e : learned) e.store(0, std::memory_order_relaxed);
    // The top 16 address bits carry tags: a pool above 2^48 (never seen without an mmap hint) cannot
    // be tracked, so the sink then refuses every event (counted as pool drops) instead of misbehaving.
    usable = slot_tag::taggable(colls.get(), nColl);
  }

  void* startColl(const CollStart& ev) noexcept;
  void* startChannel(const ChannelStart& ev, EventSink* self) noexcept;
  static void recordStop(CollSlot* s, Tag tag, uint32_t channel, uint64_t pTimer) noexcept;
  void stopChannel(CollSlot* s, Tag tag, uint32_t channel) noexcept;
  void stopAny(CollSlot* s, void* handle) noexcept;
  [[gnu::noinline, gnu::cold]] CollSlot* claimSlow(uint64_t k, uint8_t nChannels, Tag* gen) noexcept;
  void* fill(CollSlot* s, Tag gen, uint64_t k, const CollStart& ev) noexcept;
  CollSlot* claimColl(uint64_t k, Tag* gen) noexcept;
  bool takeColl(CollSlot* s, uint64_t k, bool orStale, Tag* gen) noexcept;
  uint8_t expectedChildren(uint8_t nChannels) const noexcept;
  [[gnu::noinline, gnu::cold]] void* orphan(CollSlot* p, uint64_t pc, Tag tag) noexcept;
  [[gnu::noinline, gnu::cold]] void* startBeyondMax(CollSlot* p, Tag tag) noexcept;
  [[gnu::noinline, gnu::cold]] void* startedTwice(CollSlot* p) noexcept;
  [[gnu::noinline, gnu::cold]] void* finalizeThen(CollSlot* p, uint64_t c, void* handle) noexcept;
  [[gnu::always_inline]] void leave(CollSlot* s, uint64_t delta) noexcept;
  [[gnu::noinline]] void finalize(CollSlot* s, uint64_t c) noexcept;

  bool usable = false;
  uint32_t nColl;  // a power of two: start k's slot is k & (nColl - 1)
  std::unique_ptr<CollSlot[]> colls;
  // The KernelCh children NCCL was seen to emit for a Coll of n channels, when fewer than n (0: n itself).
  std::atomic<uint8_t> learned[256];
  std::unique_ptr<SampleRing> ring;
  std::atomic<uint64_t> collCalls{0};
  // Started collectives are collCalls - claimDrops and emitted samples the ring's pushes: neither costs
  // the hot path a count of its own.
  std::atomic<uint64_t> claimDrops{0}, poolDrops{0}, ringDrops{0}, incomplete{0}, orphans{0}, unsampled{0};
  std::atomic<uint64_t> unresolved{0};  // drained records of an unknown func or datatype
};

// Slots are taken in turn, in O(1): start k looks at slots k, k+1, ... (mod pool), at most kProbe of
// them, and takes the first free one, else the first stale one. Stale: taken by a start a whole pool's
// worth of starts earlier and still not finished: a collective that is not coming back whole (one
// communicator's collectives share a stream and complete in order: a start/stop mismatch, children
// never enabled, an aborted communicator or a mask change). A stale slot is reclaimed on the spot, and
// its old owner's late events then fail their tag check. With none of the kProbe free or stale (a pool's
// worth in flight, all young) the event is dropped and counted, as a full pool's was.
constexpr uint32_t kProbe = 8;

CollSlot* EventSink::Impl::claimColl(uint64_t k, Tag* gen) noexcept {
  for (bool stale : {false, true})
    for (uint32_t i = 0; i < std::min(kProbe, nColl); ++i) {
      CollSlot* s = &colls[(k + i) & (nColl - 1)];
      if (takeColl(s, k, stale, gen)) return s;
    }
  return nullptr;
}

// Takes s for start k if it is free (or stale, when orStale); false when it is neither, or a child is
// inside it or it is being finalized at this very moment.
bool EventSink::Impl::takeColl(CollSlot* s, uint64_t k, bool orStale, Tag* gen) noexcept {
  uint64_t c = s->ctrl.load(std::memory_order_acquire);
  for (;;) {
    const bool stale = (c & kInUse) != 0;
    if (stale && (!orStale || (c & kFolderMask) || finalizable(c) ||
                  k - s->order.load(std::memory_order_relaxed) < nColl))
      return false;
    // Held with one folder while it is refilled, so that no late child of the old owner can touch it.
    const Tag g = genOf(c) + (stale ? kNextGen : 0);
    if (!s->ctrl.compare_exchange_weak(c, g | kInUse | kFolder, std::memory_order_acq_rel,
                                       std::memory_order_acquire))
      continue;
    if (stale) {
      incomplete.fetch_add(1, std::memory_order_relaxed);
      // What NCCL actually emitted for it: some children, all stopped, none since a pool's worth of
      // collectives. From now on a Coll of that many channels waits for that many children, so that a
      // release that emits fewer KernelCh events than channels loses no more samples (one more child
      // than expected undoes it: orphan()).
      const uint8_t seen = static_cast<uint8_t>((s->shape.load(std::memory_order_relaxed) & 0xff) - leftOf(c));
      const uint8_t n = s->rec.nChannels;
      if (!(c & kPoisoned) && seen > 0 && seen < n && s->live.load(std::memory_order_relaxed) == 0)
        learned[n].store(seen, std::memory_order_relaxed);
    }
    s->order.store(k, std::memory_order_relaxed);
    *gen = g;
    return true;
  }
}

uint8_t EventSink::Impl::expectedChildren(uint8_t nChannels) const noexcept {
  const uint8_t l = learned[nChannels].load(std::memory_order_relaxed);
  return l != 0 ? l : nChannels;
}

// The usual case, inline: start k's own slot is free (its control word is just its generation).
// Acquire only: the claim publishes nothing (fill's final store does). Anything else is claimSlow's.
void* EventSink::Impl::startColl(const CollStart& ev) noexcept {
  const uint64_t k = collCalls.fetch_add(1, std::memory_order_relaxed);
  CollSlot* s = &colls[k & (nColl - 1)];
  uint64_t c = s->ctrl.load(std::memory_order_acquire);
  Tag gen;
  if (ev.nChannels == 0 || (c & kInUse) ||
      !s->ctrl.compare_exchange_strong(c, c | kInUse | kFolder, std::memory_order_acquire, std::memory_order_relaxed))
      [[unlikely]] {
    s = claimSlow(k, ev.nChannels, &gen);
    if (s == nullptr) return nullptr;
  } else {
    s->order.store(k, std::memory_order_relaxed);
    gen = genOf(c);
  }
  return fill(s, gen, k, ev);
}

// A Coll of 0 channels (no child will complete it: done at once, and NCCL needs no handle), or start
// k's own slot taken: the next free or stale one, if any.
CollSlot* EventSink::Impl::claimSlow(uint64_t k, uint8_t nChannels, Tag* gen) noexcept {
  if (nChannels == 0) {
    unsampled.fetch_add(1, std::memory_order_relaxed);
    return nullptr;
  }
  CollSlot* s = claimColl(k, gen);
  if (s == nullptr) claimDrops.fetch_add(1, std::memory_order_relaxed);
  return s;
}

// Fills a slot claimed for start k (held with one folder) and publishes it.
inline void* EventSink::Impl::fill(CollSlot* s, Tag gen, uint64_t k, const CollStart& ev) noexcept {
  // NCCL's strings and count as they come: drain() resolves them, off NCCL's thread.
  s->rec = {.seqNumber = ev.seqNumber,
            .collIndex = k,
            .count = ev.count,
            .func = ev.func,
            .datatype = ev.datatype,
            .algo = ev.algo,
            .proto = ev.proto,
            .nChannels = ev.nChannels};
  const uint8_t expected = expectedChildren(ev.nChannels);
  s->shape.store(static_cast<uint16_t>(ev.nChannels << 8 | expected), std::memory_order_relaxed);
  s->live.store(0, std::memory_order_relaxed);
  s->timed.store(0, std::memory_order_relaxed);
  // release: publishes the fields above to whichever thread finalizes this slot.
  s->ctrl.store(gen | kInUse | expected, std::memory_order_release);
  return slot_tag::taggedBits(s, gen, 0);
}

// A KernelCh for a parent p that cannot take it (pc: p's control word, tag: the parent handle's) is
// counted as an orphan; null. A child beyond what was expected of a parent that was waiting for fewer
// than its channels means NCCL emits them all again: expect them all (the parent completed early; its
// sample is one).
void* EventSink::Impl::orphan(CollSlot* p, uint64_t pc, Tag tag) noexcept {
  const uint16_t shape = p != nullptr ? p->shape.load(std::memory_order_relaxed) : 0;
  if ((shape & 0xff) < (shape >> 8) &&
      (genOf(pc) == tag || (!(pc & kInUse) && genOf(pc) == tag + kNextGen)))
    learned[shape >> 8].store(0, std::memory_order_relaxed);
  orphans.fetch_add(1, std::memory_order_relaxed);
  return nullptr;
}

// Leaves a slot entered as a folder: ctrl += delta (which takes the folder back), and finalizes the
// collective if that made it complete.
inline void EventSink::Impl::leave(CollSlot* s, uint64_t delta) noexcept {
  const uint64_t n = s->ctrl.fetch_add(delta, std::memory_order_acq_rel) + delta;
  if (finalizableAfterLeave(n)) finalize(s, n);
}

// The parent is null or a handle this process's profiler returned (NCCL passes the Coll's own handle:
// KernelCh events come from this process's proxy, also under PXN), so its head may be read: it must be
// a Coll of this sink, and the handle the Coll's own. The child then enters the parent's slot as a
// folder: no recycling can happen under it, so what it writes belongs to the collective it names.
// Every rare case leaves by a tail call, so that the usual one saves no registers.
void* EventSink::Impl::startChannel(const ChannelStart& ev, EventSink* self) noexcept {
  if (ev.parent == nullptr || slot_tag::headOf(ev.parent)->owner != self || slot_tag::subOf(ev.parent) != 0)
    return orphan(nullptr, 0, 0);
  CollSlot* p = reinterpret_cast<CollSlot*>(untag(ev.parent));
  const Tag tag = slot_tag::tagBitsOf(ev.parent);
  const uint32_t channel = ev.channelId;
  if (channel >= kMaxChannels) [[unlikely]]
    return startBeyondMax(p, tag);
  uint64_t c = p->ctrl.load(std::memory_order_acquire);
  do {
    if (!enterable(c, tag)) return orphan(p, c, tag);
  } while (!p->ctrl.compare_exchange_weak(c, c + kFolder, std::memory_order_acq_rel, std::memory_order_acquire));
  const uint64_t bit = uint64_t{1} << channel;
  if (p->live.fetch_or(bit, std::memory_order_relaxed) & bit) return startedTwice(p);
  p->t0[channel].store(ev.pTimer, std::memory_order_relaxed);
  p->t1[channel].store(0, std::memory_order_relaxed);
  void* handle = slot_tag::taggedBits(p, tag, channel + 1);
  const uint64_t n = p->ctrl.fetch_add(-kFolder, std::memory_order_acq_rel) - kFolder;
  // Complete already: other children finished it while this one was inside (more children than it
  // waited for). Its handle is still returned; the child's stop will find the slot gone.
  if (finalizableAfterLeave(n)) [[unlikely]]
    return finalizeThen(p, n, handle);
  return handle;
}

// Beyond NCCL's MAXCHANNELS a channel is not kept, so the collective cannot be timed whole: it counts as
// done and poisons the parent, which then completes without a misleading sample.
void* EventSink::Impl::startBeyondMax(CollSlot* p, Tag tag) noexcept {
  uint64_t c = p->ctrl.load(std::memory_order_acquire), n;
  do {
    if (!enterable(c, tag)) return orphan(p, c, tag);
    n = (c - 1) | kPoisoned;
  } while (!p->ctrl.compare_exchange_weak(c, n, std::memory_order_acq_rel, std::memory_order_acquire));
  orphans.fetch_add(1, std::memory_order_relaxed);
  if (finalizable(n)) finalize(p, n);
  return nullptr;
}

// A channel that is already open starts again: counted, and the folder taken back.
void* EventSink::Impl::startedTwice(CollSlot* p) noexcept {
  orphans.fetch_add(1, std::memory_order_relaxed);
  leave(p, -kFolder);
  return nullptr;
}

void* EventSink::Impl::finalizeThen(CollSlot* p, uint64_t c, void* handle) noexcept {
  finalize(p, c);
  return handle;
}

void EventSink::Impl::recordStop(CollSlot* s, Tag tag, uint32_t channel, uint64_t pTimer) noexcept {
  uint64_t c = s->ctrl.load(std::memory_order_acquire);
  // A recycled slot (tag mismatch) is left alone; a free one has its next owner's generation, so the tag
  // alone tells. The check and the store are not one atomic step; a slot is only recycled once its
  // collective is gone, and NCCL records right before it stops, so the window is a stale event racing
  // the slot's next owner, whose own record then overwrites it.
  if (genOf(c) == tag) s->t1[channel].store(pTimer, std::memory_order_relaxed);
}

// Counts one channel as done, taking one credit and entering as a folder in one step; a stop for a
// channel that is not open (a duplicate) gives the credit back.
void EventSink::Impl::stopChannel(CollSlot* s, Tag tag, uint32_t channel) noexcept {
  uint64_t c = s->ctrl.load(std::memory_order_acquire);
  for (;;) {
    if (!enterable(c, tag)) {  // recycled, or one channel too many
      orphans.fetch_add(1, std::memory_order_relaxed);
      return;
    }
    if (s->ctrl.compare_exchange_weak(c, c - 1 + kFolder, std::memory_order_acq_rel, std::memory_order_acquire))
      break;
  }
  const uint64_t bit = uint64_t{1} << channel;
  if (!(s->live.fetch_and(~bit, std::memory_order_relaxed) & bit)) {
    orphans.fetch_add(1, std::memory_order_relaxed);
    leave(s, 1 - kFolder);
    return;
  }
  // telemetry.md 4.6: some channels report a stop of 0; those (and stop < start) are not timed.
  const uint64_t t1 = s->t1[channel].load(std::memory_order_relaxed);
  if (t1 != 0 && t1 >= s->t0[channel].load(std::memory_order_relaxed))
    s->timed.fetch_or(bit, std::memory_order_relaxed);  // published to the finalizer by leave()'s release
  leave(s, -kFolder);
}

// A handle this sink issued: its sub-index says whose event it is (0: a Coll, whose stop is not waited
// for).
void EventSink::Impl::stopAny(CollSlot* s, void* handle) noexcept {
  const uint32_t sub = slot_tag::subOf(handle);
  if (sub != 0 && sub <= kMaxChannels) stopChannel(s, slot_tag::tagBitsOf(handle), sub - 1);
}

void EventSink::Impl::finalize(CollSlot* s, uint64_t c) noexcept {
  const uint64_t timed = s->timed.load(std::memory_order_relaxed);
  if (c & kPoisoned) {
    incomplete.fetch_add(1, std::memory_order_relaxed);
  } else if (timed == 0) {
    unsampled.fetch_add(1, std::memory_order_relaxed);
  } else {
    // The slot is ours alone until the store below frees it: the record is completed in place.
    CollRecord& out = s->rec;
    if ((timed & (timed - 1)) == 0) {  // one channel: its own time
      const int ch = __builtin_ctzll(timed);
      out.durationNs = s->t1[ch].load(std::memory_order_relaxed) - s->t0[ch].load(std::memory_order_relaxed);
    } else {
      timeChannels(s, timed, &out);
    }
    if (!ring->push(out)) ringDrops.fetch_add(1, std::memory_order_relaxed);
  }
  s->ctrl.store(genOf(c) + kNextGen, std::memory_order_release);
}

EventSink::EventSink(uint64_t commId, int rank, int nRanks, size_t collPoolSize, size_t ringSize)
    : impl_(std::make_unique<Impl>(this, collPoolSize)), commId_(commId), rank_(rank), nRanks_(nRanks) {
  impl_->ring = std::make_unique<SampleRing>(ringSize);
}

EventSink::~EventSink() = default;

// Any event from anywhere: a KernelCh's parent must lie in this sink's pool before its head is read.
void* EventSink::start(const ProfEvent& ev) noexcept {
  if (ev.type == kEvColl) return startColl(collStartOf(ev));
  if (ev.type != kEvKernelCh) return nullptr;
  uint32_t tag;
  if (ev.parent != nullptr && !slot_tag::find(impl_->colls.get(), impl_->nColl, ev.parent, &tag)) {
    impl_->orphans.fetch_add(1, std::memory_order_relaxed);
    return nullptr;
  }
  return startChannel(channelStartOf(ev));
}

void* EventSink::startColl(const CollStart& c) noexcept {
  if (!impl_->usable) [[unlikely]] {
    impl_->poolDrops.fetch_add(1, std::memory_order_relaxed);
    return nullptr;
  }
  return impl_->startColl(c);
}

// No usable check: an unusable sink issues no Coll handle, so no KernelCh can name one of its slots.
void* EventSink::startChannel(const ChannelStart& c) noexcept { return impl_->startChannel(c, this); }

void EventSink::stop(void* handle) noexcept {
  uint32_t tag;
  if (handle == nullptr) return;
  if (CollSlot* s = slot_tag::find(impl_->colls.get(), impl_->nColl, handle, &tag)) impl_->stopAny(s, handle);
}

void EventSink::recordState(void* handle, int state, uint64_t pTimer) noexcept {
  uint32_t tag;
  if (handle == nullptr || state != kStateKernelChStop) return;
  if (slot_tag::find(impl_->colls.get(), impl_->nColl, handle, &tag)) recordStopOwn(handle, pTimer);
}

void EventSink::stopOwn(void* handle) noexcept {
  impl_->stopAny(reinterpret_cast<CollSlot*>(untag(handle)), handle);
}

void EventSink::recordStopOwn(void* handle, uint64_t pTimer) noexcept {
  const uint32_t sub = slot_tag::subOf(handle);
  if (sub != 0 && sub <= kMaxChannels)
    Impl::recordStop(reinterpret_cast<CollSlot*>(untag(handle)), slot_tag::tagBitsOf(handle), sub - 1, pTimer);
}

// Records become samples here, on the consumer's thread: names to indices, count to the tuner's bytes.
size_t EventSink::drain(CollSample* out, size_t max) noexcept {
  if (out == nullptr) return 0;
  size_t n = 0;
  CollRecord r;
  while (n < max && impl_->ring->pop(&r)) {
    const int coll = collIndexFromName(r.func);
    const int typeSize = datatypeSize(r.datatype);
    if (coll < 0 || typeSize <= 0) {
      impl_->unresolved.fetch_add(1, std::memory_order_relaxed);
      continue;
    }
    uint64_t bytes = r.count * static_cast<uint64_t>(typeSize);
    // NCCL's Coll count is per rank for AllGather/ReduceScatter; the tuner saw nRanks x that.
    if (coll == static_cast<int>(CollType::AllGather) || coll == static_cast<int>(CollType::ReduceScatter))
      bytes *= static_cast<uint64_t>(nRanks_ > 0 ? nRanks_ : 1);
    CollSample& s = out[n++];
    s.seqNumber = r.seqNumber;
    s.collIndex = r.collIndex;
    s.bytes = bytes;
    s.durationNs = r.durationNs;
    s.coll = static_cast<int8_t>(coll);
    s.algo = static_cast<int8_t>(algoIndexFromName(r.algo));
    s.proto = static_cast<int8_t>(protoIndexFromName(r.proto));
    s.nChannels = r.nChannels;
    s.slowChannels = r.slowChannels;
    s.slowRatioQ8 = r.slowRatioQ8;
  }
  return n;
}

SinkCounters EventSink::counters() const noexcept {
  const Impl& m = *impl_;
  SinkCounters c;
  const uint64_t claimDrops = m.claimDrops.load(std::memory_order_relaxed);
  c.collsStarted = m.collCalls.load(std::memory_order_relaxed) - claimDrops;
  c.samplesEmitted = m.ring->pushed();
  c.droppedPoolExhausted = m.poolDrops.load(std::memory_order_relaxed) + claimDrops;
  c.droppedRingFull = m.ringDrops.load(std::memory_order_relaxed);
  c.droppedIncomplete = m.incomplete.load(std::memory_order_relaxed);
  c.orphanEvents = m.orphans.load(std::memory_order_relaxed);
  c.unsampled = m.unsampled.load(std::memory_order_relaxed);
  c.unresolved = m.unresolved.load(std::memory_order_relaxed);
  return c;
}

size_t EventSink::collsInFlight() const noexcept {
  size_t n = 0;
  for (uint32_t i = 0; i < impl_->nColl; ++i) n += (impl_->colls[i].ctrl.load(std::memory_order_acquire) & kInUse) != 0;
  return n;
}

size_t EventSink::channelsInFlight() const noexcept {
  size_t n = 0;
  for (uint32_t i = 0; i < impl_->nColl; ++i) {
    const CollSlot& s = impl_->colls[i];
    if (s.ctrl.load(std::memory_order_acquire) & kInUse)
      n += static_cast<size_t>(__builtin_popcountll(s.live.load(std::memory_order_relaxed)));
  }
  return n;
}

EventSink* EventSink::ownerOf(void* handle) noexcept {
  if (handle == nullptr) return nullptr;
  return static_cast<EventSink*>(slot_tag::headOf(handle)->owner);
}

}  // namespace wirewise
