#include "runtime/sink_tracker.h"

#include <algorithm>
#include <string>

#include "adaptive/types.h"
#include "common/log_events.h"
#include "common/units.h"
#include "control/member.h"
#include "control/wire.h"

namespace wirewise {
namespace {

constexpr auto kDrainPeriod = std::chrono::milliseconds(50);
// Samples kept per sink for the coordinator: a few boundaries' worth even at 8 collectives per boundary.
constexpr size_t kMaxReportBacklog = 1 << 16;

int64_t msBetween(SteadyTime from, SteadyTime to) {
  return std::chrono::duration_cast<std::chrono::milliseconds>(to - from).count();
}

}  // namespace

SinkTracker::SinkTracker(PostFn post, SteadyClock clock, std::chrono::milliseconds summaryEvery)
    : post_(std::move(post)), clock_(std::move(clock)), summaryEvery_(summaryEvery), lastSummary_(clock_()) {}

SinkTracker::~SinkTracker() { stop(); }

void SinkTracker::start() { thread_ = std::thread([this] { loop(); }); }

void SinkTracker::stop() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stop_ = true;
  }
  cv_.notify_all();
  if (thread_.joinable()) thread_.join();
}

void SinkTracker::loop() {
  std::unique_lock<std::mutex> lock(mu_);
  while (!stop_) {
    cv_.wait_for(lock, kDrainPeriod);
    stepLocked(clock_());
  }
}

void SinkTracker::step(SteadyTime now) {
  std::lock_guard<std::mutex> lock(mu_);
  stepLocked(now);
}

void SinkTracker::stepLocked(SteadyTime now) {
  for (auto& t : sinks_) drainLocked(*t);
  const int64_t elapsed = msBetween(lastSummary_, now);
  if (elapsed >= summaryEvery_.count()) {
    for (auto& t : sinks_) summarizeLocked(*t, elapsed);
    lastSummary_ = now;
  }
}

void SinkTracker::add(EventSink* sink, const ProxySink* proxy) {
  std::lock_guard<std::mutex> lock(mu_);
  sinks_.push_back(std::make_unique<Tracked>(Tracked{sink, Aggregator(sink->nRanks()), {}, {}, nullptr, 0, proxy, {}}));
}

void SinkTracker::remove(EventSink* sink) {
  std::lock_guard<std::mutex> lock(mu_);
  for (auto it = sinks_.begin(); it != sinks_.end(); ++it) {
    if ((*it)->sink != sink) continue;
    drainLocked(**it);
    summarizeLocked(**it, msBetween(lastSummary_, clock_()));
    sinks_.erase(it);
    return;
  }
}

void SinkTracker::keepForReports() {
  std::lock_guard<std::mutex> lock(mu_);
  keepForReports_ = true;
}

void SinkTracker::fillSamples(const control::Member& m, control::Report* r) {
  std::lock_guard<std::mutex> lock(mu_);
  // Pair the member with a sink of its comm: its own pairing, else the first unpaired one.
  Tracked* t = nullptr;
  for (auto& x : sinks_)
    if (x->sink->commId() == m.commId() && x->member == &m) t = x.get();
  if (t == nullptr)
    for (auto& x : sinks_)
      if (x->sink->commId() == m.commId() && x->member == nullptr) {
        x->member = &m;
        t = x.get();
        break;
      }
  if (t == nullptr) return;
  drainLocked(*t);
  // Only collectives before the boundary: what a rank has completed when it passes B_k is exactly the
  // collectives before it, so the report at B_k carries the same collectives on every run.
  auto& q = t->forReport;
  while (!q.empty() && q.front().collIndex < r->seq && r->samples.size() < control::kMaxReportSamples) {
    const CollSample& s = q.front();
    r->samples.push_back({s.seqNumber, s.bytes,
                          static_cast<uint32_t>(std::min<uint64_t>(s.durationNs, UINT32_MAX)), s.coll, s.algo,
                          s.proto, s.nChannels, s.slowChannels, s.slowRatioQ8});
    q.pop_front();
  }
}

void SinkTracker::drainLocked(Tracked& t) {
  CollSample buf[256];
  for (;;) {
    size_t n = t.sink->drain(buf, 256);
    for (size_t i = 0; i < n; ++i) {
      t.agg.add(buf[i]);
      if (!keepForReports_) continue;
      if (t.forReport.size() >= kMaxReportBacklog) {
        t.forReport.pop_front();
        ++t.reportDropped;
      }
      t.forReport.push_back(buf[i]);
    }
    if (n < 256) break;
  }
}

void SinkTracker::summarizeLocked(Tracked& t, int64_t intervalMs) {
  if (t.proxy != nullptr) {
    nlohmann::json paths = t.paths.take(*t.proxy, hexId(t.sink->commId()), intervalMs);
    if (!paths.is_null()) post_(std::move(paths));
  }
  std::vector<SummaryRow> rows = t.agg.takeSummary();
  SinkCounters c = t.sink->counters();
  uint64_t pool = c.droppedPoolExhausted - t.reported.droppedPoolExhausted;
  uint64_t ring = c.droppedRingFull - t.reported.droppedRingFull;
  uint64_t incomplete = c.droppedIncomplete - t.reported.droppedIncomplete;
  uint64_t orphan = c.orphanEvents - t.reported.orphanEvents;
  t.reported = c;
  if (rows.empty() && pool + ring + incomplete + orphan == 0) return;
  logev::Summary ev;
  ev.comm = hexId(t.sink->commId());
  ev.rank = t.sink->rank();
  ev.intervalMs = intervalMs;
  for (const auto& r : rows) {
    logev::SummaryRow row;
    row.coll = r.coll >= 0 ? std::string(collName(static_cast<CollType>(r.coll))) : "unknown";
    row.algo = std::string(algoName(r.algo));
    row.proto = std::string(protoName(r.proto));
    row.bucket = r.bucket;
    row.channels = r.nChannels;
    row.minBytes = r.bytesMin;
    row.maxBytes = r.bytesMax;
    row.count = r.count;
    row.p50Us = r.p50Us;
    row.p99Us = r.p99Us;
    row.busBwGBs = r.busBwGBs;
    ev.rows.push_back(std::move(row));
  }
  ev.drops = {.pool = pool, .ring = ring, .incomplete = incomplete, .orphan = orphan};
  post_(ev);
}

}  // namespace wirewise
