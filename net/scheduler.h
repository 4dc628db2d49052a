// Assigns chunks to rails: weighted deficit round-robin over the rails that have an idle stream, so that
// over time each rail carries bytes in proportion to its weight, and a rail whose kernel send buffer is
// full (a slow or shaped link) simply stops being offered chunks. Pure logic; the caller passes the time.
#pragma once

#include <cstdint>
#include <vector>

namespace wirewise::net {

class RailScheduler {
 public:
  explicit RailScheduler(std::vector<double> weights);

  // Among rails with idle[r] true, the one furthest behind its weighted share; -1 if none is idle.
  int pick(const std::vector<bool>& idle) const;
  void onAssigned(int rail, uint64_t bytes, uint64_t nowNs);
  void onWritten(int rail, uint64_t nowNs);  // the rail's chunk is entirely in the kernel

  int rails() const { return static_cast<int>(weights_.size()); }
  double weight(int rail) const { return weights_[rail]; }
  uint64_t bytes(int rail) const { return bytes_[rail]; }
  uint64_t chunks(int rail) const { return chunks_[rail]; }
  uint64_t busyNs(int rail) const { return busyNs_[rail]; }

 private:
  std::vector<double> weights_;
  std::vector<uint64_t> bytes_, chunks_, busyNs_, since_;
};

}  // namespace wirewise::net
