#include "telemetry/collectors/tcp_collector.h"

#include <linux/tcp.h>
#include <netinet/in.h>
#include <sys/socket.h>

#include <algorithm>
#include <cstddef>
#include <cstring>

namespace wirewise::collectors {

std::optional<TcpInfoSample> readTcpInfo(int fd) {
  struct tcp_info ti;
  std::memset(&ti, 0, sizeof ti);
  socklen_t len = sizeof ti;
  if (::getsockopt(fd, IPPROTO_TCP, TCP_INFO, &ti, &len) != 0) return std::nullopt;
  // Older kernels return a shorter struct; only trust fields the kernel actually wrote.
  auto covers = [len](size_t end) { return static_cast<size_t>(len) >= end; };
  TcpInfoSample s;
  s.state = ti.tcpi_state;
  s.rtoStalls = ti.tcpi_retransmits;
  s.rttUs = ti.tcpi_rtt;
  s.rttVarUs = ti.tcpi_rttvar;
  s.totalRetrans = ti.tcpi_total_retrans;
  if (covers(offsetof(tcp_info, tcpi_bytes_acked) + sizeof ti.tcpi_bytes_acked)) s.bytesAcked = ti.tcpi_bytes_acked;
  if (covers(offsetof(tcp_info, tcpi_bytes_received) + sizeof ti.tcpi_bytes_received)) {
    s.bytesReceived = ti.tcpi_bytes_received;
  }
  if (covers(offsetof(tcp_info, tcpi_min_rtt) + sizeof ti.tcpi_min_rtt)) s.minRttUs = ti.tcpi_min_rtt;
  if (covers(offsetof(tcp_info, tcpi_delivery_rate) + sizeof ti.tcpi_delivery_rate)) {
    s.hasDeliveryRate = true;
    s.deliveryRateBps = ti.tcpi_delivery_rate;
    s.deliveryAppLimited = ti.tcpi_delivery_rate_app_limited != 0;
  }
  return s;
}

void TcpCollector::addSocket(int fd, const std::string& label) {
  std::lock_guard<std::mutex> lock(mu_);
  socks_.erase(std::remove_if(socks_.begin(), socks_.end(), [fd](const Sock& s) { return s.fd == fd; }),
               socks_.end());
  Sock s;
  s.fd = fd;
  s.link.kind = LinkKind::kTcp;
  s.link.id = "tcp:" + label;
  s.link.congestionUnit = "retrans_segs/s";
  socks_.push_back(std::move(s));
}

void TcpCollector::removeSocket(int fd) {
  std::lock_guard<std::mutex> lock(mu_);
  socks_.erase(std::remove_if(socks_.begin(), socks_.end(), [fd](const Sock& s) { return s.fd == fd; }),
               socks_.end());
}

size_t TcpCollector::socketCount() const {
  std::lock_guard<std::mutex> lock(mu_);
  return socks_.size();
}

void TcpCollector::sample(int64_t nowNs) {
  std::lock_guard<std::mutex> lock(mu_);
  double dt = lastNs_ > 0 && nowNs > lastNs_ ? static_cast<double>(nowNs - lastNs_) * 1e-9 : 0.0;
  lastNs_ = nowNs;
  for (Sock& s : socks_) {
    LinkHealth& l = s.link;
    auto info = readTcpInfo(s.fd);
    l.present = info.has_value();
    l.up = info && info->state == 1;  // TCP_ESTABLISHED
    if (!info) {
      l.rateValid = false;
      refreshState(l, nowNs);
      continue;
    }
    s.acked.update(info->bytesAcked, dt, 1.0, tau_);
    s.received.update(info->bytesReceived, dt, 1.0, tau_);
    l.rateValid = s.acked.valid && s.received.valid;
    l.txBps = s.acked.smoothed;
    l.rxBps = s.received.smoothed;
    l.rttUs = info->rttUs;
    l.rttVarUs = info->rttVarUs;
    l.minRttUs = info->minRttUs;
    if (info->hasDeliveryRate && !info->deliveryAppLimited && info->deliveryRateBps > 0) {
      l.deliveryBps = static_cast<double>(info->deliveryRateBps);
    }
    uint64_t d = 0;
    auto step = s.retrans.step(info->totalRetrans, &d);
    bool counted = step == CounterTrack::Step::kDelta || step == CounterTrack::Step::kWrap32;
    l.congestionPerSec = counted && dt > 0 ? static_cast<double>(d) / dt : 0.0;
    l.lossPerSec = l.congestionPerSec;
    // An RTO stall is unambiguous; plain retransmissions are loss, which classify() already degrades on.
    l.congested = info->rtoStalls > 0;
    refreshState(l, nowNs);
  }
}

std::vector<LinkHealth> TcpCollector::links() const {
  std::lock_guard<std::mutex> lock(mu_);
  std::vector<LinkHealth> out;
  out.reserve(socks_.size());
  for (const Sock& s : socks_) out.push_back(s.link);
  return out;
}

}  // namespace wirewise::collectors
