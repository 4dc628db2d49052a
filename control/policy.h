// The policy seam: the coordinator asks a Policy for the table of each verdict. Until the adaptation
// issue lands, KeepStaticPolicy distributes the coordinator's static table (WIREWISE_CONFIG) unchanged;
// tests use RandomTablePolicy, which changes the table at every boundary. Policies must be deterministic
// functions of their input (the simulator's reproducibility depends on it).
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "adaptive/decision_table.h"
#include "control/wire.h"

namespace wirewise::control {

struct PolicyInput {
  uint64_t commId = 0;
  uint32_t nRanks = 0, nNodes = 0;
  uint64_t index = 0;                  // the verdict being made
  uint64_t boundary = 0;               // B_index, where its table starts
  uint64_t spacing = 0;                // the agreement's spacing for it (collectives to B_index+1)
  const std::vector<Report>* reports;  // reports at B_index-1 (empty for verdict 0)
};

struct PolicyOutput {
  std::vector<TableRule> rules;
  std::string reason;
  uint64_t spacing = 0;  // collectives until the next boundary; 0: the agreement chooses
};

class Policy {
 public:
  virtual ~Policy() = default;
  virtual PolicyOutput decide(const PolicyInput& in) = 0;
};

// Rules for a communicator of nRanks members: the coordinator's static configuration.
using StaticRulesFn = std::function<std::vector<TableRule>(uint64_t commId, uint32_t nRanks, uint32_t nNodes)>;

std::unique_ptr<Policy> makeKeepStaticPolicy(StaticRulesFn rules);
// A different random table at every verdict, seeded by (seed, commId, index): reproducible.
std::unique_ptr<Policy> makeRandomTablePolicy(uint64_t seed);

}  // namespace wirewise::control
