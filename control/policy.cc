#include "control/policy.h"

#include <random>

namespace wirewise::control {
namespace {

class KeepStatic final : public Policy {
 public:
  explicit KeepStatic(StaticRulesFn rules) : rules_(std::move(rules)) {}
  PolicyOutput decide(const PolicyInput& in) override {
    return {rules_ ? rules_(in.commId, in.nRanks, in.nNodes) : std::vector<TableRule>{}, "static"};
  }

 private:
  StaticRulesFn rules_;
};

class RandomTable final : public Policy {
 public:
  explicit RandomTable(uint64_t seed) : seed_(seed) {}
  PolicyOutput decide(const PolicyInput& in) override {
    std::mt19937_64 rng(seed_ ^ (in.commId * 0x9e3779b97f4a7c15ull) ^ (in.index * 0xbf58476d1ce4e5b9ull));
    PolicyOutput out;
    out.reason = "random-test";
    int n = static_cast<int>(rng() % 4);
    for (int i = 0; i < n; ++i) {
      TableRule r;
      r.coll = static_cast<int>(rng() % (kNumCollTypes + 1)) - 1;
      uint64_t a = uint64_t{1} << (rng() % 30), b = uint64_t{1} << (rng() % 30);
      r.minBytes = std::min(a, b);
      r.maxBytes = std::max(a, b);
      r.decision.algo = static_cast<int8_t>(static_cast<int>(rng() % 3) - 1);   // any, tree, ring
      r.decision.proto = static_cast<int8_t>(static_cast<int>(rng() % 4) - 1);  // any, ll, ll128, simple
      r.decision.nChannels = static_cast<int8_t>(rng() % 9);
      out.rules.push_back(r);
    }
    return out;
  }

 private:
  uint64_t seed_;
};

}  // namespace

std::unique_ptr<Policy> makeKeepStaticPolicy(StaticRulesFn rules) {
  return std::make_unique<KeepStatic>(std::move(rules));
}
std::unique_ptr<Policy> makeRandomTablePolicy(uint64_t seed) { return std::make_unique<RandomTable>(seed); }

}  // namespace wirewise::control
