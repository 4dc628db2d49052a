#include "telemetry/collectors/collector_set.h"

#include <utility>

#include <nlohmann/json.hpp>

#include "telemetry/collectors/cupti_collector.h"
#include "telemetry/collectors/ib_collector.h"
#include "telemetry/collectors/netdev_collector.h"
#include "telemetry/collectors/nvml_collector.h"
#include "telemetry/collectors/tcp_collector.h"

namespace wirewise::collectors {

CollectorSet::CollectorSet(const CollectorConfig& cfg, LogFn log) : cfg_(cfg), log_(std::move(log)) {}
CollectorSet::~CollectorSet() = default;

std::unique_ptr<CollectorSet> CollectorSet::create(const CollectorConfig& cfg, LogFn log) {
  std::unique_ptr<CollectorSet> set(new CollectorSet(cfg, std::move(log)));
  const double tau = cfg.smoothingSeconds;
  auto add = [&](const char* name, bool ok, std::string reason) {
    set->sources_.push_back(SourceStatus{name, ok, std::move(reason)});
  };
  try {
    if (!cfg.ib) {
      add("ib", false, "disabled");
    } else {
      auto ib = std::make_unique<IbCollector>(cfg.sysfsRoot, cfg.ibHca, tau);
      if (!ib->rootPresent()) {
        add("ib", false, "no " + cfg.sysfsRoot + "/class/infiniband");
      } else {
        ib->discover();
        add("ib", ib->portCount() > 0, std::to_string(ib->portCount()) + " port(s)");
        set->ib_ = std::move(ib);
      }
    }
    if (!cfg.netdev) {
      add("netdev", false, "disabled");
    } else {
      auto nd = std::make_unique<NetdevCollector>(cfg.sysfsRoot, cfg.netdevs, tau);
      if (!nd->rootPresent()) {
        add("netdev", false, "no " + cfg.sysfsRoot + "/class/net");
      } else {
        nd->discover();
        add("netdev", nd->interfaceCount() > 0, std::to_string(nd->interfaceCount()) + " interface(s)");
        set->netdev_ = std::move(nd);
      }
    }
    if (cfg.tcp) {
      set->tcp_ = std::make_unique<TcpCollector>(tau);
      add("tcp", true, "sockets registered by the runtime");
    } else {
      add("tcp", false, "disabled");
    }
    if (!cfg.nvml) {
      add("nvml", false, "disabled");
    } else {
      auto nv = std::make_unique<NvmlCollector>(tau, cfg.nvmlPcieThroughput);
      bool ok = nv->open(cfg.nvmlLibrary);
      add("nvml", ok, nv->reason());
      if (ok) set->nvml_ = std::move(nv);
    }
    if (!cfg.cupti) {
      add("cupti", false, "disabled (opt-in: WIREWISE_CUPTI=1)");
    } else {
      auto cu = std::make_unique<CuptiCollector>();
      bool ok = cu->start(cfg.cuptiLibrary);
      if (ok && cfg.launches) cu->attachLaunches(cfg.launches, set->log_);
      add("cupti", ok, cu->reason());
      if (ok) set->cupti_ = std::move(cu);
    }
  } catch (const std::exception& e) {
    // Allocation failure while discovering: keep whatever sources were set up and say why.
    add("collectors", false, std::string("setup failed: ") + e.what());
  }
  if (set->log_) set->log_("collectors: " + set->statusLine());
  return set;
}

void CollectorSet::sample(Clock::time_point now) {
  const int64_t ns = std::chrono::duration_cast<std::chrono::nanoseconds>(now.time_since_epoch()).count();
  ++passes_;
  bool rescan = cfg_.rediscoverEveryPasses > 0 && passes_ % cfg_.rediscoverEveryPasses == 0;
  LinkHealthSnapshot snap;
  snap.timeNs = ns;
  snap.passes = passes_;
  snap.sources = sources_;
  try {
    if (ib_) {
      if (rescan) ib_->discover();
      ib_->sample(ns);
      snap.links.insert(snap.links.end(), ib_->links().begin(), ib_->links().end());
    }
    if (netdev_) {
      if (rescan) netdev_->discover();
      netdev_->sample(ns);
      snap.links.insert(snap.links.end(), netdev_->links().begin(), netdev_->links().end());
    }
    if (tcp_) {
      tcp_->sample(ns);
      auto t = tcp_->links();
      snap.links.insert(snap.links.end(), t.begin(), t.end());
    }
    if (nvml_) {
      nvml_->sample(ns);
      snap.links.insert(snap.links.end(), nvml_->links().begin(), nvml_->links().end());
    }
    if (cupti_) cupti_->flush(false);
  } catch (const std::exception& e) {
    if (log_) log_(std::string("collectors: sampling pass failed: ") + e.what());
    return;
  }
  LinkHealthSummary sum = summarize(snap);
  std::lock_guard<std::mutex> lock(mu_);
  published_ = std::move(snap);
  summary_ = sum;
}

LinkHealthSnapshot CollectorSet::snapshot() const {
  std::lock_guard<std::mutex> lock(mu_);
  return published_;
}

LinkHealthSummary CollectorSet::summary() const {
  std::lock_guard<std::mutex> lock(mu_);
  return summary_;
}

std::string CollectorSet::statusLine() const {
  std::string out;
  for (const SourceStatus& s : sources_) {
    if (!out.empty()) out += "; ";
    out += s.name + ": " + (s.available ? s.reason : "unavailable (" + s.reason + ")");
  }
  return out;
}

std::vector<CuptiKernel> CollectorSet::takeCuptiKernels() {
  return cupti_ ? cupti_->takeKernels() : std::vector<CuptiKernel>{};
}

CuptiStats CollectorSet::cuptiStats() const { return cupti_ ? cupti_->stats() : CuptiStats{}; }

bool CollectorSet::cuptiAttributes() const { return cupti_ && cupti_->attributing(); }

nlohmann::json CollectorSet::cuptiReport() const { return cupti_ ? cupti_->report() : nlohmann::json(nullptr); }

void CollectorSet::addTcpSocket(int fd, const std::string& label) {
  if (tcp_) tcp_->addSocket(fd, label);
}

void CollectorSet::removeTcpSocket(int fd) {
  if (tcp_) tcp_->removeSocket(fd);
}

}  // namespace wirewise::collectors
