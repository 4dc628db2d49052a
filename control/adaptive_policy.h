// The control plane's side of the adaptive policy: one adapt::CommPolicy per communicator, fed with the
// members' reports converted to the policy's own types. The policy core itself is in adaptive/.
#pragma once

#include <memory>

#include "adaptive/comm_policy.h"
#include "adaptive/policy_params.h"
#include "control/policy.h"

namespace wirewise::control {

std::unique_ptr<Policy> makeAdaptivePolicy(adapt::PolicyParams params, adapt::EventFn emit);

}  // namespace wirewise::control
