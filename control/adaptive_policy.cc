#include "control/adaptive_policy.h"

#include <map>
#include <set>
#include <string>

#include "common/text.h"

namespace wirewise::control {
namespace {

class Adaptive final : public Policy {
 public:
  Adaptive(adapt::PolicyParams p, adapt::EventFn emit) : params_(p), emit_(std::move(emit)) {}

  // A policy that throws (memory) must not leave the boundary without a verdict, which would make every
  // rank wait: the communicator falls back to NCCL's own choices for good, on every rank alike.
  PolicyOutput decide(const PolicyInput& in) override {
    if (failed_.count(in.commId)) return {{}, "adaptive policy stopped; NCCL's own choices", 0};
    try {
      return decideOrThrow(in);
    } catch (const std::exception& e) {
      failed_.insert(in.commId);
      comms_.erase(in.commId);
      // The reason travels in the verdict, which accepts printable ASCII only.
      const std::string why = printableOnly(std::string(e.what()).substr(0, 160));
      return {{}, "adaptive policy stopped (" + why + "); NCCL's own choices", 0};
    }
  }

 private:
  PolicyOutput decideOrThrow(const PolicyInput& in) {
    auto it = comms_.find(in.commId);
    if (it == comms_.end())
      it = comms_.emplace(in.commId, adapt::CommPolicy(in.commId, in.nRanks, in.nNodes, params_, emit_)).first;
    evidence_.clear();
    if (in.reports != nullptr)
      for (const Report& r : *in.reports) evidence_.push_back({r.memberId, r.samples, r.sights, r.links});
    adapt::PolicyStep step = it->second.decide(in.index, in.boundary, in.spacing, evidence_);
    return {std::move(step.rules), std::move(step.reason), step.spacing};
  }

  adapt::PolicyParams params_;
  adapt::EventFn emit_;
  std::map<uint64_t, adapt::CommPolicy> comms_;
  std::vector<adapt::MemberEvidence> evidence_;
  std::set<uint64_t> failed_;
};

}  // namespace

std::unique_ptr<Policy> makeAdaptivePolicy(adapt::PolicyParams params, adapt::EventFn emit) {
  return std::make_unique<Adaptive>(params, std::move(emit));
}

}  // namespace wirewise::control
