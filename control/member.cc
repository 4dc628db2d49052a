#include "control/member.h"

namespace wirewise::control {

Member::~Member() = default;

const VerdictNode* Member::deliver(const Verdict& v, std::shared_ptr<const DecisionTable> table) {
  if (v.index != delivered_.load(std::memory_order_relaxed)) return nullptr;
  auto node = std::make_unique<VerdictNode>();
  node->index = v.index;
  node->boundary = v.boundary;
  node->next = v.next;
  node->observeOnly = v.observeOnly;
  if (!v.observeOnly) node->table = table ? std::move(table) : DecisionTable::build(v.rules, v.reason);
  VerdictNode* raw = node.get();
  nodes_.push_back(std::move(node));
  tail_->after.store(raw, std::memory_order_release);
  tail_ = raw;
  delivered_.store(v.index + 1, std::memory_order_release);
  // The consumer may still be reading the table of verdict taken-1 (and a stale pointer of taken-2);
  // anything older is unreachable from it.
  uint64_t taken = taken_.load(std::memory_order_acquire);
  while (nodes_.size() > 1 && nodes_.front()->index + 3 <= taken) nodes_.pop_front();
  return raw;
}

}  // namespace wirewise::control
