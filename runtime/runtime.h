// The process-wide runtime: settings (read once), the parsed static configuration, the adaptation log,
// and the parts that run beside NCCL — the sink tracker (profiler samples into summaries), the link
// sampler, and the control-plane wiring. Each part is its own file; this one owns their lifetime.
//
// Created by the first tuner or profiler init of the process and destroyed after the last finalize; the
// faces hold their reference through a RuntimeRef. NCCL 2.28 may never dlclose the tuner (and may never
// finalize a comm at exit), so a library destructor also stops the threads if the runtime is still alive
// at unload or exit. Nothing here is touched by getCollInfo or the profiler callbacks.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "adaptive/config.h"
#include "adaptive/evidence_types.h"
#include "common/log_events.h"
#include "runtime/sampler.h"
#include "common/settings.h"
#include "telemetry/adaptation_log.h"
#include "telemetry/event_sink.h"

namespace wirewise {

class ControlWiring;
class LaunchRing;
class Metrics;
class MetricsHttp;
class MetricsTextfile;
class ProxySink;
class SinkTracker;
namespace control {
class ControlPlane;
}

class Runtime {
 public:
  // Takes a reference, creating the runtime on first use. env is used only when it is created, and so is
  // `by`, the face whose init is calling (plugin_start's profiler_face; nullopt: a test or a tool). The
  // faces use RuntimeRef, which releases for them.
  static Runtime* acquire(const EnvSource& env = processEnv(), std::optional<logev::Face> by = std::nullopt);
  // Drops a reference; the last one destroys the runtime (joins its threads, flushes the log).
  static void release();
  // For tests and the CLI: number of live references (0 when no runtime exists).
  static int references();

  const Settings& settings() const { return settings_; }
  const ParsedConfig& config() const { return config_; }
  const std::string& host() const { return host_; }
  // Every part's events: the Prometheus metrics see each (when an output is on), then the log gets it.
  void event(nlohmann::json ev);
  void flushLog() { log_->flush(); }

  // Profiler sinks whose samples the sink tracker aggregates into "summary" events, and the comm's
  // network paths (may be null) it reports as "net_paths" events.
  void addSink(EventSink* sink, const ProxySink* proxy = nullptr);
  // Final drain and summary for this sink, then forgets it; the caller may delete it afterwards.
  void removeSink(EventSink* sink);

  // NCCL's kernel launches for the CUPTI collector's matching (telemetry/launch_ring.h); null unless
  // WIREWISE_CUPTI is on and the collector runs and can match. Fixed after construction.
  LaunchRing* launchRing() const { return launches_.get(); }

  // The net plugin's open send comms, one reading per rail (net/rail_registry.h installs its reader at the
  // first connect; tests inject theirs). Called on the sampler thread only; null: no rails.
  using RailSource = wirewise::RailSource;
  static void setRailSource(RailSource source);
  // This host's unhealthy links as of the last sampler pass: what the next boundary report carries.
  std::vector<adapt::LinkNote> linkNotes();
  // The link sampler, null when WIREWISE_COLLECT_MS is 0, the mode is off or the collectors failed to start.
  const Sampler* sampler() const { return sampler_.get(); }

  // Whether a profiler face has initialised since the runtime started (NCCL initialises a communicator's
  // profiler before its tuner, so a tuner init that finds none has no profiler face at all).
  void noteProfilerFace() { profilerFace_.store(true, std::memory_order_relaxed); }
  bool profilerFaceSeen() const { return profilerFace_.load(std::memory_order_relaxed); }
  // The WARNs given once per runtime (runtime/face_notices.h): true for the first caller of each kind.
  enum class Notice { NoProfilerFace, LegacyTuner, kCount };
  bool firstNotice(Notice n) { return !noticed_[static_cast<size_t>(n)].exchange(true); }

  // The control plane (docs/control-plane.md), started by the first call. Null when WIREWISE_SYNC is
  // off. Thread-safe; never called from getCollInfo.
  control::ControlPlane* controlPlane();

  ~Runtime();
  void stopThread();  // stops every thread; idempotent

 private:
  Runtime(const EnvSource& env, std::optional<logev::Face> by);
  void startSampler(const EnvSource& env);
  void startMetrics(const EnvSource& env);

  Settings settings_;
  std::string host_;
  ParsedConfig config_;
  std::atomic<bool> profilerFace_{false};
  std::atomic<bool> noticed_[static_cast<size_t>(Notice::kCount)] = {};
  // Declared in lifetime order: the parts post to the log, so it is destroyed after them; launches_
  // outlives the CUPTI collector that the sampler owns.
  std::unique_ptr<AdaptationLog> log_;
  // Null unless a Prometheus output runs (docs/prometheus.md). The exporters read metrics_ from their
  // threads, so they go first; the parts below post into it, so it outlives them.
  std::unique_ptr<Metrics> metrics_;
  std::unique_ptr<MetricsTextfile> textfile_;
  std::unique_ptr<MetricsHttp> http_;
  std::unique_ptr<SinkTracker> sinks_;
  std::unique_ptr<ControlWiring> control_;
  std::unique_ptr<LaunchRing> launches_;
  std::unique_ptr<Sampler> sampler_;
};

// One reference to the runtime, released when it goes: init paths that fail on the way release without
// saying so. keep() hands the reference to the comm's context, which gives it back at finalize with adopt().
class RuntimeRef {
 public:
  RuntimeRef() = default;
  static RuntimeRef acquire(const EnvSource& env = processEnv(), std::optional<logev::Face> by = std::nullopt);
  // The reference a comm has held since its init (kept with keep()): released when this goes.
  static RuntimeRef adopt();
  ~RuntimeRef() { reset(); }
  RuntimeRef(RuntimeRef&& o) noexcept : rt_(o.rt_), owns_(o.owns_) { o.rt_ = nullptr, o.owns_ = false; }
  RuntimeRef& operator=(RuntimeRef&& o) noexcept;
  RuntimeRef(const RuntimeRef&) = delete;
  RuntimeRef& operator=(const RuntimeRef&) = delete;

  Runtime* get() const { return rt_; }
  Runtime* operator->() const { return rt_; }
  Runtime& operator*() const { return *rt_; }
  explicit operator bool() const { return rt_ != nullptr; }
  // The reference stays taken, now held by the caller's context until its finalize adopts it.
  Runtime* keep();
  void reset();  // releases now

 private:
  Runtime* rt_ = nullptr;
  bool owns_ = false;
};

}  // namespace wirewise
