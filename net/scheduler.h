// Assigns chunks to rails in proportion to what each rail delivers now. Per rail it keeps an estimate of
// the delivery rate (bytes the peer's kernel acknowledged per second of time the rail had bytes
// outstanding, an exponentially weighted mean over short samples) and the bytes assigned but not yet
// acknowledged. The next chunk goes to the rail that would finish it first, (outstanding + chunk) / rate,
// among the rails that can take one now and hold less than `queueTarget` worth of their own rate: so
// every rail's queue drains in about the same time, and a rail that slows down stops receiving chunks
// within a few samples. A rail left without chunks for `probe` gets one, so a rail that recovers is seen.
//
// Pure logic, fixed size, no allocation after construction: the caller passes the time. The published_*
// values are relaxed atomics so that telemetry may read them from another thread while the proxy thread
// drives the scheduler.
#pragma once

#include <array>
#include <atomic>
#include <cstdint>
#include <vector>

#include "net/wire.h"

namespace wirewise::net {

struct SchedulerParams {
  uint64_t queueTargetNs = 30'000'000;  // outstanding bytes per rail: at most this long at its rate
  uint64_t sampleNs = 10'000'000;       // busy time per rate sample
  double alpha = 0.3;                   // weight of a new sample in the rate estimate
  uint64_t probeNs = 100'000'000;       // an unused live rail gets one chunk this often
  double shiftThreshold = 0.10;         // a share move this large (any rail) is a "share change"
};

class RailScheduler {
 public:
  // initialRates: bytes per second per rail before anything is measured (link speeds); <= 0 means unknown.
  RailScheduler(const std::vector<double>& initialRates, uint64_t nowNs, SchedulerParams params = {});

  // The rail for the next chunk of `chunkBytes`, among rails with canTake[r]; -1 when none should take it now.
  int pick(const bool* canTake, uint64_t chunkBytes, uint64_t nowNs) const;
  void onAssigned(int rail, uint64_t bytes, uint64_t nowNs);
  void onDelivered(int rail, uint64_t bytes);  // acknowledged by the peer's kernel
  void onLost(int rail, uint64_t bytes);       // outstanding bytes that will be resent on another rail
  void markDown(int rail, uint64_t nowNs);
  // A rail that came back (a stream reopened): up again from a conservative rate (a quarter of the other
  // live rails' mean), probed at the next pick, so that its measured rate, not a guess, earns it a share.
  void markUp(int rail, uint64_t nowNs);
  // Busy-time accounting and rate samples; call on every progress pass.
  void tick(uint64_t nowNs);

  int rails() const { return nRails_; }
  bool up(int r) const { return rail_[r].up; }
  double rate(int r) const { return rail_[r].rate; }
  double share(int r) const;
  uint64_t outstanding(int r) const { return rail_[r].outstanding; }
  uint64_t cap(int r, uint64_t chunkBytes) const;
  uint64_t assigned(int r) const { return rail_[r].assigned; }
  uint64_t delivered(int r) const { return rail_[r].delivered; }
  uint64_t chunks(int r) const { return rail_[r].chunks; }
  uint64_t busyNs(int r) const { return rail_[r].busyTotal; }
  uint64_t lastShiftNs() const { return lastShiftNs_; }

  // Thread-safe reads (relaxed; each value on its own, not a snapshot), refreshed at every rate sample.
  uint64_t publishedDelivered(int r) const { return pub_[r].delivered.load(std::memory_order_relaxed); }
  double publishedRate(int r) const { return pub_[r].rate.load(std::memory_order_relaxed); }
  double publishedShare(int r) const { return pub_[r].share.load(std::memory_order_relaxed); }
  bool publishedUp(int r) const { return pub_[r].up.load(std::memory_order_relaxed); }
  uint64_t publishedShiftNs() const { return pubShiftNs_.load(std::memory_order_relaxed); }

 private:
  struct Rail {
    double rate = 0.0;
    bool up = true;
    bool wasBusy = false;
    uint64_t outstanding = 0, assigned = 0, delivered = 0, chunks = 0, busyTotal = 0;
    uint64_t busyAcc = 0, deliveredAcc = 0, lastAssignNs = 0;
    double shareRef = 0.0;
  };
  struct Published {
    std::atomic<uint64_t> delivered{0};
    std::atomic<double> rate{0.0};
    std::atomic<double> share{0.0};
    std::atomic<bool> up{true};
  };
  void publish(uint64_t nowNs);

  SchedulerParams params_;
  int nRails_ = 0;
  std::array<Rail, kMaxRails> rail_{};
  std::array<Published, kMaxRails> pub_{};
  uint64_t lastTickNs_ = 0, lastShiftNs_ = 0;
  std::atomic<uint64_t> pubShiftNs_{0};
};

}  // namespace wirewise::net
