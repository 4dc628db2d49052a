#include "telemetry/launch_ring.h"

#include <pthread.h>

namespace wirewise {

LaunchRing::LaunchRing(size_t minCapacity) {
  size_t cap = 2;
  while (cap < minCapacity) cap <<= 1;
  cells_.reset(new Cell[cap]);
  mask_ = cap - 1;
  for (size_t i = 0; i < cap; ++i) cells_[i].seq.store(i, std::memory_order_relaxed);
}

uint64_t LaunchRing::push(uint64_t commId, int rank, uintptr_t stream) noexcept {
  uint64_t pos = enqueuePos_.load(std::memory_order_relaxed);
  for (;;) {
    Cell& cell = cells_[pos & mask_];
    uint64_t seq = cell.seq.load(std::memory_order_acquire);
    int64_t dif = static_cast<int64_t>(seq) - static_cast<int64_t>(pos);
    if (dif == 0) {
      if (enqueuePos_.compare_exchange_weak(pos, pos + 1, std::memory_order_relaxed)) {
        cell.commId = commId;
        cell.rank = rank;
        cell.stream = stream;
        cell.seq.store(pos + 1, std::memory_order_release);
        return pos + 1;
      }
    } else if (dif < 0) {
      lost_.fetch_add(1, std::memory_order_relaxed);  // the consumer has not freed this cell yet: full
      return 0;
    } else {
      pos = enqueuePos_.load(std::memory_order_relaxed);
    }
  }
}

void LaunchRing::claim(uint64_t order, const char* func, uint64_t seq) noexcept {
  if (order == 0) return;
  Cell& cell = cells_[(order - 1) & mask_];
  // seq == order: published and not yet popped. A pop racing with this check may hand the cell to a later
  // launch before we write; the only effect is a wrong collective on that one launch, which the collector's
  // cross-check against the kernel name counts as a mismatch.
  if (cell.seq.load(std::memory_order_acquire) != order) return;
  if (cell.colls.load(std::memory_order_relaxed) == 0) {
    cell.func.store(func, std::memory_order_relaxed);
    cell.collSeq.store(seq, std::memory_order_relaxed);
  }
  cell.colls.fetch_add(1, std::memory_order_release);
}

bool LaunchRing::pop(uint64_t limit, LaunchRecord* out) noexcept {
  if (dequeuePos_ + 1 > limit) return false;
  Cell& cell = cells_[dequeuePos_ & mask_];
  if (cell.seq.load(std::memory_order_acquire) != dequeuePos_ + 1) return false;
  out->order = dequeuePos_ + 1;
  out->commId = cell.commId;
  out->rank = cell.rank;
  out->stream = cell.stream;
  out->colls = cell.colls.load(std::memory_order_acquire);
  out->func = out->colls > 0 ? cell.func.load(std::memory_order_relaxed) : nullptr;
  out->seq = out->colls > 0 ? cell.collSeq.load(std::memory_order_relaxed) : 0;
  cell.colls.store(0, std::memory_order_relaxed);
  cell.func.store(nullptr, std::memory_order_relaxed);
  cell.seq.store(dequeuePos_ + mask_ + 1, std::memory_order_release);
  ++dequeuePos_;
  return true;
}

void CommLaunchRecorder::onKernelLaunch(const void* stream) noexcept {
  if (ring_ == nullptr) return;
  uint64_t order = ring_->push(commId_, rank_, reinterpret_cast<uintptr_t>(stream));
  // pthread_self() reads the thread pointer: no system call. Order 0 (ring full) closes the previous
  // launch so that this plan's Colls are not credited to it.
  openThread_.store(static_cast<uintptr_t>(pthread_self()), std::memory_order_relaxed);
  open_.store(order, std::memory_order_relaxed);
}

void CommLaunchRecorder::onColl(const char* func, uint64_t seq) noexcept {
  if (ring_ == nullptr) return;
  // Only the launching thread: Colls from CUDA's host-callback thread belong to some earlier plan.
  if (openThread_.load(std::memory_order_relaxed) != static_cast<uintptr_t>(pthread_self())) return;
  ring_->claim(open_.load(std::memory_order_relaxed), func, seq);
}

}  // namespace wirewise
