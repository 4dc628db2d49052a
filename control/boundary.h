// The coordinator's boundary state machine for one communicator (design.md §4). Pure and deterministic:
// time is passed in, the policy is injected, and the only outputs are verdicts.
//
//   - Members join; when nRanks distinct members have joined, verdict 0 is issued (table for [B0, B1),
//     B0 == kB0 on every member). If they have not all joined joinTimeoutMs after the first join, verdict
//     0 is observe-only: no table change and no further boundary, for every member, including late ones.
//   - Verdict k+1 is issued once every member has reported passing B_k (deterministic mode), or once
//     reportWaitMs has passed since the first such report (production: it decides on what it has).
//   - Every verdict after verdict 0 carries the heterogeneity guard's pins in front of the policy's rules
//     (heterogeneity_guard.h): members' reports say what NCCL's cost tables are on each rank.
//   - Spacing: fixedSpacing in deterministic mode; otherwise from the slowest reported collective rate,
//     aiming at targetMs of traffic per interval, never below kMinSpacing.
#pragma once

#include <cstdint>
#include <cstddef>
#include <vector>

#include "control/heterogeneity_guard.h"
#include "control/policy.h"
#include "control/wire.h"

namespace wirewise::control {

inline constexpr uint64_t kB0 = 64;
inline constexpr uint64_t kMinSpacing = 8;
inline constexpr uint64_t kNoBoundary = UINT64_MAX;

struct AgreementParams {
  bool deterministic = false;
  int64_t joinTimeoutMs = 10000;
  int64_t reportWaitMs = 20;
  int64_t targetMs = 100;
  uint64_t fixedSpacing = 256;  // deterministic mode, verdict 0 (no rate known yet), and useFixedSpacing
  bool useFixedSpacing = false;
  uint64_t maxSpacing = 1 << 20;
};

class CommAgreement {
 public:
  CommAgreement(uint64_t commId, uint32_t nRanks, uint32_t nNodes, AgreementParams params, Policy* policy);

  void join(uint64_t memberId, int64_t nowMs);
  void report(const Report& r, int64_t nowMs);
  void tick(int64_t nowMs);  // timeouts

  // Verdicts issued since the last call, in index order.
  std::vector<Verdict> takeNew();
  const std::vector<Verdict>& verdicts() const { return verdicts_; }
  bool observeOnly() const { return !verdicts_.empty() && verdicts_.front().observeOnly; }
  size_t joined() const { return members_.size(); }
  uint32_t nRanks() const { return nRanks_; }
  // What the heterogeneity guard found or pinned since the last call (for the coordinator's log).
  std::vector<std::string> takeNotes() { return guard_.takeNotes(); }
  // Milliseconds until tick() may next have something to do; -1: nothing pending.
  int64_t nextDeadlineMs(int64_t nowMs) const;

 private:
  void issue(Verdict v);
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
  HeterogeneityGuard guard_;
};

}  // namespace wirewise::control
