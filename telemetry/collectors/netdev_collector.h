// Network interface counters from sysfs (<root>/class/net/<if>/statistics/*, speed, operstate). These
// count every byte the interface moves (TCP, RoCE-as-Ethernet is NOT included on mlx5: RDMA bypasses
// the netdev counters), and reading them is a plain kernel memory read: cheap.
#pragma once

#include <string>
#include <vector>

#include "telemetry/collectors/link_health.h"
#include "telemetry/collectors/sysfs_util.h"

namespace wirewise::collectors {

class NetdevCollector {
 public:
  // filter: empty = every interface except "lo"; otherwise the interface names to follow.
  NetdevCollector(std::string sysfsRoot, std::vector<std::string> filter, double tauSeconds);

  void discover();  // (re)scan; known interfaces keep their history, vanished ones stay as not present
  void sample(int64_t nowNs);
  const std::vector<LinkHealth>& links() const { return links_; }
  size_t interfaceCount() const { return ifs_.size(); }
  bool rootPresent() const;

  // Last-interval (unsmoothed) tx/rx rates in bytes/s, for callers that want the raw series.
  double lastTxBps(size_t i) const { return ifs_[i].tx.lastRate; }
  double lastRxBps(size_t i) const { return ifs_[i].rx.lastRate; }

 private:
  struct Iface {
    std::string dir;  // <root>/class/net/<if>
    std::string statTx, statRx, stateFile, speedFile;
    std::vector<std::string> errorFiles, dropFiles;
    RateMeter tx, rx;
    std::vector<CounterTrack> errors, drops;
  };

  std::string root_;
  std::vector<std::string> filter_;
  double tau_;
  int64_t lastNs_ = 0;
  std::vector<Iface> ifs_;
  std::vector<LinkHealth> links_;  // parallel to ifs_
};

}  // namespace wirewise::collectors
