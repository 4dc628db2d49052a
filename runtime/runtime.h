// The process-wide runtime: settings (read once), the parsed static configuration, the adaptation
// log, and the background thread that drains profiler sinks into summaries.
//
// Created by the first tuner or profiler init of the process and destroyed after the last finalize.
// NCCL 2.28 may never dlclose the tuner (and may never finalize a comm at exit), so a library
// destructor also stops the thread if the runtime is still alive at unload or exit.
// Nothing here is touched by getCollInfo or the profiler callbacks.
#pragma once

#include <chrono>
#include <condition_variable>
#include <deque>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include <nlohmann/json.hpp>

#include "adaptive/config.h"
#include "adaptive/evidence_types.h"
#include "common/settings.h"
#include "telemetry/adaptation_log.h"
#include "telemetry/collectors/link_health.h"
#include "telemetry/aggregator.h"
#include "telemetry/event_sink.h"
#include "telemetry/net_paths.h"

namespace wirewise {

class LaunchRing;
namespace collectors {
class CollectorSet;
}
namespace control {
class ControlPlane;
class Member;
struct Report;
}

class Runtime {
 public:
  // Takes a reference, creating the runtime on first use. env is used only when it is created.
  static Runtime* acquire(const EnvSource& env = processEnv());
  // Drops a reference; the last one destroys the runtime (joins its thread, flushes the log).
  static void release();
  // For tests and the CLI: number of live references (0 when no runtime exists).
  static int references();

  const Settings& settings() const { return settings_; }
  const ParsedConfig& config() const { return config_; }
  const std::string& host() const { return host_; }
  void event(nlohmann::json ev) { log_.post(std::move(ev)); }
  void flushLog() { log_.flush(); }

  // Profiler sinks whose samples the background thread aggregates into "summary" events, and the
  // comm's network paths (may be null) it reports as "net_paths" events.
  void addSink(EventSink* sink, const ProxySink* proxy = nullptr);
  // Final drain and summary for this sink, then forgets it; the caller may delete it afterwards.
  void removeSink(EventSink* sink);

  // NCCL's kernel launches for the CUPTI collector's matching (telemetry/launch_ring.h); null unless
  // WIREWISE_CUPTI is on and the collector runs and can match. Fixed after construction.
  LaunchRing* launchRing() const { return launches_.get(); }

  // The net plugin's open send comms, one reading per rail (net/rail_registry.h installs its reader at the
  // first connect; tests inject theirs). Called on the sampler thread only; null: no rails.
  using RailSource = std::vector<collectors::RailReading> (*)();
  static void setRailSource(RailSource source);
  // This host's unhealthy links as of the last sampler pass: what the next boundary report carries.
  std::vector<adapt::LinkNote> linkNotes();

  // The control plane (docs/control-plane.md), started by the first call: its Boost.Asio I/O thread, its
  // client and, if this process binds the rendezvous address first, the coordinator. Null when
  // WIREWISE_SYNC is off. Thread-safe; never called from getCollInfo.
  control::ControlPlane* controlPlane();

  ~Runtime();
  void stopThread();  // idempotent

 private:
  explicit Runtime(const EnvSource& env);
  void run();
  struct Tracked {
    EventSink* sink;
    Aggregator agg;
    SinkCounters reported;
    // Samples waiting for the control-plane report of the member paired with this sink (sync only).
    std::deque<CollSample> forReport;
    const void* member = nullptr;
    uint64_t reportDropped = 0;
    const ProxySink* proxy = nullptr;
    NetPathsReporter paths;
  };
  // I/O thread: the member's evidence since its last report (docs/policy.md, "Evidence").
  void fillReport(control::Member& m, control::Report* r);
  void drainLocked(Tracked& t);
  void summarizeLocked(Tracked& t, int64_t intervalMs);

  Settings settings_;
  std::string host_;
  ParsedConfig config_;
  AdaptationLog log_;
  std::mutex mu_;
  std::condition_variable cv_;
  bool stop_ = false;
  std::vector<std::unique_ptr<Tracked>> sinks_;
  bool keepForReports_ = false;  // sync on and apply mode: samples also go to the coordinator
  std::chrono::steady_clock::time_point lastSummary_;
  std::thread thread_;

  // Resolved when the runtime starts (the environment is read only then); used at the first controlPlane().
  std::string rvHost_, rvSource_;
  uint16_t rvPort_ = 0;
  std::vector<uint8_t> jobKey_;
  std::string jobKeySource_;
  std::mutex controlMu_;
  bool controlStarted_ = false;
  std::unique_ptr<control::ControlPlane> control_;

  // Link collectors (docs/telemetry.md) on their own sampler thread: a pass may block on sysfs or NVML
  // for milliseconds, which must never delay draining the profiler sinks.
  void sampleLoop();
  std::unique_ptr<LaunchRing> launches_;  // declared before collectors_: it outlives the CUPTI collector
  std::unique_ptr<collectors::CollectorSet> collectors_;
  std::mutex samplerMu_;
  std::condition_variable samplerCv_;
  bool samplerStop_ = false;
  std::thread sampler_;
  // This host's unhealthy links as of the last pass, for the coordinator (fillReport).
  std::mutex linksMu_;
  std::vector<adapt::LinkNote> linkNotes_;
  // The net plugin's rails (RailTracker, docs/telemetry.md "Rails"): sampler thread only.
  collectors::RailTracker rails_;
  // WIREWISE_WIRING's GPU pairs (docs/wiring.md), read once at start: they join every pass's links.
  std::vector<collectors::LinkHealth> wiringPrior_;
  void loadWiring();
};

}  // namespace wirewise
