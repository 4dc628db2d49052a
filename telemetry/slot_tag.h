// Profiler event handles shared by every sink (EventSink, ProxySink): a handle is the address of a
// 128-byte aligned pool slot with bits the address does not use carrying
//   - the low 7 bits: a sub-index; 0 names the slot's own event, k > 0 an event the slot keeps inside
//     it (EventSink: the KernelCh of channel k - 1 lives in its Coll's slot). ProxySink's handles
//     never carry one: the profiler core routes a handle with a sub-index to the event sink unread;
//   - the top 16 bits (user addresses stay below 2^48 on x86-64 and AArch64 unless mmap is asked for
//     more): the low 16 bits of the slot's generation, so that a late or duplicate event for a recycled
//     slot is recognised and ignored, unless the slot was recycled a multiple of 65,536 times in between.
// Each field sits whole in one place, so encoding and decoding are a shift or a mask each: they run
// several times on every collective.
//
// Every slot begins with a SlotHead (type first: the lesson of NCCL's example plugin, PR #1973), so
// the profiler core can route stopEvent/recordEventState, which carry no context, from the handle alone.
#pragma once

#include <cstdint>

namespace wirewise {

static_assert(sizeof(uintptr_t) == 8, "handles need 64-bit pointers");

// Slots are aligned to kSlotAlign (alignas(kSlotAlign) on each slot type; checked by slot_tag::taggedBits).
inline constexpr uintptr_t kSlotAlign = 128;

struct SlotHead {
  uint64_t type = 0;      // one kEv* bit; fixed at construction
  void* owner = nullptr;  // the sink that owns the pool; fixed at construction
  uint32_t index = 0;     // position in its pool
};

namespace slot_tag {

inline constexpr uintptr_t kSubMask = kSlotAlign - 1;
inline constexpr int kTagShift = 48;
inline constexpr uintptr_t kTagBits = ~uintptr_t{0} << kTagShift;
inline constexpr uint32_t kMaxSub = static_cast<uint32_t>(kSubMask);
inline constexpr uint32_t kTagMask = 0xffff;

inline uint32_t tagOf(uint32_t gen) { return gen & kTagMask; }
inline uintptr_t untag(void* handle) { return reinterpret_cast<uintptr_t>(handle) & ~(kSubMask | kTagBits); }


// A handle's tag in place, in the top 16 bits: a sink that keeps its slots' generations in the same bits
// compares and tags without a shift. sub must be at most kMaxSub.
inline uintptr_t tagBitsOf(void* handle) { return reinterpret_cast<uintptr_t>(handle) & kTagBits; }
template <class Slot>
void* taggedBits(Slot* s, uintptr_t tagBits, uint32_t sub) {
  static_assert(alignof(Slot) % kSlotAlign == 0, "a slot's low address bits carry the sub-index");
  return reinterpret_cast<void*>(reinterpret_cast<uintptr_t>(s) | sub | tagBits);
}
// The handle of slot s of generation gen (its low 16 bits), without a sub-index.
template <class Slot>
void* tagged(Slot* s, uint32_t gen) {
  return taggedBits(s, uintptr_t{gen} << kTagShift, 0);
}

// The generation tag a handle carries.
inline uint32_t tagOfHandle(void* handle) {
  return static_cast<uint32_t>(reinterpret_cast<uintptr_t>(handle) >> kTagShift);
}

// The sub-index a handle carries (0: the slot's own event).
inline uint32_t subOf(void* handle) { return static_cast<uint32_t>(reinterpret_cast<uintptr_t>(handle) & kSubMask); }

// The slot of pool [base, base + n) that handle names, with its tag; null if it names none of them.
template <class Slot>
Slot* find(Slot* base, uint32_t n, void* handle, uint32_t* tag) {
  uintptr_t p = untag(handle), b = reinterpret_cast<uintptr_t>(base);
  if (p < b || p >= b + uintptr_t{n} * sizeof(Slot) || (p - b) % sizeof(Slot) != 0) return nullptr;
  *tag = tagOfHandle(handle);
  return reinterpret_cast<Slot*>(p);
}

// A pool whose end lies above 2^48 cannot carry tags (never seen without an mmap hint).
template <class Slot>
bool taggable(const Slot* base, uint32_t n) {
  return (reinterpret_cast<uintptr_t>(base + n) & kTagBits) == 0;
}

// The head of the slot a non-null handle names. Only for handles this process's sinks returned, while
// their sink is alive.
inline const SlotHead* headOf(void* handle) { return reinterpret_cast<const SlotHead*>(untag(handle)); }

}  // namespace slot_tag
}  // namespace wirewise
