#include "control/adaptive_policy.h"

#include <map>

namespace wirewise::control {
namespace {

class Adaptive final : public Policy {
 public:
  Adaptive(adapt::PolicyParams p, adapt::EventFn emit) : params_(p), emit_(std::move(emit)) {}

  PolicyOutput decide(const PolicyInput& in) override {
    auto it = comms_.find(in.commId);
    if (it == comms_.end())
      it = comms_.emplace(in.commId, adapt::CommPolicy(in.commId, in.nRanks, in.nNodes, params_, emit_)).first;
    evidence_.clear();
    if (in.reports != nullptr)
      for (const Report& r : *in.reports) evidence_.push_back({r.memberId, r.samples, r.sights, r.links});
    adapt::PolicyStep step = it->second.decide(in.index, in.boundary, in.spacing, evidence_);
    return {std::move(step.rules), std::move(step.reason), step.spacing};
  }

 private:
  adapt::PolicyParams params_;
  adapt::EventFn emit_;
  std::map<uint64_t, adapt::CommPolicy> comms_;
  std::vector<adapt::MemberEvidence> evidence_;
};

}  // namespace

std::unique_ptr<Policy> makeAdaptivePolicy(adapt::PolicyParams params, adapt::EventFn emit) {
  return std::make_unique<Adaptive>(params, std::move(emit));
}

}  // namespace wirewise::control
