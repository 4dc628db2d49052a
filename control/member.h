// One communicator context's view of the agreement: the verdicts delivered to it, in order, as a
// single-producer (the control plane's I/O thread) single-consumer (the thread that calls getCollInfo
// for this comm) list. The consumer never locks, allocates or frees: it follows atomic `after`
// pointers. The producer frees verdicts two behind what the consumer has taken.
#pragma once

#include <atomic>
#include <cstdint>
#include <deque>
#include <memory>
#include <mutex>

#include "adaptive/decision_table.h"
#include "adaptive/evidence_types.h"
#include "control/wire.h"

namespace wirewise::control {

struct VerdictNode {
  uint64_t index = 0, boundary = 0, next = 0;
  bool observeOnly = false;
  std::shared_ptr<const DecisionTable> table;  // null when observe-only
  std::atomic<VerdictNode*> after{nullptr};
};

class Member {
 public:
  Member(uint64_t commId, uint64_t memberId, uint32_t nRanks, uint32_t nNodes, uint64_t configDigest)
      : commId_(commId), memberId_(memberId), nRanks_(nRanks), nNodes_(nNodes), configDigest_(configDigest) {}
  ~Member();
  Member(const Member&) = delete;
  Member& operator=(const Member&) = delete;

  uint64_t commId() const { return commId_; }
  uint64_t memberId() const { return memberId_; }
  uint32_t nRanks() const { return nRanks_; }
  uint32_t nNodes() const { return nNodes_; }
  uint64_t configDigest() const { return configDigest_; }

  // Producer. Accepts only the next index in order (duplicates after a resync are dropped).
  // Returns the node it appended, or null. `table` is the verdict's table when the caller has built it
  // already (one build serves every member of the comm in this process); null: built here.
  const VerdictNode* deliver(const Verdict& v, std::shared_ptr<const DecisionTable> table = nullptr);
  uint64_t delivered() const { return delivered_.load(std::memory_order_acquire); }

  // Consumer: verdict `index` if it has arrived (indices must be asked for in order), else null.
  const VerdictNode* tryTake(uint64_t index) noexcept {
    VerdictNode* n = cursor_->after.load(std::memory_order_acquire);
    if (n == nullptr || n->index != index) return nullptr;
    cursor_ = n;
    taken_.store(index + 1, std::memory_order_release);
    return n;
  }

  // The consumer's progress, published for the I/O thread's reports: boundaries passed (B_0..B_passed-1)
  // and when it passed the last one (steady clock, µs).
  std::atomic<uint64_t> passed{0};
  std::atomic<int64_t> passedAtUs{0};
  std::atomic<int64_t> prevPassedAtUs{0};
  std::atomic<uint64_t> passedSeq{0};
  // Set by the I/O thread once a Join for this member has been handed to an authenticated connection.
  // A member whose join never left the process may give up on its own (the coordinator cannot have
  // counted it, so nobody else can change either); once sent, only a verdict decides.
  std::atomic<bool> joinSent{false};
  uint64_t reported = 0;  // I/O thread only
  // NCCL's cost tables as the tuner first saw them (written by the getCollInfo thread, read by the I/O
  // thread for reports). Allocated by whoever creates the member; null: no sights are reported.
  std::unique_ptr<adapt::SightTable> sights;

 private:
  const uint64_t commId_, memberId_;
  const uint32_t nRanks_, nNodes_;
  const uint64_t configDigest_;
  VerdictNode head_;
  VerdictNode* cursor_ = &head_;                    // consumer only
  VerdictNode* tail_ = &head_;                      // producer only
  std::deque<std::unique_ptr<VerdictNode>> nodes_;  // producer only
  std::atomic<uint64_t> delivered_{0}, taken_{0};
};

}  // namespace wirewise::control
