// InfiniBand / RoCE port counters from sysfs (<root>/class/infiniband/<dev>/ports/<p>/...):
// port_xmit_data/port_rcv_data (4-byte words), port_xmit_wait (ticks), the standard error counters,
// rate, state, link_layer, and the RoCE congestion/retransmission hw_counters that exist on the port.
// On real hardware every counters/* read is a PMA MAD (a firmware round trip), so sample at ~1 Hz.
#pragma once

#include <chrono>
#include <string>
#include <vector>

#include "telemetry/collectors/link_health.h"
#include "telemetry/collectors/sysfs_util.h"

namespace wirewise::collectors {

// The ports NCCL uses, in NCCL_IB_HCA syntax: a comma-separated list of device-name prefixes, each with
// an optional ":port"; a leading '^' excludes the listed ones instead, and a following '=' makes the
// names exact ("mlx5_1" as a prefix also selects "mlx5_10", as in NCCL). Empty selects every port.
class IbPortFilter {
 public:
  explicit IbPortFilter(const std::string& spec);
  bool matches(const std::string& dev, int port) const;

 private:
  struct Entry {
    std::string name;
    int port;  // -1 = any
  };
  bool exclude_ = false, exact_ = false;
  std::vector<Entry> entries_;
};

class IbCollector {
 public:
  // sysfsRoot is normally "/sys"; hca is an NCCL_IB_HCA-style filter (see IbPortFilter); tau is the
  // smoothing time constant of the rates.
  IbCollector(std::string sysfsRoot, const std::string& hca, double tauSeconds);

  // (Re)scans the device tree. Ports already known keep their counter history; ports that disappeared
  // stay listed as not present.
  void discover();
  void sample(int64_t nowNs);
  const std::vector<LinkHealth>& links() const { return links_; }
  size_t portCount() const { return ports_.size(); }
  bool rootPresent() const;

 private:
  struct Port {
    std::string dir;  // .../ports/<p>
    RateMeter xmit, rcv, wait;
    std::vector<std::string> errorFiles;
    std::vector<CounterTrack> errors;
    std::vector<std::string> congestionFiles, lossFiles;  // hw_counters present on this port
    std::vector<CounterTrack> congestion, loss;
  };
  std::string root_;
  IbPortFilter filter_;
  double tau_;
  int64_t lastNs_ = 0;
  std::vector<Port> ports_;
  std::vector<LinkHealth> links_;  // parallel to ports_
};

}  // namespace wirewise::collectors
