#include "telemetry/lockfree.h"

namespace wirewise {

IndexFreeList::IndexFreeList(uint32_t n) : next_(new std::atomic<uint32_t>[n == 0 ? 1 : n]) {
  // Push in reverse so pops hand out 0, 1, 2, ... (deterministic order helps tests and debugging).
  for (uint32_t i = n; i-- > 0;) push(i);
}

bool IndexFreeList::pop(uint32_t* idx) noexcept {
  uint64_t head = head_.load(std::memory_order_acquire);
  for (;;) {
    uint32_t top = static_cast<uint32_t>(head);
    if (top == kNil) return false;
    uint32_t next = next_[top].load(std::memory_order_relaxed);
    uint64_t desired = (((head >> 32) + 1) << 32) | next;
    if (head_.compare_exchange_weak(head, desired, std::memory_order_acq_rel, std::memory_order_acquire)) {
      *idx = top;
      return true;
    }
  }
}

void IndexFreeList::push(uint32_t idx) noexcept {
  uint64_t head = head_.load(std::memory_order_relaxed);
  for (;;) {
    next_[idx].store(static_cast<uint32_t>(head), std::memory_order_relaxed);
    uint64_t desired = (((head >> 32) + 1) << 32) | idx;
    // release: whoever pops idx next sees everything written to its slot before this push.
    if (head_.compare_exchange_weak(head, desired, std::memory_order_release, std::memory_order_relaxed)) return;
  }
}

SampleRing::SampleRing(size_t minCapacity) : ring_(minCapacity) {}

bool SampleRing::push(const CollRecord& s) noexcept {
  return ring_.push([&s](CollRecord& cell, uint64_t) { cell = s; });
}

bool SampleRing::pop(CollRecord* out) noexcept {
  return ring_.pop([out](CollRecord& cell, uint64_t) { *out = cell; });
}

}  // namespace wirewise
