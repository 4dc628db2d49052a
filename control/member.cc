#include "control/member.h"

namespace wirewise::control {

namespace {
// Nodes kept spare: the consumer of a member that keeps up holds at most three (taken-2, taken-1 and
// the one delivered), so four spares serve every verdict without allocating.
constexpr size_t kSpareNodes = 4;

void deleteList(VerdictNode* n) {
  while (n != nullptr) {
    VerdictNode* after = n->after.load(std::memory_order_relaxed);
    delete n;
    n = after;
  }
}
}  // namespace

Member::Member(uint64_t commId, uint64_t memberId, uint32_t nRanks, uint32_t nNodes, uint64_t configDigest)
    : commId_(commId), memberId_(memberId), nRanks_(nRanks), nNodes_(nNodes), configDigest_(configDigest) {
  for (; spares_ < kSpareNodes; ++spares_) {
    auto* n = new VerdictNode();
    n->after.store(spare_, std::memory_order_relaxed);
    spare_ = n;
  }
}

Member::~Member() {
  deleteList(oldest_);
  deleteList(spare_);
}

std::optional<Answer> Member::answer(const Propose& p) noexcept {
  if (p.commId != commId_ || delivered() > 0) return std::nullopt;
  if (lastAnswer_ && p.proposal <= lastAnswer_->proposal)  // asked again (a reconnect): the same answer
    return p.proposal == lastAnswer_->proposal ? lastAnswer_ : std::nullopt;
  gate.proposal.store(Gate::kDeciding);
  gate.nextBoundary.store(p.boundary);
  const uint64_t calls = gate.calls.load();
  const bool accepted = calls <= p.boundary;  // collectives 0..calls-1 started, none at the boundary yet
  if (!accepted) gate.nextBoundary.store(UINT64_MAX);
  gate.proposal.store(accepted ? Gate::kAccepted : Gate::kRefused);
  lastAnswer_ = Answer{commId_, memberId_, p.proposal, accepted, calls};
  return lastAnswer_;
}

const VerdictNode* Member::deliver(const Verdict& v, std::shared_ptr<const DecisionTable> table) {
  if (v.index != delivered_.load(std::memory_order_relaxed)) return nullptr;
  VerdictNode* node = spare_;
  if (node != nullptr) {
    spare_ = node->after.load(std::memory_order_relaxed);
    --spares_;
  } else {
    node = new VerdictNode();
  }
  if (v.index == 0) firstInterval = v.next > v.boundary ? v.next - v.boundary : 0;
  node->index = v.index;
  node->boundary = v.boundary;
  node->next = v.next;
  node->observeOnly = v.observeOnly;
  node->table = v.observeOnly ? nullptr : table ? std::move(table) : DecisionTable::build(v.rules, v.reason);
  node->after.store(nullptr, std::memory_order_relaxed);
  tail_->after.store(node, std::memory_order_release);
  tail_ = node;
  if (oldest_ == nullptr) oldest_ = node;
  ++kept_;
  delivered_.store(v.index + 1, std::memory_order_release);
  // The consumer may still be reading the table of verdict taken-1 (and a stale pointer of taken-2);
  // anything older is unreachable from it. Kept indices are consecutive and end at v.index.
  uint64_t taken = taken_.load(std::memory_order_acquire);
  for (uint64_t front = v.index + 1 - kept_; kept_ > 1 && front + 3 <= taken; ++front) {
    VerdictNode* old = oldest_;
    oldest_ = old->after.load(std::memory_order_relaxed);
    --kept_;
    old->table.reset();
    if (spares_ == kSpareNodes) {
      delete old;
      continue;
    }
    old->after.store(spare_, std::memory_order_relaxed);
    spare_ = old;
    ++spares_;
  }
  return node;
}

}  // namespace wirewise::control
