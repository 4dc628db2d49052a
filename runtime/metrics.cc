#include "runtime/metrics.h"

#include <algorithm>
#include <cctype>
#include <cstdint>

#include "adaptive/buckets.h"
#include "common/log_events.h"
#include "common/units.h"

namespace wirewise {
namespace {

// ---- the families (docs/prometheus.md lists them with their labels) ----

// NCCL Inspector's names, labels and units (its Prometheus output), so its dashboards read these too.
constexpr MetricFamily kBusBw{"nccl_bus_bandwidth_gbs", MetricType::Gauge,
                              "NCCL bus bandwidth (nccl-tests convention, GB/s) over the last summary interval"};
constexpr MetricFamily kExecTime{"nccl_collective_exec_time_microseconds", MetricType::Gauge,
                                 "median GPU execution time of a collective over the last summary interval, in "
                                 "microseconds (the NCCL Inspector's name and unit)"};
// wirewise's own, in base units (seconds) as Prometheus asks of new names.
constexpr MetricFamily kP99{"wirewise_collective_p99_seconds", MetricType::Gauge,
                            "99th percentile GPU execution time of a collective over the last summary interval"};
constexpr MetricFamily kCollectives{"wirewise_collectives_total", MetricType::Counter,
                                    "collectives timed by the profiler face, per size bucket and what NCCL ran"};
constexpr MetricFamily kProfilerDrops{"wirewise_profiler_dropped_events_total", MetricType::Counter,
                                      "profiler events lost (pool full, ring full, incomplete, orphan)"};
constexpr MetricFamily kChoice{"wirewise_choice_in_force", MetricType::Gauge,
                               "1 for each range of the decision table in force (channels 0: NCCL's count)"};
constexpr MetricFamily kExploring{"wirewise_exploring", MetricType::Gauge,
                                  "1 while the coordinator's verdict in force probes candidates"};
constexpr MetricFamily kExplored{"wirewise_explored_seconds_total", MetricType::Counter,
                                 "GPU time of the collectives the adaptive policy ran as probes"};
constexpr MetricFamily kMeasured{"wirewise_measured_seconds_total", MetricType::Counter,
                                 "GPU time of every collective the adaptive policy measured"};
constexpr MetricFamily kShare{"wirewise_exploration_share", MetricType::Gauge,
                              "explored over measured time: the share of the communication time spent probing"};
constexpr MetricFamily kAdapt{"wirewise_adaptations_total", MetricType::Counter,
                              "decisions of the adaptive policy, by kind (calibrated, alarm, commit, ...)"};
constexpr MetricFamily kVerdictIndex{"wirewise_verdict_index", MetricType::Gauge,
                                     "index of the latest verdict that changed this communicator's table"};
constexpr MetricFamily kObserveOnly{"wirewise_verdict_observe_only", MetricType::Gauge,
                                    "1 when the latest verdict leaves NCCL's choices alone (observe only)"};
constexpr MetricFamily kVerdicts{"wirewise_verdict_changes_total", MetricType::Counter,
                                 "verdicts that changed the table, reason or observe-only flag"};
constexpr MetricFamily kBoundaryWait{"wirewise_boundary_wait_seconds_total", MetricType::Counter,
                                     "time getCollInfo waited at boundaries for verdicts (counted at finalize)"};
constexpr MetricFamily kBoundaries{"wirewise_boundaries_total", MetricType::Counter,
                                   "agreement boundaries crossed (counted at finalize)"};
constexpr MetricFamily kControlInfo{"wirewise_control_plane_info", MetricType::Gauge,
                                    "1: the control plane runs, with this coordinator, hosted here or not"};
constexpr MetricFamily kControlMessages{"wirewise_control_messages_total", MetricType::Counter,
                                        "lines of the control plane (waits at a boundary, refusals) by level"};
constexpr MetricFamily kLinkState{"wirewise_link_state", MetricType::Gauge,
                                  "1 for the link's state now (up, degraded, down), 0 for the others"};
constexpr MetricFamily kLinkTx{"wirewise_link_transmit_gbs", MetricType::Gauge,
                               "link transmit rate, GB/s (1e9 bytes/s), when the sampler's reading is fresh"};
constexpr MetricFamily kLinkRx{"wirewise_link_receive_gbs", MetricType::Gauge,
                               "link receive rate, GB/s (1e9 bytes/s), when the sampler's reading is fresh"};
constexpr MetricFamily kLinkErrors{"wirewise_link_errors_per_second", MetricType::Gauge,
                                   "link error counters' rate over the sampler's last pass"};
constexpr MetricFamily kInfo{"wirewise_info", MetricType::Gauge, "1, with the plugin's version and host"};
constexpr MetricFamily kDropped{"wirewise_metrics_dropped_series_total", MetricType::Counter,
                                "series not exported because their family held its maximum already"};

constexpr MetricFamily kFamilies[] = {kBusBw, kExecTime, kP99, kCollectives, kProfilerDrops,
                                      kChoice, kExploring, kExplored, kMeasured, kShare,
                                      kAdapt, kVerdictIndex, kObserveOnly, kVerdicts, kBoundaryWait,
                                      kBoundaries, kControlInfo, kLinkState, kControlMessages, kLinkTx,
                                      kLinkRx, kLinkErrors, kInfo, kDropped};

constexpr const char* kLinkStates[] = {"up", "degraded", "down"};

// "allreduce" -> "AllReduce": the Inspector spells collectives as NCCL's API does.
std::string collectiveLabel(const std::string& coll) {
  static const std::map<std::string, std::string, std::less<>> kNames = {
      {"allreduce", "AllReduce"}, {"allgather", "AllGather"}, {"reducescatter", "ReduceScatter"},
      {"broadcast", "Broadcast"}, {"reduce", "Reduce"}};
  auto it = kNames.find(coll);
  return it == kNames.end() ? coll : it->second;
}

// "ring", "simple" -> "RING_SIMPLE", the Inspector's algo_proto.
std::string algoProto(const std::string& algo, const std::string& proto) {
  std::string out = algo + "_" + proto;
  for (char& c : out) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  return out;
}

// "1.25KiB-1.50KiB": sizes from lo up to `end` (exclusive; UINT64_MAX: no end, "max") in the spirit of
// the Inspector's message_size ("1-2MB"), with exact edges (bytesText) so that no two buckets read alike.
std::string messageSize(uint64_t lo, uint64_t end) {
  std::string s = bytesText(lo) + "-" + bytesText(end);
  std::erase(s, ' ');
  return s;
}

// A table range's inclusive [min, max] as message_size.
std::string rangeSize(uint64_t min, uint64_t max) { return messageSize(min, max == UINT64_MAX ? max : max + 1); }

// A summary row's size bucket: its min/max are the sizes observed, the label names the bucket's edges.
std::string bucketSize(int64_t bucket) {
  const int b = static_cast<int>(std::clamp<int64_t>(bucket, 0, SizeBuckets::kCount - 1));
  return messageSize(SizeBuckets::lowerEdge(b), SizeBuckets::upperEdge(b));
}

bool hasLabel(const MetricLabels& labels, const char* name, const std::string& value) {
  for (const auto& [k, v] : labels)
    if (k == name) return v == value;
  return false;
}

}  // namespace

Metrics::Metrics(size_t maxSeriesPerFamily) : set_(maxSeriesPerFamily) {}

std::span<const MetricFamily> Metrics::families() { return kFamilies; }

const Metrics::CommInfo& Metrics::comm(const std::string& id) {
  static const CommInfo kUnknown;
  auto it = comms_.find(id);
  return it == comms_.end() ? kUnknown : it->second;
}

void Metrics::observe(const nlohmann::json& ev) noexcept {
  try {
    std::lock_guard<std::mutex> lock(mu_);
    dispatch(ev);
  } catch (...) {
    // A line of the wrong shape (a type_error) or memory running out: this event carries no metric.
  }
}

void Metrics::dispatch(const nlohmann::json& ev) {
  const auto kind = logev::lineKindOf(ev);
  if (!kind) return;
  using logev::EventKind;
  switch (*kind) {
    case EventKind::PluginStart: {
      const auto e = ev.get<logev::PluginStart>();
      set_.set(kInfo, {{"version", e.version}, {"host", e.host}}, 1);
      break;
    }
    case EventKind::CommInit: {
      const auto e = ev.get<logev::CommInit>();
      if (comms_.size() >= kMaxSeriesPerFamily && !comms_.contains(e.comm)) break;
      CommInfo& c = comms_[e.comm];
      if (e.commName && !e.commName->empty()) c.name = *e.commName;
      c.nRanks = e.nRanks;
      c.nNodes = e.nNodes;
      break;
    }
    case EventKind::Summary: {
      const auto e = ev.get<logev::Summary>();
      const CommInfo& c = comm(e.comm);
      const std::string rank = std::to_string(e.rank);
      // The gauges describe the last interval: this rank's previous rows go, so a choice no longer run
      // does not linger with an old value.
      const auto sameRank = [&](const MetricLabels& l) {
        return hasLabel(l, "comm_id", e.comm) && hasLabel(l, "rank", rank);
      };
      for (const MetricFamily* f : {&kBusBw, &kExecTime, &kP99}) set_.erase(*f, sameRank);
      for (const auto& r : e.rows) {
        const MetricLabels labels = {{"comm_name", c.name},
                                     {"comm_id", e.comm},
                                     {"rank", rank},
                                     {"nranks", std::to_string(c.nRanks)},
                                     {"n_nodes", std::to_string(c.nNodes)},
                                     {"collective", collectiveLabel(r.coll)},
                                     {"message_size", bucketSize(r.bucket)},
                                     {"algo_proto", algoProto(r.algo, r.proto)},
                                     {"nchannels", std::to_string(r.channels)}};
        set_.set(kBusBw, labels, r.busBwGBs);
        set_.set(kExecTime, labels, r.p50Us);
        set_.set(kP99, labels, r.p99Us * 1e-6);
        set_.add(kCollectives, labels, static_cast<double>(r.count));
      }
      const std::pair<const char*, uint64_t> drops[] = {
          {"pool", e.drops.pool},
          {"ring", e.drops.ring},
          {"incomplete", e.drops.incomplete},
          {"orphan", e.drops.orphan}};
      for (const auto& [reason, n] : drops)
        if (n > 0)
          set_.add(kProfilerDrops, {{"comm_id", e.comm}, {"rank", rank}, {"reason", reason}}, static_cast<double>(n));
      break;
    }
    case EventKind::Table: {
      logev::TableCommon t;
      const bool coordinator = logev::isCoordinatorTable(ev);
      logev::CoordinatorTable ct;
      if (coordinator) {
        ct = ev.get<logev::CoordinatorTable>();
        t = ct;
      } else {
        t = ev.get<logev::RankTable>();
      }
      const std::string& name = comm(t.comm).name;
      set_.erase(kChoice, [&](const MetricLabels& l) { return hasLabel(l, "comm_id", t.comm); });
      for (const auto& r : t.ranges)
        set_.set(kChoice,
                 {{"comm_name", name},
                  {"comm_id", t.comm},
                  {"collective", collectiveLabel(r.coll)},
                  {"message_size", rangeSize(r.minBytes, r.maxBytes)},
                  {"min_bytes", std::to_string(r.minBytes)},
                  {"algo_proto", algoProto(r.algo, r.proto)},
                  {"nchannels", std::to_string(r.channels)}},
                 1);
      if (!coordinator) break;
      const MetricLabels labels = {{"comm_name", name}, {"comm_id", t.comm}};
      set_.set(kExploring, labels, ct.probe ? 1 : 0);
      if (ct.exploredUs) set_.set(kExplored, labels, *ct.exploredUs * 1e-6);
      if (ct.measuredUs) set_.set(kMeasured, labels, *ct.measuredUs * 1e-6);
      if (ct.exploredUs && ct.measuredUs && *ct.measuredUs > 0)
        set_.set(kShare, labels, *ct.exploredUs / *ct.measuredUs);
      break;
    }
    case EventKind::Adapt: {
      const auto e = ev.get<logev::Adapt>();
      set_.add(kAdapt, {{"comm_name", comm(e.comm).name}, {"comm_id", e.comm}, {"kind", e.kind}}, 1);
      break;
    }
    case EventKind::Verdict: {
      const auto e = ev.get<logev::Verdict>();
      const MetricLabels labels = {{"comm_name", comm(e.comm).name}, {"comm_id", e.comm}};
      set_.set(kVerdictIndex, labels, static_cast<double>(e.index));
      set_.set(kObserveOnly, labels, e.observeOnly ? 1 : 0);
      set_.add(kVerdicts, labels, 1);
      break;
    }
    case EventKind::CommFinalize: {
      const auto e = ev.get<logev::CommFinalize>();
      const MetricLabels labels = {{"comm_name", comm(e.comm).name}, {"comm_id", e.comm}};
      if (e.waitedUs) set_.add(kBoundaryWait, labels, static_cast<double>(*e.waitedUs) * 1e-6);
      if (e.boundaries) set_.add(kBoundaries, labels, static_cast<double>(*e.boundaries));
      break;
    }
    case EventKind::ControlStart: {
      const auto e = ev.get<logev::ControlStart>();
      set_.set(kControlInfo, {{"coordinator", e.coordinator}, {"role", e.hosting ? "coordinator" : "client"}}, 1);
      break;
    }
    case EventKind::Control: {
      const auto e = ev.get<logev::Control>();
      set_.add(kControlMessages, {{"level", e.level}}, 1);
      break;
    }
    case EventKind::LinkHealth: {
      // A state change lists only the links that changed, a full snapshot all of them: update per link.
      const auto e = ev.get<logev::LinkHealth>();
      for (const auto& l : e.links) {
        for (const char* s : kLinkStates)
          set_.set(kLinkState, {{"kind", l.kind}, {"link", l.id}, {"state", s}}, l.state == s ? 1 : 0);
        const MetricLabels labels = {{"kind", l.kind}, {"link", l.id}};
        if (l.txGbps) set_.set(kLinkTx, labels, *l.txGbps);
        if (l.rxGbps) set_.set(kLinkRx, labels, *l.rxGbps);
        set_.set(kLinkErrors, labels, l.errorsPerSec);
      }
      break;
    }
    default:
      break;
  }
}

std::string Metrics::render() noexcept {
  try {
    std::lock_guard<std::mutex> lock(mu_);
    for (const auto& [family, n] : set_.droppedSeries())
      set_.set(kDropped, {{"family", family}}, static_cast<double>(n));
    return set_.render();
  } catch (...) {
    return "";
  }
}

std::vector<std::string> Metrics::familyNames() {
  std::lock_guard<std::mutex> lock(mu_);
  return set_.familyNames();
}

}  // namespace wirewise
