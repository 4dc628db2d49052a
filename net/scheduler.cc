#include "net/scheduler.h"

#include <utility>

namespace wirewise::net {

RailScheduler::RailScheduler(std::vector<double> weights) : weights_(std::move(weights)) {
  for (double& w : weights_) w = w > 0.0 ? w : 1.0;  // a rail with no known speed still gets a share
  bytes_.assign(weights_.size(), 0);
  chunks_.assign(weights_.size(), 0);
  busyNs_.assign(weights_.size(), 0);
  since_.assign(weights_.size(), 0);
}

int RailScheduler::pick(const std::vector<bool>& idle) const {
  int best = -1;
  double bestLoad = 0.0;
  for (int r = 0; r < rails(); ++r) {
    if (r >= static_cast<int>(idle.size()) || !idle[r]) continue;
    double load = static_cast<double>(bytes_[r]) / weights_[r];
    if (best < 0 || load < bestLoad) {
      best = r;
      bestLoad = load;
    }
  }
  return best;
}

void RailScheduler::onAssigned(int rail, uint64_t bytes, uint64_t nowNs) {
  bytes_[rail] += bytes;
  chunks_[rail] += 1;
  since_[rail] = nowNs;
}

void RailScheduler::onWritten(int rail, uint64_t nowNs) {
  if (nowNs > since_[rail]) busyNs_[rail] += nowNs - since_[rail];
}

}  // namespace wirewise::net
