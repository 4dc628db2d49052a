// Two small lock-free building blocks for the profiler sink: a free list of slot indices and a
// bounded MPSC ring of CollSamples. Both allocate only in their constructors.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>

#include "telemetry/coll_sample.h"
#include "telemetry/mpsc_ring.h"

namespace wirewise {

// Treiber stack of indices 0..n-1. The head packs (ABA tag << 32 | index) so a pop that raced with a
// pop+push of the same index fails its CAS instead of corrupting the list.
class IndexFreeList {
 public:
  explicit IndexFreeList(uint32_t n);
  bool pop(uint32_t* idx) noexcept;
  void push(uint32_t idx) noexcept;

 private:
  static constexpr uint32_t kNil = 0xffffffffu;
  std::unique_ptr<std::atomic<uint32_t>[]> next_;
  std::atomic<uint64_t> head_{kNil};
};

// Bounded MPSC ring of collective records (telemetry/mpsc_ring.h). Capacity is a power of two.
class SampleRing {
 public:
  explicit SampleRing(size_t minCapacity);
  bool push(const CollRecord& s) noexcept;  // false when full
  bool pop(CollRecord* out) noexcept;       // single consumer only; false when empty
  size_t capacity() const { return ring_.capacity(); }
  uint64_t pushed() const noexcept { return ring_.reserved(); }  // successful pushes so far

 private:
  MpscRing<CollRecord> ring_;
};

}  // namespace wirewise
