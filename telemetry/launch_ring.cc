#include "telemetry/launch_ring.h"

#include <pthread.h>

namespace wirewise {

LaunchRing::LaunchRing(size_t minCapacity) : ring_(minCapacity) {}

uint64_t LaunchRing::push(uint64_t commId, int rank, uintptr_t stream) noexcept {
  uint64_t order = 0;
  bool pushed = ring_.push([&](Slot& slot, uint64_t o) {
    slot.commId = commId;
    slot.rank = rank;
    slot.stream = stream;
    order = o;
  });
  if (!pushed) lost_.fetch_add(1, std::memory_order_relaxed);  // the consumer has not freed this cell yet: full
  return order;
}

void LaunchRing::claim(uint64_t order, const char* func, uint64_t seq) noexcept {
  if (order == 0) return;
  // Published and not yet popped. A pop racing with this check may hand the cell to a later launch before
  // we write; the only effect is a wrong collective on that one launch, which the collector's cross-check
  // against the kernel name counts as a mismatch.
  Slot* slot = ring_.published(order);
  if (slot == nullptr) return;
  if (slot->colls.load(std::memory_order_relaxed) == 0) {
    slot->func.store(func, std::memory_order_relaxed);
    slot->collSeq.store(seq, std::memory_order_relaxed);
  }
  slot->colls.fetch_add(1, std::memory_order_release);
}

bool LaunchRing::pop(uint64_t limit, LaunchRecord* out) noexcept {
  if (ring_.nextPopOrder() > limit) return false;
  return ring_.pop([out](Slot& slot, uint64_t order) {
    out->order = order;
    out->commId = slot.commId;
    out->rank = slot.rank;
    out->stream = slot.stream;
    out->colls = slot.colls.load(std::memory_order_acquire);
    out->func = out->colls > 0 ? slot.func.load(std::memory_order_relaxed) : nullptr;
    out->seq = out->colls > 0 ? slot.collSeq.load(std::memory_order_relaxed) : 0;
    // Cleared for the next lap's launch before the cell is freed.
    slot.colls.store(0, std::memory_order_relaxed);
    slot.func.store(nullptr, std::memory_order_relaxed);
  });
}

void CommLaunchRecorder::onKernelLaunch(const void* stream) noexcept {
  if (ring_ == nullptr) return;
  uint64_t order = ring_->push(commId_, rank_, reinterpret_cast<uintptr_t>(stream));
  // pthread_self() reads the thread pointer: no system call. Order 0 (ring full) closes the previous
  // launch so that this plan's Colls are not credited to it.
  openThread_.store(static_cast<uintptr_t>(pthread_self()), std::memory_order_relaxed);
  open_.store(order, std::memory_order_relaxed);
}

void CommLaunchRecorder::claimColl(const char* func, uint64_t seq) noexcept {
  // Only the launching thread: Colls from CUDA's host-callback thread belong to some earlier plan.
  if (openThread_.load(std::memory_order_relaxed) != static_cast<uintptr_t>(pthread_self())) return;
  ring_->claim(open_.load(std::memory_order_relaxed), func, seq);
}

}  // namespace wirewise
