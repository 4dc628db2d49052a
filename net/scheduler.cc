#include "net/scheduler.h"

#include <algorithm>
#include <cmath>

namespace wirewise::net {

namespace {
constexpr double kMinRate = 1e4;  // bytes/s: a stalled rail's estimate never reaches 0 (no division by 0)
}

RailScheduler::RailScheduler(const std::vector<double>& initialRates, uint64_t nowNs, SchedulerParams params)
    : params_(params), nRails_(static_cast<int>(std::min<size_t>(initialRates.size(), kMaxRails))) {
  for (int r = 0; r < nRails_; ++r) {
    double rate = initialRates[static_cast<size_t>(r)];
    rail_[r].rate = rate > 0.0 ? rate : 1.25e9;  // unknown: 10 Gb/s, as link speeds default
    rail_[r].lastAssignNs = nowNs;
  }
  lastTickNs_ = lastShiftNs_ = nowNs;
  for (int r = 0; r < nRails_; ++r) rail_[r].shareRef = share(r);
  publish(nowNs);
}

double RailScheduler::share(int r) const {
  double sum = 0.0;
  for (int i = 0; i < nRails_; ++i)
    if (rail_[i].up) sum += rail_[i].rate;
  return rail_[r].up && sum > 0.0 ? rail_[r].rate / sum : 0.0;
}

uint64_t RailScheduler::cap(int r, uint64_t chunkBytes) const {
  double bytes = rail_[r].rate * static_cast<double>(params_.queueTargetNs) / 1e9;
  return std::max<uint64_t>(chunkBytes, static_cast<uint64_t>(bytes));
}

int RailScheduler::pick(const bool* canTake, uint64_t chunkBytes, uint64_t nowNs) const {
  int best = -1;
  double bestFinish = 0.0;
  for (int r = 0; r < nRails_; ++r) {
    const Rail& rail = rail_[r];
    if (!rail.up || !canTake[r]) continue;
    // A probe: an idle rail that has been passed over for a while gets a chunk, so that its estimate
    // follows a recovery (a rail given nothing is never measured).
    if (rail.outstanding == 0 && nowNs - rail.lastAssignNs >= params_.probeNs) return r;
    if (rail.outstanding > 0 && rail.outstanding + chunkBytes > cap(r, chunkBytes)) continue;
    double finish = static_cast<double>(rail.outstanding + chunkBytes) / rail.rate;
    if (best < 0 || finish < bestFinish) {
      best = r;
      bestFinish = finish;
    }
  }
  return best;
}

void RailScheduler::onAssigned(int rail, uint64_t bytes, uint64_t nowNs) {
  Rail& r = rail_[rail];
  r.outstanding += bytes;
  r.assigned += bytes;
  r.chunks += 1;
  r.lastAssignNs = nowNs;
  r.wasBusy = true;  // busy from now on, even if the previous tick saw it empty
}

void RailScheduler::onDelivered(int rail, uint64_t bytes) {
  Rail& r = rail_[rail];
  bytes = std::min(bytes, r.outstanding);
  r.outstanding -= bytes;
  r.delivered += bytes;
  r.deliveredAcc += bytes;
}

void RailScheduler::onLost(int rail, uint64_t bytes) {
  Rail& r = rail_[rail];
  r.outstanding -= std::min(bytes, r.outstanding);
}

void RailScheduler::markDown(int rail, uint64_t nowNs) {
  rail_[rail].up = false;
  rail_[rail].outstanding = 0;
  lastShiftNs_ = nowNs;
  for (int r = 0; r < nRails_; ++r) rail_[r].shareRef = share(r);
  publish(nowNs);
}

void RailScheduler::markUp(int rail, uint64_t nowNs) {
  Rail& r = rail_[rail];
  if (r.up) return;
  double others = 0.0;
  int n = 0;
  for (int i = 0; i < nRails_; ++i) {
    if (!rail_[i].up) continue;
    others += rail_[i].rate;
    ++n;
  }
  if (n > 0) r.rate = std::max(kMinRate, 0.25 * others / n);
  r.up = true;
  r.outstanding = 0;
  r.wasBusy = false;
  r.busyAcc = r.deliveredAcc = 0;
  r.lastAssignNs = nowNs >= params_.probeNs ? nowNs - params_.probeNs : 0;
  lastShiftNs_ = nowNs;
  for (int i = 0; i < nRails_; ++i) rail_[i].shareRef = share(i);
  publish(nowNs);
}

void RailScheduler::tick(uint64_t nowNs) {
  if (nowNs <= lastTickNs_) return;
  const uint64_t dt = nowNs - lastTickNs_;
  lastTickNs_ = nowNs;
  bool sampled = false;
  for (int i = 0; i < nRails_; ++i) {
    Rail& r = rail_[i];
    if (!r.up) continue;
    if (r.wasBusy) {
      r.busyAcc += dt;
      r.busyTotal += dt;
    }
    r.wasBusy = r.outstanding > 0;
    if (r.busyAcc < params_.sampleNs) continue;
    double sample = static_cast<double>(r.deliveredAcc) * 1e9 / static_cast<double>(r.busyAcc);
    r.rate = std::max(kMinRate, r.rate + params_.alpha * (sample - r.rate));
    r.busyAcc = r.deliveredAcc = 0;
    sampled = true;
  }
  if (!sampled) return;
  bool shifted = false;
  for (int i = 0; i < nRails_; ++i) shifted = shifted || std::fabs(share(i) - rail_[i].shareRef) >= params_.shiftThreshold;
  if (shifted) {
    lastShiftNs_ = nowNs;
    for (int i = 0; i < nRails_; ++i) rail_[i].shareRef = share(i);
  }
  publish(nowNs);
}

void RailScheduler::publish(uint64_t /*nowNs*/) {
  for (int r = 0; r < nRails_; ++r) {
    pub_[r].delivered.store(rail_[r].delivered, std::memory_order_relaxed);
    pub_[r].rate.store(rail_[r].rate, std::memory_order_relaxed);
    pub_[r].share.store(share(r), std::memory_order_relaxed);
    pub_[r].up.store(rail_[r].up, std::memory_order_relaxed);
  }
  pubShiftNs_.store(lastShiftNs_, std::memory_order_relaxed);
}

}  // namespace wirewise::net
