// The process's Prometheus metrics (docs/prometheus.md), fed by the very events the runtime writes to the
// adaptation log: Runtime::event hands each one here before the log gets it, so the metrics say what the
// log says even when the log is off, and no part of the runtime reports twice.
//
// Two kinds of families: NCCL Inspector's (nccl_bus_bandwidth_gbs, nccl_collective_exec_time_microseconds,
// with its label names where they overlap, so that a dashboard built for the Inspector reads wirewise too)
// and wirewise's own (wirewise_*: the choice in force, adaptations, exploration, link health, the control
// plane). Every family is bounded (MetricSet's cap per family).
//
// Threads: observe() runs where events are posted — the runtime's threads (sink tracker, sampler,
// control-plane I/O) and the faces' init and finalize, never getCollInfo or a profiler callback; render()
// runs on an exporter's thread. One mutex serialises them; neither throws.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <mutex>
#include <span>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "runtime/metric_set.h"

namespace wirewise {

class Metrics {
 public:
  // Series per family. A job's summaries hold one series per (communicator, rank, collective, size bucket,
  // choice) seen; 4096 covers 8 ranks x 8 communicators x 64 of those per process.
  static constexpr size_t kMaxSeriesPerFamily = 4096;

  explicit Metrics(size_t maxSeriesPerFamily = kMaxSeriesPerFamily);

  // One adaptation-log event as the runtime posts it (common/log_events.h). Events that carry no metric,
  // and lines that do not read as their type, are ignored (the log still has them).
  void observe(const nlohmann::json& ev) noexcept;

  // The exposition text (text format 0.0.4). Never throws; "" only when memory ran out.
  std::string render() noexcept;
  // Families with at least one series now.
  std::vector<std::string> familyNames();

  // Every family this file can produce, for the documentation and the dashboard's test.
  static std::span<const MetricFamily> families();

 private:
  struct CommInfo {
    std::string name = "unknown";  // the Inspector's word for a communicator without ncclConfig_t.commName
    int64_t nRanks = 0, nNodes = 0;
  };
  void dispatch(const nlohmann::json& ev);
  const CommInfo& comm(const std::string& id);

  std::mutex mu_;
  MetricSet set_;
  std::map<std::string, CommInfo> comms_;  // by comm id ("0x..."), at most kMaxSeriesPerFamily
};

}  // namespace wirewise
