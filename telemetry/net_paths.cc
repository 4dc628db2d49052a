#include "telemetry/net_paths.h"

#include <algorithm>
#include <vector>

namespace wirewise {
namespace {

uint64_t keyOf(const NetPathTotals& t) {
  return (uint64_t{static_cast<uint32_t>(t.peer)} << 32) | (uint64_t{static_cast<uint8_t>(t.channel)} << 8) |
         (t.isSend ? 1u : 0u);
}

NetPathTotals minus(const NetPathTotals& a, const NetPathTotals& b) {
  NetPathTotals d = a;
  d.ops -= b.ops;
  d.plannedSteps -= b.plannedSteps;
  d.steps -= b.steps;
  d.bytes -= b.bytes;
  d.activeNs -= b.activeNs;
  d.netNs -= b.netNs;
  for (int s = 0; s < kNumProxyStates; ++s) d.stateNs[s] -= b.stateNs[s];
  return d;
}

double us(uint64_t ns) { return static_cast<double>(ns) / 1e3; }

}  // namespace

nlohmann::json NetPathsReporter::take(const ProxySink& sink, const std::string& comm, int64_t intervalMs) {
  std::vector<NetPathTotals> now(sink.pathCapacity());
  now.resize(sink.paths(now.data(), now.size()));
  std::vector<NetPathTotals> rows;
  for (const NetPathTotals& t : now) {
    NetPathTotals& prev = last_[keyOf(t)];  // zero totals for a new path
    NetPathTotals d = minus(t, prev);
    prev = t;
    // The totals are relaxed snapshots taken one field at a time: a field read a little early now is
    // made up next time, so only a path with new ops or steps is a row.
    if (d.ops != 0 || d.steps != 0) rows.push_back(d);
  }
  ProxyCounters c = sink.counters();
  ProxyCounters p = lastCounters_;
  lastCounters_ = c;
  uint64_t pool = c.droppedPoolExhausted - p.droppedPoolExhausted, full = c.droppedPathsFull - p.droppedPathsFull,
           stale = c.staleEvents - p.staleEvents, reclaimed = c.reclaimed - p.reclaimed;
  if (rows.empty() && pool + full + stale + reclaimed == 0 && c.opsStarted == p.opsStarted) return nullptr;

  std::sort(rows.begin(), rows.end(), [](const auto& a, const auto& b) { return a.bytes > b.bytes; });
  logev::NetPaths ev;
  for (size_t i = 0; i < rows.size() && i < kMaxRows; ++i) {
    const NetPathTotals& t = rows[i];
    logev::NetPathRow r;
    for (int st = 0; st < kNumProxyStates; ++st)
      if (t.stateNs[st] != 0) r.waitUs[proxyStateName(st)] = us(t.stateNs[st]);
    r.channel = t.channel;
    r.peer = t.peer;
    r.dir = t.isSend ? "send" : "recv";
    r.ops = t.ops;
    r.steps = t.steps;
    r.plannedSteps = t.plannedSteps;
    r.bytes = t.bytes;
    r.chunkSize = t.chunkSize;
    r.activeUs = us(t.activeNs);
    r.netUs = us(t.netNs);
    r.netGBs = t.netNs == 0 ? 0.0 : static_cast<double>(t.bytes) / static_cast<double>(t.netNs);
    ev.paths.push_back(std::move(r));
  }
  ForeignProxyCounters f = ProxySink::foreignCounters();
  ev.comm = comm;
  ev.rank = sink.rank();
  ev.intervalMs = intervalMs;
  ev.pathsOmitted = rows.size() > kMaxRows ? rows.size() - kMaxRows : 0;
  ev.ops = c.opsStarted - p.opsStarted;
  ev.steps = c.stepsStarted - p.stepsStarted;
  ev.drops = {pool, full, stale, reclaimed};
  ev.nullParentOps = c.opsNullParent - p.opsNullParent;
  ev.netPluginEvents = c.netPluginEvents - p.netPluginEvents;
  // Process-wide and cumulative: events whose context or parent may belong to another process.
  ev.process = {f.pxnOps, f.orphanSteps, f.orphanNetPlugin};
  return ev;
}

}  // namespace wirewise
