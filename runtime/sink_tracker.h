// The profiler sinks the runtime drains (docs/telemetry.md): a thread drains every sink every 50 ms into
// its aggregator and logs one "summary" event per sink (and "net_paths" when the comm's proxy sink is
// tracked) every `summaryEvery`; under sync it also keeps each sink's samples for the boundary reports of
// the control-plane member paired with it. Time comes from an injected clock; tests call step(now).
#pragma once

#include <condition_variable>
#include <cstdint>
#include <deque>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

#include "runtime/clock.h"
#include "runtime/sampler.h"
#include "telemetry/aggregator.h"
#include "telemetry/event_sink.h"
#include "telemetry/net_paths.h"

namespace wirewise {

namespace control {
class Member;
struct Report;
}  // namespace control

class SinkTracker {
 public:
  // The summary interval starts now (clock()): the first summary covers the time since the runtime began.
  SinkTracker(PostFn post, SteadyClock clock, std::chrono::milliseconds summaryEvery);
  ~SinkTracker();  // stops the thread
  SinkTracker(const SinkTracker&) = delete;
  SinkTracker& operator=(const SinkTracker&) = delete;

  void start();  // the drain thread: step(clock()) every 50 ms until stop()
  void stop();   // idempotent

  // Drains every sink and, when summaryEvery has passed since the last summaries, logs them. Thread-safe.
  void step(SteadyTime now);

  // The comm's network paths (may be null) are reported as "net_paths" events with its summaries.
  void add(EventSink* sink, const ProxySink* proxy = nullptr);
  // Final drain and summary for this sink, then forgets it; the caller may delete it afterwards.
  void remove(EventSink* sink);

  // From now on samples are also kept for the coordinator (sync on, apply mode).
  void keepForReports();
  // I/O thread: the samples of the sink paired with member m before boundary r->seq (docs/policy.md,
  // "Evidence"). The profiler and the tuner of one rank are separate contexts that NCCL never links; any
  // one-to-one pairing serves, because the coordinator merges every member's samples of a collective anyway.
  void fillSamples(const control::Member& m, control::Report* r);

 private:
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
  void loop();
  void stepLocked(SteadyTime now);
  void drainLocked(Tracked& t);
  void summarizeLocked(Tracked& t, int64_t intervalMs);

  PostFn post_;
  SteadyClock clock_;
  std::chrono::milliseconds summaryEvery_;
  std::mutex mu_;
  std::condition_variable cv_;
  bool stop_ = false;
  std::vector<std::unique_ptr<Tracked>> sinks_;
  bool keepForReports_ = false;
  SteadyTime lastSummary_;  // the start of the current summary interval
  std::thread thread_;
};

}  // namespace wirewise
