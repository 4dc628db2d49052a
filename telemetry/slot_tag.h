// Profiler event handles shared by every sink (EventSink, ProxySink): a handle is the address of a
// 64-byte aligned pool slot with bits the address does not use (the low 6 and the top 16: user addresses
// stay below 2^48 on x86-64 and AArch64 unless mmap is asked for more) carrying
//   - 15 bits of the slot's generation (the low 6 bits and bits 48..56), so that a late or duplicate
//     event for a recycled slot is recognised and ignored, unless the slot was recycled a multiple of
//     32,768 times in between;
//   - a 7-bit sub-index (bits 57..63): 0 names the slot's own event; k > 0 an event the slot keeps
//     inside it (EventSink: the KernelCh of channel k - 1 lives in its Coll's slot).
//
// Every slot begins with a SlotHead (type first: the lesson of NCCL's example plugin, PR #1973), so
// the profiler core can route stopEvent/recordEventState, which carry no context, from the handle alone.
#pragma once

#include <cstdint>

namespace wirewise {

static_assert(sizeof(uintptr_t) == 8, "handles need 64-bit pointers");

struct alignas(64) SlotHead {
  uint64_t type = 0;      // one kEv* bit; fixed at construction
  void* owner = nullptr;  // the sink that owns the pool; fixed at construction
  uint32_t index = 0;     // position in its pool
};

namespace slot_tag {

inline constexpr uintptr_t kLowTag = 63;
inline constexpr int kHighShift = 48;
inline constexpr uintptr_t kHighTag = uintptr_t{0xffff} << kHighShift;
inline constexpr int kSubShift = 57;
inline constexpr uint32_t kMaxSub = 127;
inline constexpr uint32_t kTagMask = (1u << 15) - 1;

inline uint32_t tagOf(uint32_t gen) { return gen & kTagMask; }
inline uintptr_t untag(void* handle) { return reinterpret_cast<uintptr_t>(handle) & ~(kLowTag | kHighTag); }

// sub must be at most kMaxSub.
template <class Slot>
void* tagged(Slot* s, uint32_t gen, uint32_t sub = 0) {
  const uintptr_t tag = (gen & kLowTag) | (uintptr_t{(gen >> 6) & 0x1ff} << kHighShift) | (uintptr_t{sub} << kSubShift);
  return reinterpret_cast<void*>(reinterpret_cast<uintptr_t>(s) | tag);
}

// The generation tag a handle carries.
inline uint32_t tagOfHandle(void* handle) {
  const uintptr_t h = reinterpret_cast<uintptr_t>(handle);
  return static_cast<uint32_t>((h & kLowTag) | (((h >> kHighShift) & 0x1ff) << 6));
}

// The sub-index a handle carries (0: the slot's own event).
inline uint32_t subOf(void* handle) { return static_cast<uint32_t>(reinterpret_cast<uintptr_t>(handle) >> kSubShift); }

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
  return (reinterpret_cast<uintptr_t>(base + n) & kHighTag) == 0;
}

// The head of the slot a non-null handle names. Only for handles this process's sinks returned, while
// their sink is alive.
inline const SlotHead* headOf(void* handle) { return reinterpret_cast<const SlotHead*>(untag(handle)); }

}  // namespace slot_tag
}  // namespace wirewise
