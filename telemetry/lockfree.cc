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

SampleRing::SampleRing(size_t minCapacity) {
  size_t cap = 2;
  while (cap < minCapacity) cap <<= 1;
  cells_.reset(new Cell[cap]);
  mask_ = cap - 1;
  for (size_t i = 0; i < cap; ++i) cells_[i].seq.store(i, std::memory_order_relaxed);
}

bool SampleRing::push(const CollSample& s) noexcept {
  uint64_t pos = enqueuePos_.load(std::memory_order_relaxed);
  for (;;) {
    Cell& cell = cells_[pos & mask_];
    uint64_t seq = cell.seq.load(std::memory_order_acquire);
    int64_t dif = static_cast<int64_t>(seq) - static_cast<int64_t>(pos);
    if (dif == 0) {
      if (enqueuePos_.compare_exchange_weak(pos, pos + 1, std::memory_order_relaxed)) {
        cell.sample = s;
        cell.seq.store(pos + 1, std::memory_order_release);
        return true;
      }
    } else if (dif < 0) {
      return false;  // the consumer has not freed this cell yet: full
    } else {
      pos = enqueuePos_.load(std::memory_order_relaxed);
    }
  }
}

bool SampleRing::pop(CollSample* out) noexcept {
  Cell& cell = cells_[dequeuePos_ & mask_];
  if (cell.seq.load(std::memory_order_acquire) != dequeuePos_ + 1) return false;
  *out = cell.sample;
  cell.seq.store(dequeuePos_ + mask_ + 1, std::memory_order_release);
  ++dequeuePos_;
  return true;
}

}  // namespace wirewise
