// The coordinator's boundary state machine for one communicator (design.md §4). Pure and deterministic:
// time is passed in, the policy is injected, and the only outputs are verdicts.
//
//   - Members join. Production mode: when nRanks distinct members have joined, B0 is proposed (kB0 first);
//     each member accepts it only while its own collective count has not passed it, and then waits there;
//     one refusal replaces the proposal by a later one (past the refuser's count, with a margin that
//     doubles), and once every member has accepted the newest proposal, verdict 0 is issued at it. Nobody
//     waits on a member that has not joined: a member that never joins leaves the comm on its static
//     table, a late one starts the schedule late. Deterministic mode (the simulator): B0 == kB0 on every
//     member, which waits there; if not all have joined joinTimeoutMs after the first join, verdict 0 is
//     observe-only: no table change and no further boundary, for every member, including late ones.
//   - Verdict k+1 is issued once every member has reported passing B_k (deterministic mode), or once
//     reportWaitMs has passed since the first such report (production: it decides on what it has).
//   - Every verdict after verdict 0 carries the heterogeneity guard's pins in front of the policy's rules
//     (heterogeneity_guard.h): members' reports say what NCCL's cost tables are on each rank.
//   - Spacing: fixedSpacing in deterministic mode; otherwise from the slowest reported collective rate,
//     aiming at intervalMs() of traffic per interval (longer for many members or spread-out reports),
//     never below kMinSpacing.
#pragma once

#include <cstdint>
#include <cstddef>
#include <optional>
#include <vector>

#include "control/heterogeneity_guard.h"
#include "control/policy.h"
#include "control/wire.h"

namespace wirewise::control {

inline constexpr uint64_t kB0 = 64;
inline constexpr uint64_t kMinSpacing = 8;
// The shortest interval a policy may ask for (PolicyOutput::spacing): the adaptive policy's probe intervals
// of slow collectives, which need no more than a few of them (adaptive/comm_policy.cc: shortestProbe).
inline constexpr uint64_t kMinPolicySpacing = 4;
inline constexpr uint64_t kNoBoundary = UINT64_MAX;
// A refused proposal's successor lies this far past the furthest member (doubling with each refusal, up
// to maxSpacing): far enough that a proposal crosses the network before the members reach it.
inline constexpr uint64_t kProposalMargin = 64;
// Late reports kept for the next verdict's evidence; beyond it (a member far behind) they are dropped.
inline constexpr size_t kMaxLateReports = 4096;
// A proposal that releases members stopped at an unanswered one: accepted by all, reached by none.
inline constexpr uint64_t kParked = kNoBoundary - 1;
// Production intervals grow by this much per member beyond targetMs: a coordinator then receives at most
// 1 / kIntervalUsPerMember reports per second per communicator (40,000; at 16 ranks 10 ms intervals, at 4,096
// ranks 103 ms).
inline constexpr int64_t kIntervalUsPerMember = 25;
// Production intervals are at least this many times the report spread (how long after the first report
// at a boundary the verdict was made): on a control network slower than the interval, members would wait
// for a verdict at every boundary.
inline constexpr int64_t kIntervalsPerSpread = 4;

struct AgreementParams {
  bool deterministic = false;
  int64_t joinTimeoutMs = 10000;   // deterministic mode
  int64_t answerTimeoutMs = 1000;  // production: a proposal not answered by all in this time is parked
  int64_t reportWaitMs = 20;
  int64_t targetMs = 10;
  uint64_t fixedSpacing = 256;  // deterministic mode, verdict 0 (no rate known yet), and useFixedSpacing
  bool useFixedSpacing = false;
  uint64_t maxSpacing = 1 << 20;
};

class CommAgreement {
 public:
  CommAgreement(uint64_t commId, uint32_t nRanks, uint32_t nNodes, AgreementParams params, Policy* policy);

  void join(uint64_t memberId, int64_t nowMs);
  // A member's answer to a proposal (production mode); answers to any but the newest are ignored, but for
  // the first word of a member that had fallen silent (see parked()).
  void answer(const Answer& a, int64_t nowMs);
  // Production mode: the newest proposal went unanswered by some member for answerTimeoutMs. Those that
  // accepted it were released (a proposal of kParked, which they accept and never reach), and nothing is
  // proposed until one of the silent members answers anything. parkedSilent(): how many were silent.
  bool parked() const { return parked_; }
  size_t parkedSilent() const { return parkedSilent_; }
  void report(const Report& r, int64_t nowMs);
  void tick(int64_t nowMs);  // timeouts

  // Verdicts issued since the last call, in index order.
  std::vector<Verdict> takeNew();
  // The newest proposal when it is new since the last call (to broadcast), and the open one (to re-send to
  // a member that joins again); none once verdict 0 is issued.
  std::optional<Propose> takeNewProposal();
  std::optional<Propose> openProposal() const;
  const std::vector<Verdict>& verdicts() const { return verdicts_; }
  bool observeOnly() const { return !verdicts_.empty() && verdicts_.front().observeOnly; }
  size_t joined() const { return members_.size(); }
  uint32_t nRanks() const { return nRanks_; }
  // What the heterogeneity guard found or pinned since the last call (for the coordinator's log).
  std::vector<std::string> takeNotes() { return guard_.takeNotes(); }
  // Milliseconds until tick() may next have something to do; -1: nothing pending.
  int64_t nextDeadlineMs(int64_t nowMs) const;
  // Production: the interval the spacing aims at (targetMs, longer for many members or a slow control
  // network), and how long the coordinator waits for the last reports at a boundary before it decides on
  // what it has (half of it, so that the verdict still arrives before the members reach the next boundary).
  int64_t intervalMs() const;
  int64_t reportWaitMs() const;

 private:
  void issue(Verdict v);
  void issueFirst(uint64_t b0);
  void propose(uint64_t boundary, int64_t nowMs);
  void park(int64_t nowMs);
  uint64_t beyond(uint64_t from) const;
  void maybeDecide(int64_t nowMs);
  // Position of memberId in members_, or -1.
  ptrdiff_t indexOf(uint64_t memberId) const;

  uint64_t commId_;
  uint32_t nRanks_, nNodes_;
  AgreementParams params_;
  Policy* policy_;
  // Member ids, sorted (at most nRanks), and whether each has reported at the newest boundary: a report
  // costs a binary search and no allocation.
  std::vector<uint64_t> members_;
  std::vector<uint8_t> reported_;
  size_t nReported_ = 0;
  int64_t firstJoinMs_ = -1;
  std::vector<Verdict> verdicts_;
  size_t taken_ = 0;
  // Reports at B_{verdicts_.size()-1}, the boundary of the newest verdict.
  std::vector<Report> pending_;
  int64_t firstReportMs_ = -1;
  int64_t spreadMs_ = 0;  // the report spread, decaying by 1/8 a verdict (intervalMs())
  // Reports that came after their boundary's verdict: evidence for the next one (at most kMaxLateReports).
  std::vector<Report> late_;
  // Production mode's proposal of B0: the newest one, which members have accepted it (by members_'s
  // positions), how many, and whether it has been taken for broadcast.
  std::optional<Propose> proposal_;
  std::vector<uint8_t> accepted_;
  size_t nAccepted_ = 0;
  bool proposalTaken_ = true;
  int64_t proposedMs_ = 0;
  uint64_t maxCalls_ = 0;  // the furthest count any answer named
  bool parked_ = false;
  std::vector<uint8_t> silent_;  // by members_'s positions: had not accepted when the proposal was parked
  size_t parkedSilent_ = 0;
  HeterogeneityGuard guard_;
};

}  // namespace wirewise::control
