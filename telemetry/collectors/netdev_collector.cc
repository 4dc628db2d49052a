#include "telemetry/collectors/netdev_collector.h"


#include <algorithm>
#include <utility>

namespace wirewise::collectors {
namespace {

bool fresh(const RateMeter& m) {
  return m.valid && (m.lastStep == CounterTrack::Step::kDelta || m.lastStep == CounterTrack::Step::kWrap32);
}

}  // namespace

NetdevCollector::NetdevCollector(std::string sysfsRoot, std::vector<std::string> filter, double tauSeconds)
    : root_(std::move(sysfsRoot)), filter_(std::move(filter)), tau_(tauSeconds) {}

bool NetdevCollector::rootPresent() const { return pathExists(root_ + "/class/net"); }

void NetdevCollector::discover() {
  const std::string base = root_ + "/class/net";
  for (const std::string& name : listDir(base)) {
    bool skip = filter_.empty() ? name == "lo" : std::find(filter_.begin(), filter_.end(), name) == filter_.end();
    if (skip) continue;
    if (std::any_of(links_.begin(), links_.end(), [&](const LinkHealth& l) { return l.id == name; })) continue;
    Iface f;
    f.dir = base + "/" + name;
    if (!pathExists(f.dir + "/statistics")) continue;  // bonding_masters and other plain files
    f.statTx = f.dir + "/statistics/tx_bytes";
    f.statRx = f.dir + "/statistics/rx_bytes";
    f.stateFile = f.dir + "/operstate";
    f.speedFile = f.dir + "/speed";
    for (const char* e : {"tx_errors", "rx_errors", "tx_carrier_errors", "rx_crc_errors"}) {
      std::string p = f.dir + "/statistics/" + e;
      if (pathExists(p)) f.errorFiles.push_back(p);
    }
    for (const char* e : {"tx_dropped", "rx_dropped"}) {
      std::string p = f.dir + "/statistics/" + e;
      if (pathExists(p)) f.dropFiles.push_back(p);
    }
    f.errors.resize(f.errorFiles.size());
    f.drops.resize(f.dropFiles.size());
    LinkHealth l;
    l.kind = LinkKind::kNetdev;
    l.id = name;
    l.congestionUnit = "drops/s";
    ifs_.push_back(std::move(f));
    links_.push_back(std::move(l));
  }
}

void NetdevCollector::sample(int64_t nowNs) {
  double dt = lastNs_ > 0 && nowNs > lastNs_ ? static_cast<double>(nowNs - lastNs_) * 1e-9 : 0.0;
  lastNs_ = nowNs;
  for (size_t i = 0; i < ifs_.size(); ++i) {
    Iface& f = ifs_[i];
    LinkHealth& l = links_[i];
    auto oper = readLine(f.stateFile);
    l.present = oper.has_value() || pathExists(f.dir);
    // "unknown" is what drivers without carrier reporting (tun, some virtual devices) say while working.
    l.up = oper && (*oper == "up" || *oper == "unknown");
    // speed is Mb/s; -1 or EINVAL (virtual devices, link down) means unknown.
    auto speed = readU64(f.speedFile);
    l.nominalBps = speed && *speed > 0 && *speed < 10'000'000 ? static_cast<double>(*speed) * 1e6 / 8.0 : 0.0;
    f.tx.update(readU64(f.statTx), dt, 1.0, tau_);
    f.rx.update(readU64(f.statRx), dt, 1.0, tau_);
    l.rateValid = fresh(f.tx) && fresh(f.rx);
    l.txBps = f.tx.smoothed;
    l.rxBps = f.rx.smoothed;
    l.errorsPerSec = sumRate(f.errorFiles, f.errors, dt, /*countResets=*/false);
    // Drops are reported but do not mark congestion: rx_dropped also counts unknown protocols on real NICs.
    l.congestionPerSec = sumRate(f.dropFiles, f.drops, dt, /*countResets=*/false);
    l.congested = false;
    uint32_t anomaly = 0;
    for (const CounterTrack* t : {&f.tx.counter, &f.rx.counter}) {
      anomaly += static_cast<uint32_t>(t->wraps + t->resets + t->missing);
    }
    l.counterAnomalies = anomaly;
    refreshState(l, nowNs);
  }
}

}  // namespace wirewise::collectors
