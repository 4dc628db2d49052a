// TCP_INFO for sockets the plugin knows about (getsockopt(fd, IPPROTO_TCP, TCP_INFO)): smoothed RTT,
// RTT variance, windowed min RTT (all µs), cumulative retransmitted segments, bytes acked/received, and
// the kernel's delivery-rate sample (bytes/s; app-limited samples are discarded because they
// underestimate the path). One cheap syscall per socket per pass.
#pragma once

#include <cstdint>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "telemetry/collectors/link_health.h"
#include "telemetry/collectors/sysfs_util.h"

namespace wirewise::collectors {

// The subset of struct tcp_info we use, in our units.
struct TcpInfoSample {
  uint8_t state = 0;            // TCP_ESTABLISHED = 1
  uint32_t rttUs = 0, rttVarUs = 0, minRttUs = 0;
  uint8_t rtoStalls = 0;        // tcpi_retransmits: consecutive RTO timeouts not yet recovered
  uint32_t totalRetrans = 0;    // cumulative retransmitted segments
  uint64_t bytesAcked = 0, bytesReceived = 0;
  uint64_t deliveryRateBps = 0;  // bytes/s; 0 if the kernel is too old to report it
  bool deliveryAppLimited = false;
  bool hasDeliveryRate = false;  // the kernel's tcp_info is long enough to hold it
};

// One getsockopt; nullopt when fd is not a TCP socket (or closed).
std::optional<TcpInfoSample> readTcpInfo(int fd);

class TcpCollector {
 public:
  explicit TcpCollector(double tauSeconds) : tau_(tauSeconds) {}

  // Thread-safe; the label names the link in the snapshot ("tcp:<label>"). Re-adding an fd replaces it.
  void addSocket(int fd, const std::string& label);
  void removeSocket(int fd);
  size_t socketCount() const;

  void sample(int64_t nowNs);
  std::vector<LinkHealth> links() const;  // copy, under the lock

 private:
  struct Sock {
    int fd;
    RateMeter acked, received;
    CounterTrack retrans;
    LinkHealth link;
  };
  double tau_;
  int64_t lastNs_ = 0;
  mutable std::mutex mu_;
  std::vector<Sock> socks_;
};

}  // namespace wirewise::collectors
