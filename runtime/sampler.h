// The link sampler (docs/telemetry.md): every pass samples the link collectors, merges the wiring prior's
// GPU pairs and the net plugin's rails into one link-health snapshot, keeps this host's unhealthy links
// for the coordinator's boundary reports, and logs link_health events: a full snapshot on the first pass
// and every `fullEvery` after it, and in between each state change once, when it happens.
//
// It runs on its own thread (start/stop): a pass may block on sysfs or NVML for milliseconds, which must
// never delay draining the profiler sinks. Its time comes from an injected clock; tests call step(now)
// with a time of their choosing instead of starting the thread.
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include <nlohmann/json.hpp>

#include "adaptive/evidence_types.h"
#include "runtime/clock.h"
#include "telemetry/collectors/link_health.h"

namespace wirewise {

namespace collectors {
class CollectorSet;
}

// Where the sampler's events go (the adaptation log in production).
using PostFn = std::function<void(nlohmann::json)>;
// The net plugin's open send comms, one reading per rail (net/rail_registry.h); null: no rails.
using RailSource = std::vector<collectors::RailReading> (*)();

struct SamplerOptions {
  std::string host;                                // prefixes the link notes' names
  std::chrono::milliseconds period{1000};          // between passes on the thread (WIREWISE_COLLECT_MS)
  std::chrono::milliseconds fullEvery{10000};      // full snapshots at least this far apart (WIREWISE_SUMMARY_MS)
  std::vector<collectors::LinkHealth> wiringPrior; // joins every pass's links (docs/wiring.md)
  // Read at every pass: the net plugin installs its source at its first connect, after the sampler starts.
  std::function<RailSource()> railSource;
};

class Sampler {
 public:
  Sampler(std::unique_ptr<collectors::CollectorSet> collectors, SamplerOptions options, PostFn post,
          SteadyClock clock);
  ~Sampler();  // stops the thread
  Sampler(const Sampler&) = delete;
  Sampler& operator=(const Sampler&) = delete;

  void start();  // the thread: step(clock()) every period until stop(); a pass that throws ends it, with a WARN
  void stop();   // idempotent

  // One pass at `now`. One thread at a time: the thread once started, else the caller. Throws what the
  // collectors throw.
  void step(SteadyTime now);

  // This host's unhealthy links as of the last pass: what the next boundary report carries. Thread-safe.
  std::vector<adapt::LinkNote> linkNotes() const;
  uint64_t passes() const { return passes_.load(std::memory_order_acquire); }

 private:
  void loop();

  std::unique_ptr<collectors::CollectorSet> collectors_;
  SamplerOptions options_;
  PostFn post_;
  SteadyClock clock_;

  // step()'s own state (one thread at a time). lastFull_ starts as "never": the first pass is a full
  // snapshot whatever the clock reads (the steady clock's epoch is the machine's boot).
  std::map<std::string, int> states_;  // link states already logged, so that a change is logged once
  std::set<std::string> everUp_;       // a link that was never up (an unused port) is not news when down
  std::optional<SteadyTime> lastFull_;
  collectors::RailTracker rails_;

  mutable std::mutex linksMu_;
  std::vector<adapt::LinkNote> linkNotes_;
  std::atomic<uint64_t> passes_{0};

  std::mutex mu_;
  std::condition_variable cv_;
  bool stop_ = false;
  std::thread thread_;
};

// WIREWISE_WIRING's map (docs/wiring.md) as links for SamplerOptions::wiringPrior, stamped at nowNs. A map
// that cannot be read, or that was measured on another host than `host`, yields none and a WARN; a map
// taken posts its "wiring_prior" event and WARNs its flags.
std::vector<collectors::LinkHealth> loadWiringLinks(const std::string& path, const std::string& host,
                                                    int64_t nowNs, const PostFn& post);

}  // namespace wirewise
