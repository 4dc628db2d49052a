#include "telemetry/collectors/ib_collector.h"


#include <algorithm>
#include <utility>

namespace wirewise::collectors {
namespace {

// Standard PMA error counters (kernel ABI doc sysfs-class-infiniband). Those absent on a port are skipped.
constexpr const char* kErrorCounters[] = {
    "symbol_error",           "port_rcv_errors",          "link_error_recovery",
    "link_downed",            "port_xmit_discards",       "local_link_integrity_errors",
    "excessive_buffer_overrun_errors", "port_rcv_remote_physical_errors",
};
// RoCE congestion notifications (mlx5 names; other drivers expose none of these and fall back to
// xmit_wait). A CNP means a switch marked our traffic with ECN: real congestion, not just load.
constexpr const char* kCongestionCounters[] = {"np_cnp_sent", "rp_cnp_handled", "np_ecn_marked_roce_packets"};
// Transport retries: loss or timeouts on the fabric.
constexpr const char* kLossCounters[] = {"local_ack_timeout_err", "packet_seq_err", "out_of_sequence",
                                         "rnr_nak_retry_err",     "implied_nak_seq_err", "duplicate_request"};

uint32_t anomalies(const CounterTrack& t) { return static_cast<uint32_t>(t.wraps + t.resets + t.missing); }

}  // namespace

IbPortFilter::IbPortFilter(const std::string& spec) {
  size_t i = 0;
  if (i < spec.size() && spec[i] == '^') {
    exclude_ = true;
    ++i;
  }
  if (i < spec.size() && spec[i] == '=') {
    exact_ = true;
    ++i;
  }
  while (i < spec.size()) {
    size_t end = spec.find(',', i);
    if (end == std::string::npos) end = spec.size();
    std::string item = spec.substr(i, end - i);
    i = end + 1;
    Entry e{item, -1};
    if (auto colon = item.find(':'); colon != std::string::npos) {
      e.name = item.substr(0, colon);
      auto port = parseU64(item.substr(colon + 1));
      e.port = port && *port < 256 ? static_cast<int>(*port) : -2;  // -2: a port that never matches
    }
    if (!e.name.empty()) entries_.push_back(std::move(e));
  }
}

bool IbPortFilter::matches(const std::string& dev, int port) const {
  if (entries_.empty()) return true;
  bool listed = false;
  for (const Entry& e : entries_) {
    bool name = exact_ ? dev == e.name : dev.compare(0, e.name.size(), e.name) == 0;
    if (name && (e.port == -1 || e.port == port)) {
      listed = true;
      break;
    }
  }
  return listed != exclude_;
}

IbCollector::IbCollector(std::string sysfsRoot, const std::string& hca, double tauSeconds)
    : root_(std::move(sysfsRoot)), filter_(hca), tau_(tauSeconds) {}

bool IbCollector::rootPresent() const { return pathExists(root_ + "/class/infiniband"); }

void IbCollector::discover() {
  const std::string base = root_ + "/class/infiniband";
  for (const std::string& dev : listDir(base)) {
    for (const std::string& port : listDir(base + "/" + dev + "/ports")) {
      auto portNum = parseU64(port);
      if (!portNum || !filter_.matches(dev, static_cast<int>(*portNum))) continue;
      std::string id = dev + ":" + port;
      auto known = std::find_if(links_.begin(), links_.end(), [&](const LinkHealth& l) { return l.id == id; });
      if (known != links_.end()) continue;
      Port p;
      p.dir = base + "/" + dev + "/ports/" + port;
      for (const char* name : kErrorCounters) {
        std::string f = p.dir + "/counters/" + name;
        if (pathExists(f)) p.errorFiles.push_back(f);
      }
      for (const char* name : kCongestionCounters) {
        std::string f = p.dir + "/hw_counters/" + name;
        if (pathExists(f)) p.congestionFiles.push_back(f);
      }
      for (const char* name : kLossCounters) {
        std::string f = p.dir + "/hw_counters/" + name;
        if (pathExists(f)) p.lossFiles.push_back(f);
      }
      p.errors.resize(p.errorFiles.size());
      p.congestion.resize(p.congestionFiles.size());
      p.loss.resize(p.lossFiles.size());
      LinkHealth l;
      auto layer = readLine(p.dir + "/link_layer");
      l.kind = (layer && *layer == "Ethernet") ? LinkKind::kRoce : LinkKind::kInfiniBand;
      l.id = id;
      ports_.push_back(std::move(p));
      links_.push_back(std::move(l));
    }
  }
}

void IbCollector::sample(int64_t nowNs) {
  double dt = lastNs_ > 0 && nowNs > lastNs_ ? static_cast<double>(nowNs - lastNs_) * 1e-9 : 0.0;
  lastNs_ = nowNs;
  for (size_t i = 0; i < ports_.size(); ++i) {
    Port& p = ports_[i];
    LinkHealth& l = links_[i];
    auto stateLine = readLine(p.dir + "/state");
    l.present = stateLine.has_value() || pathExists(p.dir);
    auto state = stateLine ? parseIbState(*stateLine) : std::nullopt;
    l.up = state && (*state == 4 || *state == 5);  // ACTIVE, ACTIVE_DEFER
    auto rateLine = readLine(p.dir + "/rate");
    auto rate = rateLine ? parseIbRate(*rateLine) : std::nullopt;
    l.nominalBps = rate ? *rate : 0.0;

    p.xmit.update(readU64(p.dir + "/counters/port_xmit_data"), dt, 4.0, tau_);
    p.rcv.update(readU64(p.dir + "/counters/port_rcv_data"), dt, 4.0, tau_);
    p.wait.update(readU64(p.dir + "/counters/port_xmit_wait"), dt, 1.0, tau_);
    auto fresh = [](const RateMeter& m) {
      return m.valid && (m.lastStep == CounterTrack::Step::kDelta || m.lastStep == CounterTrack::Step::kWrap32);
    };
    l.rateValid = fresh(p.xmit) && fresh(p.rcv);
    l.txBps = p.xmit.smoothed;
    l.rxBps = p.rcv.smoothed;

    l.errorsPerSec = sumRate(p.errorFiles, p.errors, dt, /*countResets=*/true);
    l.lossPerSec = sumRate(p.lossFiles, p.loss, dt, /*countResets=*/true);
    if (!p.congestionFiles.empty()) {
      l.congestionPerSec = sumRate(p.congestionFiles, p.congestion, dt, /*countResets=*/true);
      l.congestionUnit = "cnp/s";
      l.congested = l.congestionPerSec > 0;
    } else {
      // xmit_wait also grows on a busy but healthy link and its tick length is hardware-specific, so
      // it is reported for trend analysis but does not by itself mark the link congested.
      l.congestionPerSec = fresh(p.wait) ? p.wait.lastRate : 0.0;
      l.congestionUnit = "xmit_wait_ticks/s";
      l.congested = false;
    }
    uint32_t anomaly = anomalies(p.xmit.counter) + anomalies(p.rcv.counter) + anomalies(p.wait.counter);
    for (const auto& t : p.errors) anomaly += anomalies(t);
    l.counterAnomalies = anomaly;
    refreshState(l, nowNs);
  }
}

}  // namespace wirewise::collectors
