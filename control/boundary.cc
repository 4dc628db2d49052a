#include "control/boundary.h"

#include <algorithm>

namespace wirewise::control {

CommAgreement::CommAgreement(uint64_t commId, uint32_t nRanks, uint32_t nNodes, AgreementParams params, Policy* policy)
    : commId_(commId), nRanks_(nRanks), nNodes_(nNodes), params_(params), policy_(policy) {
  pending_.reserve(nRanks);  // a boundary's reports, without regrowing in the first round
}

void CommAgreement::issue(Verdict v) { verdicts_.push_back(std::move(v)); }

ptrdiff_t CommAgreement::indexOf(uint64_t memberId) const {
  auto at = std::lower_bound(members_.begin(), members_.end(), memberId);
  return at != members_.end() && *at == memberId ? at - members_.begin() : -1;
}

void CommAgreement::join(uint64_t memberId, int64_t nowMs) {
  if (firstJoinMs_ < 0) firstJoinMs_ = nowMs;
  // Beyond nRanks distinct members something is wrong (a stale member of a reused id): never count more.
  auto at = std::lower_bound(members_.begin(), members_.end(), memberId);
  if (members_.size() < nRanks_ && (at == members_.end() || *at != memberId)) {
    reported_.insert(reported_.begin() + (at - members_.begin()), 0);
    members_.insert(at, memberId);
  }
  if (!verdicts_.empty() || members_.size() != nRanks_) return;
  if (params_.deterministic)
    issueFirst(kB0);
  else if (!proposal_)
    propose(kB0, nowMs);
}

void CommAgreement::issueFirst(uint64_t b0) {
  std::vector<Report> none;
  uint64_t spacing = std::clamp(params_.fixedSpacing, kMinSpacing, std::max(params_.maxSpacing, kMinSpacing));
  PolicyOutput out = policy_->decide({commId_, nRanks_, nNodes_, 0, b0, spacing, &none});
  if (out.spacing > 0) spacing = std::clamp(out.spacing, kMinPolicySpacing, std::max(params_.maxSpacing, kMinSpacing));
  issue({commId_, 0, b0, b0 + spacing, false, out.reason, out.rules});
  proposal_.reset();
}

void CommAgreement::propose(uint64_t boundary, int64_t nowMs) {
  const uint64_t number = proposal_ ? proposal_->proposal + 1 : 0;
  proposal_ = Propose{commId_, number, boundary};
  accepted_.assign(members_.size(), 0);
  nAccepted_ = 0;
  proposalTaken_ = false;
  proposedMs_ = nowMs;
}

// Past `from` by a margin that doubles with each proposal, so that members that run fast are caught up
// with in a few rounds.
uint64_t CommAgreement::beyond(uint64_t from) const {
  const unsigned doublings = static_cast<unsigned>(std::min<uint64_t>(proposal_ ? proposal_->proposal : 0, 20));
  const uint64_t margin = std::min(kProposalMargin << doublings, std::max(params_.maxSpacing, kProposalMargin));
  return from > kParked - 1 - margin ? kParked - 1 : from + margin;
}

void CommAgreement::answer(const Answer& a, int64_t nowMs) {
  if (!proposal_ || !verdicts_.empty()) return;
  ptrdiff_t i = indexOf(a.memberId);
  if (i < 0) return;
  maxCalls_ = std::max(maxCalls_, a.calls);
  if (parked_) {
    // A member that did not answer in time speaks again (any answer, however old): propose anew.
    if (silent_[static_cast<size_t>(i)]) {
      parked_ = false;
      propose(beyond(maxCalls_), nowMs);
    }
    return;
  }
  if (a.proposal != proposal_->proposal || accepted_[static_cast<size_t>(i)]) return;  // stale, or counted
  if (!a.accepted) {
    // This member is past the proposal (or at it, unsure whether it saw it in time): propose beyond it.
    propose(beyond(std::max(a.calls, proposal_->boundary + 1)), nowMs);
    return;
  }
  accepted_[static_cast<size_t>(i)] = 1;
  if (++nAccepted_ == nRanks_) issueFirst(proposal_->boundary);
}

void CommAgreement::park(int64_t nowMs) {
  // Members that accepted may be stopped at the proposed collective, waiting: release them with a proposal
  // they accept and never reach. Nothing is proposed again until one of the silent speaks.
  silent_.assign(members_.size(), 0);
  parkedSilent_ = 0;
  for (size_t k = 0; k < members_.size(); ++k)
    if (!accepted_[k]) silent_[k] = 1, ++parkedSilent_;
  propose(kParked, nowMs);
  parked_ = true;
}

std::optional<Propose> CommAgreement::takeNewProposal() {
  if (!proposal_ || proposalTaken_) return std::nullopt;
  proposalTaken_ = true;
  return proposal_;
}

std::optional<Propose> CommAgreement::openProposal() const { return proposal_; }

void CommAgreement::report(const Report& r, int64_t nowMs) {
  if (verdicts_.empty() || observeOnly()) return;
  // NCCL's cost tables count even in a report that comes too late for its verdict: each is sent only once.
  ptrdiff_t i = indexOf(r.memberId);
  if (i >= 0) guard_.observe(r.memberId, r.sights);
  if (r.index + 1 != verdicts_.size() || r.seq != verdicts_.back().boundary) {
    // A report that came after its boundary's verdict was made (production decides on what it has after
    // reportWaitMs): its collectives are still evidence, for the next verdict. Early or malformed: dropped.
    if (i >= 0 && r.index + 1 < verdicts_.size() && late_.size() < kMaxLateReports) late_.push_back(r);
    return;
  }
  if (i < 0 || reported_[static_cast<size_t>(i)]) return;
  reported_[static_cast<size_t>(i)] = 1;
  ++nReported_;
  if (firstReportMs_ < 0) firstReportMs_ = nowMs;
  pending_.push_back(r);
  maybeDecide(nowMs);
}

void CommAgreement::tick(int64_t nowMs) {
  if (verdicts_.empty()) {
    // A proposal some members have not answered in time: those that accepted may be waiting; release them.
    if (!params_.deterministic && proposal_ && !parked_ && nowMs - proposedMs_ >= params_.answerTimeoutMs)
      park(nowMs);
    // Only deterministic members wait at kB0 before all have joined; production never gives up on a join.
    if (params_.deterministic && firstJoinMs_ >= 0 && nowMs - firstJoinMs_ >= params_.joinTimeoutMs)
      issue({commId_, 0, kB0, kNoBoundary, true, "observe-only: not all members joined", {}});
    return;
  }
  maybeDecide(nowMs);
}

void CommAgreement::maybeDecide(int64_t nowMs) {
  if (pending_.empty()) return;
  bool all = nReported_ >= nRanks_;
  bool waited = !params_.deterministic && nowMs - firstReportMs_ >= reportWaitMs();
  if (!all && !waited) return;
  const Verdict& prev = verdicts_.back();
  uint64_t spacing = std::max(params_.fixedSpacing, kMinSpacing);
  if (!params_.deterministic && !params_.useFixedSpacing) {
    uint64_t slowest = 0;  // the longest time any member took for the interval that ended at B_k
    for (const auto& r : pending_) slowest = std::max(slowest, r.elapsedUs);
    // That interval is [B_k-1, B_k): verdict k-1's. (Verdict k's own, [B_k, B_k+1), may be far longer or
    // shorter: a policy sets the length of the intervals it probes in, kMinPolicySpacing collectives and up.)
    // At B0 there is no interval before it: a member reports what verdict 0's interval [B0, B1) would take
    // at the rate it saw before B0 (Member::lastIntervalUs), or 0.
    const size_t n = verdicts_.size();
    const Verdict& rated = verdicts_[n >= 2 ? n - 2 : 0];
    const uint64_t measured = rated.observeOnly || rated.next <= rated.boundary ? 0 : rated.next - rated.boundary;
    if (slowest > 0 && measured > 0) {
      long double perMs = static_cast<long double>(measured) * 1000.0L / static_cast<long double>(slowest);
      spacing = static_cast<uint64_t>(perMs * static_cast<long double>(intervalMs()));
    }
    spacing = std::clamp<uint64_t>(spacing, kMinSpacing, std::max(params_.maxSpacing, kMinSpacing));
  }
  // Late reports count as evidence, not as reports at this boundary (they carry no interval of it).
  pending_.insert(pending_.end(), std::make_move_iterator(late_.begin()), std::make_move_iterator(late_.end()));
  late_.clear();
  PolicyOutput out = policy_->decide({commId_, nRanks_, nNodes_, prev.index + 1, prev.next, spacing, &pending_});
  if (out.spacing > 0) spacing = std::clamp(out.spacing, kMinPolicySpacing, std::max(params_.maxSpacing, kMinSpacing));
  std::vector<TableRule> pins = guard_.pins(out.rules);
  if (!pins.empty()) {
    out.reason += (out.reason.empty() ? "" : "; ") + std::to_string(pins.size()) +
                  " buckets pinned where ranks' NCCL defaults differ";
    out.rules.insert(out.rules.begin(), pins.begin(), pins.end());
  }
  uint64_t b = prev.next;
  issue({commId_, prev.index + 1, b, b + spacing, false, out.reason, out.rules});
  pending_.clear();
  std::fill(reported_.begin(), reported_.end(), 0);
  nReported_ = 0;
  if (!params_.deterministic) spreadMs_ = std::max(nowMs - firstReportMs_, spreadMs_ * 7 / 8);
  firstReportMs_ = -1;
}

int64_t CommAgreement::nextDeadlineMs(int64_t nowMs) const {
  if (verdicts_.empty() && !params_.deterministic)
    return !proposal_ || parked_ ? -1 : std::max<int64_t>(0, proposedMs_ + params_.answerTimeoutMs - nowMs);
  if (verdicts_.empty())
    return firstJoinMs_ < 0 ? -1 : std::max<int64_t>(0, firstJoinMs_ + params_.joinTimeoutMs - nowMs);
  if (pending_.empty() || params_.deterministic) return -1;
  return std::max<int64_t>(0, firstReportMs_ + reportWaitMs() - nowMs);
}

int64_t CommAgreement::intervalMs() const {
  const int64_t byMembers = (static_cast<int64_t>(nRanks_) * kIntervalUsPerMember + 999) / 1000;
  return std::max<int64_t>({params_.targetMs, byMembers, kIntervalsPerSpread * spreadMs_, 1});
}

int64_t CommAgreement::reportWaitMs() const {
  if (params_.useFixedSpacing) return params_.reportWaitMs;  // intervals of unknown length: the configured wait
  return std::clamp<int64_t>(intervalMs() / 2, 1, std::max<int64_t>(params_.reportWaitMs, 1));
}

std::vector<Verdict> CommAgreement::takeNew() {
  std::vector<Verdict> out(verdicts_.begin() + static_cast<std::ptrdiff_t>(taken_), verdicts_.end());
  taken_ = verdicts_.size();
  return out;
}

}  // namespace wirewise::control
