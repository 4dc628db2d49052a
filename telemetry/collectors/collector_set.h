// The runtime's single entry point to the link collectors. The runtime owns one CollectorSet, calls
// sample() from its background sampler thread every `periodMs` (never from NCCL's hot path), and reads
// snapshot()/summary() from any thread. Every source degrades to "unavailable, because ..." instead of
// failing; create() never returns null and throws nothing but std::bad_alloc.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "telemetry/collectors/cupti_collector.h"
#include "telemetry/collectors/link_health.h"

namespace wirewise {
class LaunchRing;
}

namespace wirewise::collectors {

class IbCollector;
class NetdevCollector;
class TcpCollector;
class NvmlCollector;

struct CollectorConfig {
  std::string sysfsRoot = "/sys";       // tests point this at a fake tree
  bool ib = true;
  std::string ibHca;                    // NCCL_IB_HCA syntax ("mlx5", "=mlx5_0:1,mlx5_1:1", "^mlx5_3"); "" = all
  bool netdev = true;
  std::vector<std::string> netdevs;     // empty = all but "lo"
  bool tcp = true;                      // sockets are added with addTcpSocket()
  bool nvml = true;
  std::string nvmlLibrary = "libnvidia-ml.so.1";
  bool nvmlPcieThroughput = false;      // nvmlDeviceGetPcieThroughput blocks ~20 ms per call
  bool cupti = false;                   // opt-in (WIREWISE_CUPTI=1): CUPTI admits one client per process
  std::string cuptiLibrary = "libcupti.so.13";
  wirewise::LaunchRing* launches = nullptr;  // NCCL's KernelLaunch events: CUPTI kernels are matched to comms
  double smoothingSeconds = 2.0;        // EWMA time constant of the rate estimates
  uint32_t periodMs = 1000;             // advice for the sampler thread; sample() takes its own time
  uint32_t rediscoverEveryPasses = 60;  // rescan sysfs for new/removed ports (0 = never)
};

using LogFn = std::function<void(const std::string&)>;  // one line, no trailing newline
using Clock = std::chrono::steady_clock;

class CollectorSet {
 public:
  static std::unique_ptr<CollectorSet> create(const CollectorConfig& cfg, LogFn log);
  ~CollectorSet();
  CollectorSet(const CollectorSet&) = delete;
  CollectorSet& operator=(const CollectorSet&) = delete;

  // One pass over every available source; publishes a new snapshot. Call from one thread at a time.
  void sample(Clock::time_point now);

  LinkHealthSnapshot snapshot() const;  // copy of the latest pass (thread-safe)
  LinkHealthSummary summary() const;    // fixed-size digest of the latest pass (thread-safe)
  // "ib: 8 port(s); netdev: 16 interface(s); tcp: ...; nvml: unavailable (dlopen ...); cupti: ..."
  std::string statusLine() const;
  const std::vector<SourceStatus>& sources() const { return sources_; }

  // CUPTI (when enabled and available): NCCL kernels seen since the last call, and running totals.
  std::vector<CuptiKernel> takeCuptiKernels();
  CuptiStats cuptiStats() const;
  // True when CUPTI runs and drains cfg.launches (the profiler should then ask NCCL for KernelLaunch).
  bool cuptiAttributes() const;
  // The "cupti_kernels" adaptation-log event (cumulative), or null (CUPTI off, or nothing seen yet).
  nlohmann::json cuptiReport() const;

  // Thread-safe; the socket is followed until removed. Remove it before closing the fd: a reused fd
  // number would otherwise be read as the same link.
  void addTcpSocket(int fd, const std::string& label);
  void removeTcpSocket(int fd);

 private:
  explicit CollectorSet(const CollectorConfig& cfg, LogFn log);

  CollectorConfig cfg_;
  LogFn log_;
  std::unique_ptr<IbCollector> ib_;
  std::unique_ptr<NetdevCollector> netdev_;
  std::unique_ptr<TcpCollector> tcp_;
  std::unique_ptr<NvmlCollector> nvml_;
  std::unique_ptr<CuptiCollector> cupti_;
  std::vector<SourceStatus> sources_;  // fixed after create()
  uint64_t passes_ = 0;
  mutable std::mutex mu_;               // guards published_ and summary_
  LinkHealthSnapshot published_;
  LinkHealthSummary summary_;
};

}  // namespace wirewise::collectors
