// Dmitry Vyukov's bounded queue, used with any number of producers and one consumer. SampleRing
// (telemetry/lockfree.h) and LaunchRing (telemetry/launch_ring.h) are built on it. Header-only so that
// the producer path inlines into their push functions and the launch ring needs no other library.
//
// Positions count from 0; a cell's seq is pos while free for the producer of pos, pos + 1 once that
// producer has published it, pos + capacity once the consumer has freed it for the next lap. An "order"
// is pos + 1: the n-th reserved position has order n, so 0 never names one.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>

namespace wirewise {

template <class Payload>
class MpscRing {
 public:
  struct Cell {
    std::atomic<uint64_t> seq{0};
    Payload payload;
  };

  // Rounded up to a power of two, at least 2; allocates here only.
  explicit MpscRing(size_t minCapacity) {
    size_t cap = 2;
    while (cap < minCapacity) cap <<= 1;
    cells_.reset(new Cell[cap]);
    mask_ = cap - 1;
    for (size_t i = 0; i < cap; ++i) cells_[i].seq.store(i, std::memory_order_relaxed);
  }

  // Any thread. fill(Payload&, order) writes the reserved cell before it is published; false when full.
  template <class Fill>
  bool push(Fill&& fill) noexcept {
    uint64_t pos = enqueuePos_.load(std::memory_order_relaxed);
    for (;;) {
      Cell& cell = cells_[pos & mask_];
      uint64_t seq = cell.seq.load(std::memory_order_acquire);
      int64_t dif = static_cast<int64_t>(seq) - static_cast<int64_t>(pos);
      if (dif == 0) {
        if (enqueuePos_.compare_exchange_weak(pos, pos + 1, std::memory_order_relaxed)) {
          fill(cell.payload, pos + 1);
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

  // Single consumer. If the oldest cell is published, take(Payload&, order) reads it (and may reset it
  // for the next lap) before the cell is freed; false when empty.
  template <class Take>
  bool pop(Take&& take) noexcept {
    Cell& cell = cells_[dequeuePos_ & mask_];
    if (cell.seq.load(std::memory_order_acquire) != dequeuePos_ + 1) return false;
    take(cell.payload, dequeuePos_ + 1);
    cell.seq.store(dequeuePos_ + mask_ + 1, std::memory_order_release);
    ++dequeuePos_;
    return true;
  }

  // The payload of `order` while it is published and not yet popped, else null. Any thread; the answer
  // can be stale by the time the caller writes (a racing pop may free the cell): the caller's fields
  // must be atomics and the caller must tolerate landing on a later lap's entry.
  Payload* published(uint64_t order) noexcept {
    Cell& cell = cells_[(order - 1) & mask_];
    return cell.seq.load(std::memory_order_acquire) == order ? &cell.payload : nullptr;
  }

  uint64_t nextPopOrder() const noexcept { return dequeuePos_ + 1; }  // consumer only
  // Positions reserved so far (the last ones may still be being written).
  uint64_t reserved() const noexcept { return enqueuePos_.load(std::memory_order_acquire); }
  size_t capacity() const noexcept { return mask_ + 1; }

 private:
  std::unique_ptr<Cell[]> cells_;
  size_t mask_;
  alignas(64) std::atomic<uint64_t> enqueuePos_{0};
  alignas(64) uint64_t dequeuePos_ = 0;
};

}  // namespace wirewise
