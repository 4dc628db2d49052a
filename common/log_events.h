// The adaptation log's events as types (docs/adaptation-log.md is the schema): every writer fills one of
// these structs and every reader gets one back, so each event's keys are spelled once, in its visit().
// The JSON is the schema as it was written by hand before: the same keys, value types and nulls;
// std::optional members are omitted when empty, `nullable` ones are written as null.
// Reading is tolerant the way the log's readers always were: a missing key keeps the member's default (an
// older line), unknown keys are ignored, and a key of the wrong type throws nlohmann::json::type_error,
// which the readers count as a malformed line.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

namespace wirewise::logev {

inline constexpr int kSchemaVersion = 1;  // the envelope's "v"; a change that removes or redefines a key bumps it

enum class EventKind {
  PluginStart,
  PluginStop,
  CommInit,
  CommFinalize,
  ConfigProblem,
  Collectors,
  WiringPrior,
  LinkHealth,
  RailShift,
  Summary,
  NetPaths,
  CuptiKernels,
  Control,
  ControlStart,
  Verdict,
  Table,  // per-rank tables and the coordinator's (RankTable, CoordinatorTable) share the name
  Adapt,
  LogDropped,
  Unknown,  // a name this build does not know (a newer writer): readers count and skip it
};

std::string_view eventName(EventKind k);  // "plugin_start", ...; "" for Unknown
EventKind eventKindOf(std::string_view name);
// The kind of one parsed line; nullopt when it is not an event at all (not an object, or no string
// "event"): the readers' "malformed".
std::optional<EventKind> lineKindOf(const nlohmann::json& line);

// ---- names that appear as values ----

enum class Face { Tuner, Profiler };
std::string_view faceName(Face f);  // "tuner", "profiler"

// `adapt` kinds (docs/adaptation-log.md). The struct keeps the kind as text: a reader must carry a kind
// a newer writer added.
enum class AdaptKind { Calibrated, Alarm, Commit, Recover, Revert, Hold, Deferred };
std::string_view adaptKindName(AdaptKind k);
std::optional<AdaptKind> parseAdaptKind(std::string_view s);
inline bool isAdaptKind(std::string_view s, AdaptKind k) { return s == adaptKindName(k); }
// The kinds a summary lists first, in this order (a later kind follows in name order).
inline constexpr AdaptKind kListedAdaptKinds[] = {AdaptKind::Calibrated, AdaptKind::Alarm,  AdaptKind::Commit,
                                                  AdaptKind::Recover,    AdaptKind::Revert, AdaptKind::Hold};

// Keys that readers test before they know which struct a line is.
inline constexpr const char* kEventKey = "event";
inline constexpr const char* kSourceKey = "source";
inline constexpr const char* kIndexKey = "index";

inline constexpr std::string_view kSourceCoordinator = "coordinator";  // a table event's `source`
inline constexpr std::string_view kSourceBuiltin = "builtin";

// Decision names: "algo/proto/channels" ("tree/simple/11"), or "nccl" for NCCL's own choice.
inline constexpr std::string_view kNcclDecision = "nccl";
// A range's algo, proto or coll that leaves NCCL's choice (or applies to every collective).
inline constexpr std::string_view kAny = "any";
struct DecisionParts {
  std::string algo, proto;
  int64_t channels = 0;
  bool operator==(const DecisionParts&) const = default;
};
std::string formatDecision(std::string_view algo, std::string_view proto, int64_t channels);
std::string formatDecision(const DecisionParts& d);
// nullopt for "nccl" and for text that is not three '/'-separated parts with an integer channel count.
std::optional<DecisionParts> parseDecision(std::string_view s);

// ---- the mechanism: one field list per record, visited by one writer and one reader ----

namespace detail {

template <class T>
struct IsOptional : std::false_type {};
template <class T>
struct IsOptional<std::optional<T>> : std::true_type {};

struct Writer {
  nlohmann::json& j;
  template <class T>
  void operator()(const char* key, const T& v) {
    if constexpr (IsOptional<T>::value) {
      if (v) j[key] = *v;  // optional keys: omitted when empty
    } else {
      j[key] = v;
    }
  }
  template <class T>
  void nullable(const char* key, const std::optional<T>& v) {
    j[key] = v ? nlohmann::json(*v) : nlohmann::json(nullptr);
  }
  void texts(const char* key, const std::vector<std::string>& v) { j[key] = v; }
  void stringMap(const char* key, const std::map<std::string, std::string>& v) { j[key] = v; }
};

template <class T>
concept Record = requires(T& t, Writer& w) { T::visit(t, w); };

struct Reader {
  const nlohmann::json& j;
  const nlohmann::json* find(const char* key) const {
    if (!j.is_object()) return nullptr;
    auto it = j.find(key);
    return it == j.end() ? nullptr : &*it;
  }
  template <class T>
  void operator()(const char* key, T& v) {
    const nlohmann::json* x = find(key);
    if (x == nullptr) return;
    if constexpr (IsOptional<T>::value) {
      using U = typename T::value_type;
      // Absent or null: none. A nested record that is not an object is none too (readers skipped it).
      if (x->is_null() || (Record<U> && !x->is_object()))
        v.reset();
      else
        v = x->get<U>();
    } else {
      x->get_to(v);
    }
  }
  template <class T>
  void nullable(const char* key, std::optional<T>& v) {
    (*this)(key, v);
  }
  // Strings today; anything richer a later writer puts there is kept as its JSON text.
  void texts(const char* key, std::vector<std::string>& v) {
    const nlohmann::json* x = find(key);
    if (x == nullptr) return;
    v.clear();
    for (const nlohmann::json& e : *x) v.push_back(e.is_string() ? e.get<std::string>() : e.dump());
  }
  // Values that are not strings are left out; a value that is not an object gives none.
  void stringMap(const char* key, std::map<std::string, std::string>& v) {
    const nlohmann::json* x = find(key);
    if (x == nullptr || !x->is_object()) return;
    v.clear();
    for (auto it = x->begin(); it != x->end(); ++it)
      if (it->is_string()) v[it.key()] = it->get<std::string>();
  }
};

template <class T>
concept Event = Record<T> && requires { T::kKind; };

template <Record T>
void write(nlohmann::json& j, const T& x) {
  if (!j.is_object()) j = nlohmann::json::object();
  Writer w{j};
  T::visit(x, w);
  if constexpr (Event<T>) j[kEventKey] = std::string(eventName(T::kKind));
}

template <Record T>
void read(const nlohmann::json& j, T& x) {
  Reader r{j};
  T::visit(x, r);
}

}  // namespace detail

#define WW_LOG_RECORD(T)                                                                       \
  inline void to_json(nlohmann::json& j, const T& x) { ::wirewise::logev::detail::write(j, x); } \
  inline void from_json(const nlohmann::json& j, T& x) { ::wirewise::logev::detail::read(j, x); }

// ---- the envelope: every line ----

struct Envelope {
  int64_t v = kSchemaVersion;
  std::string ts;  // ISO-8601 UTC with milliseconds
  int64_t pid = 0;
  template <class S, class V>
  static void visit(S& s, V& v) {
    v("v", s.v);
    v("ts", s.ts);
    v("pid", s.pid);
  }
};
WW_LOG_RECORD(Envelope)

// Adds the envelope's keys to an event's object (the log's writer stamps every line it posts).
void stamp(nlohmann::json& event, const Envelope& e);

// ---- nested rows ----

// One decision-table range, as `table` events list them.
struct Range {
  std::string coll, algo, proto;
  uint64_t minBytes = 0, maxBytes = 0;
  int64_t channels = 0;
  std::optional<uint64_t> chunkBytes = std::nullopt;  // only when the range sets one (tuner v6+)
  bool operator==(const Range&) const = default;
  template <class S, class V>
  static void visit(S& s, V& v) {
    v("coll", s.coll);
    v("min_bytes", s.minBytes);
    v("max_bytes", s.maxBytes);
    v("algo", s.algo);
    v("proto", s.proto);
    v("channels", s.channels);
    v("chunk_bytes", s.chunkBytes);
  }
};
WW_LOG_RECORD(Range)

struct Detector {
  double statistic = 0, threshold = 0;
  std::string shift;  // "slower", "faster"
  template <class S, class V>
  static void visit(S& s, V& v) {
    v("statistic", s.statistic);
    v("threshold", s.threshold);
    v("shift", s.shift);
  }
};
WW_LOG_RECORD(Detector)

struct Candidate {
  std::string decision;
  double us = 0;
  template <class S, class V>
  static void visit(S& s, V& v) {
    v("decision", s.decision);
    v("us", s.us);
  }
};
WW_LOG_RECORD(Candidate)

// The policy's latency-or-bandwidth reading of a change (adaptive/cause.h).
struct Cause {
  std::string kind, text;
  double latencyUs = 0;
  int64_t sizes = 0;
  template <class S, class V>
  static void visit(S& s, V& v) {
    v("kind", s.kind);
    v("latency_us", s.latencyUs);
    v("sizes", s.sizes);
    v("text", s.text);
  }
};
WW_LOG_RECORD(Cause)

struct SummaryRow {
  std::string coll, algo, proto;
  int64_t bucket = 0, channels = 0;
  uint64_t minBytes = 0, maxBytes = 0, count = 0;
  double p50Us = 0, p99Us = 0, busBwGBs = 0;
  template <class S, class V>
  static void visit(S& s, V& v) {
    v("coll", s.coll);
    v("bucket", s.bucket);
    v("min_bytes", s.minBytes);
    v("max_bytes", s.maxBytes);
    v("algo", s.algo);
    v("proto", s.proto);
    v("channels", s.channels);
    v("count", s.count);
    v("p50_us", s.p50Us);
    v("p99_us", s.p99Us);
    v("busbw_gbs", s.busBwGBs);
  }
};
WW_LOG_RECORD(SummaryRow)

struct SummaryDrops {
  uint64_t pool = 0, ring = 0, incomplete = 0, orphan = 0;
  template <class S, class V>
  static void visit(S& s, V& v) {
    v("pool", s.pool);
    v("ring", s.ring);
    v("incomplete", s.incomplete);
    v("orphan", s.orphan);
  }
};
WW_LOG_RECORD(SummaryDrops)

// One link of a `link_health` event (docs/telemetry.md). Keys that only some kinds of link have are optional.
struct LinkEntry {
  std::string kind, id, state;
  bool present = true, up = false;
  double nominalGbps = 0, errorsPerSec = 0;
  int64_t lastChangeNs = 0;
  uint64_t counterAnomalies = 0;
  std::optional<double> txGbps, rxGbps;                  // only when the rate is known
  std::optional<double> congestion;                      // with a congestion unit
  std::optional<std::string> congestionUnit;
  std::optional<bool> congested;
  std::optional<double> lossPerSec;                      // roce, ib, tcp
  std::optional<double> rttUs;                           // tcp, rail
  std::optional<double> rttVarUs, minRttUs, deliveryGbps;  // tcp
  std::optional<double> rateGbps, share, rateRatio, baselineRttUs;  // rail
  std::optional<int64_t> connections;                    // rail
  std::optional<std::string> reason;                     // rail, when it has one
  template <class S, class V>
  static void visit(S& s, V& v) {
    v("kind", s.kind);
    v("id", s.id);
    v("state", s.state);
    v("present", s.present);
    v("up", s.up);
    v("nominal_gbps", s.nominalGbps);
    v("errors_per_s", s.errorsPerSec);
    v("last_change_ns", s.lastChangeNs);
    v("counter_anomalies", s.counterAnomalies);
    v("tx_gbps", s.txGbps);
    v("rx_gbps", s.rxGbps);
    v("congestion", s.congestion);
    v("congestion_unit", s.congestionUnit);
    v("congested", s.congested);
    v("loss_per_s", s.lossPerSec);
    v("rtt_us", s.rttUs);
    v("rttvar_us", s.rttVarUs);
    v("min_rtt_us", s.minRttUs);
    v("delivery_gbps", s.deliveryGbps);
    v("rate_gbps", s.rateGbps);
    v("share", s.share);
    v("rate_ratio", s.rateRatio);
    v("baseline_rtt_us", s.baselineRttUs);
    v("connections", s.connections);
    v("reason", s.reason);
  }
};
WW_LOG_RECORD(LinkEntry)

struct SourceEntry {
  std::string name, reason;
  bool available = false;
  template <class S, class V>
  static void visit(S& s, V& v) {
    v("name", s.name);
    v("available", s.available);
    v("reason", s.reason);
  }
};
WW_LOG_RECORD(SourceEntry)

// One rail of a `rail_shift` event.
struct RailEntry {
  int64_t rail = 0;
  std::string label, state;
  double before = 0, after = 0;
  bool wasUp = true, up = true;
  double rateGbps = 0;
  uint64_t rttUs = 0;
  double baselineRttUs = 0;
  uint64_t retransmits = 0;
  template <class S, class V>
  static void visit(S& s, V& v) {
    v("rail", s.rail);
    v("label", s.label);
    v("before", s.before);
    v("after", s.after);
    v("was_up", s.wasUp);
    v("up", s.up);
    v("rate_gbps", s.rateGbps);
    v("rtt_us", s.rttUs);
    v("baseline_rtt_us", s.baselineRttUs);
    v("retransmits", s.retransmits);
    v("state", s.state);
  }
};
WW_LOG_RECORD(RailEntry)

// One (peer, channel, direction) path of a `net_paths` event.
struct NetPathRow {
  int64_t channel = 0, peer = -1;
  std::string dir;  // "send", "recv"
  uint64_t ops = 0, steps = 0, plannedSteps = 0, bytes = 0, chunkSize = 0;
  double activeUs = 0, netUs = 0, netGBs = 0;
  std::map<std::string, double> waitUs;  // proxy state name -> µs, states with time only
  template <class S, class V>
  static void visit(S& s, V& v) {
    v("channel", s.channel);
    v("peer", s.peer);
    v("dir", s.dir);
    v("ops", s.ops);
    v("steps", s.steps);
    v("planned_steps", s.plannedSteps);
    v("bytes", s.bytes);
    v("chunk_size", s.chunkSize);
    v("active_us", s.activeUs);
    v("net_us", s.netUs);
    v("net_gbs", s.netGBs);
    v("wait_us", s.waitUs);
  }
};
WW_LOG_RECORD(NetPathRow)

struct NetPathDrops {
  uint64_t pool = 0, pathsFull = 0, stale = 0, reclaimed = 0;
  template <class S, class V>
  static void visit(S& s, V& v) {
    v("pool", s.pool);
    v("paths_full", s.pathsFull);
    v("stale", s.stale);
    v("reclaimed", s.reclaimed);
  }
};
WW_LOG_RECORD(NetPathDrops)

// Process-wide, cumulative proxy counters (events that may belong to another process).
struct NetPathProcess {
  uint64_t pxnOps = 0, orphanSteps = 0, orphanNetPlugin = 0;
  template <class S, class V>
  static void visit(S& s, V& v) {
    v("pxn_ops", s.pxnOps);
    v("orphan_steps", s.orphanSteps);
    v("orphan_net_plugin", s.orphanNetPlugin);
  }
};
WW_LOG_RECORD(NetPathProcess)

struct KernelRow {
  std::string coll;
  uint64_t kernels = 0;
  double deviceUs = 0;
  template <class S, class V>
  static void visit(S& s, V& v) {
    v("coll", s.coll);
    v("kernels", s.kernels);
    v("device_us", s.deviceUs);
  }
};
WW_LOG_RECORD(KernelRow)

struct CuptiComm {
  std::string comm;
  int64_t rank = -1;
  uint64_t verified = 0, unverified = 0, mismatched = 0;
  std::vector<KernelRow> colls;
  template <class S, class V>
  static void visit(S& s, V& v) {
    v("comm", s.comm);
    v("rank", s.rank);
    v("verified", s.verified);
    v("unverified", s.unverified);
    v("mismatched", s.mismatched);
    v("colls", s.colls);
  }
};
WW_LOG_RECORD(CuptiComm)

// ---- events ----

struct PluginStart {
  static constexpr EventKind kKind = EventKind::PluginStart;
  std::string version, host;
  std::map<std::string, std::string> settings;  // variable name -> effective value as text
  // Whether the profiler face started the plugin; false: a tuner init did, so this process has no profiler
  // face (NCCL initialises a communicator's profiler before its tuner), measures nothing and cannot
  // adapt. Absent when neither face started it (a test or a tool), and in logs from before the key.
  std::optional<bool> profilerFace;
  template <class S, class V>
  static void visit(S& s, V& v) {
    v("version", s.version);
    v("host", s.host);
    v.stringMap("settings", s.settings);
    v("profiler_face", s.profilerFace);
  }
};
WW_LOG_RECORD(PluginStart)

struct PluginStop {
  static constexpr EventKind kKind = EventKind::PluginStop;
  uint64_t logDropped = 0;  // lines the log dropped over the process's life
  template <class S, class V>
  static void visit(S& s, V& v) {
    v("log_dropped", s.logDropped);
  }
};
WW_LOG_RECORD(PluginStop)

struct CommInit {
  static constexpr EventKind kKind = EventKind::CommInit;
  std::string comm, face, abi;
  int64_t nRanks = 0, nNodes = 0;
  std::optional<int64_t> rank;          // profiler face only
  std::optional<std::string> commName;  // profiler face only, when NCCL was given one (ncclConfig_t.commName)
  template <class S, class V>
  static void visit(S& s, V& v) {
    v("comm", s.comm);
    v("face", s.face);
    v("abi", s.abi);
    v("nranks", s.nRanks);
    v("nnodes", s.nNodes);
    v("rank", s.rank);
    v("comm_name", s.commName);
  }
};
WW_LOG_RECORD(CommInit)

struct CommFinalize {
  static constexpr EventKind kKind = EventKind::CommFinalize;
  std::string comm, face;
  uint64_t collectives = 0;
  std::optional<uint64_t> applied, kept, boundaries;  // tuner face
  std::optional<uint64_t> waitedUs;  // tuner face with agreement: time getCollInfo waited for verdicts
  std::optional<int64_t> rank;       // profiler face
  std::optional<uint64_t> samples;   // profiler face
  std::optional<uint64_t> ceCollectives;  // profiler face v6+: collectives on copy engines (counted, not timed)
  template <class S, class V>
  static void visit(S& s, V& v) {
    v("comm", s.comm);
    v("face", s.face);
    v("collectives", s.collectives);
    v("applied", s.applied);
    v("kept", s.kept);
    v("boundaries", s.boundaries);
    v("waited_us", s.waitedUs);
    v("rank", s.rank);
    v("samples", s.samples);
    v("ce_collectives", s.ceCollectives);
  }
};
WW_LOG_RECORD(CommFinalize)

struct ConfigProblem {
  static constexpr EventKind kKind = EventKind::ConfigProblem;
  std::string file, reason;
  int64_t line = 0;
  bool warning = false;
  template <class S, class V>
  static void visit(S& s, V& v) {
    v("file", s.file);
    v("line", s.line);
    v("reason", s.reason);
    v("warning", s.warning);
  }
};
WW_LOG_RECORD(ConfigProblem)

struct Collectors {
  static constexpr EventKind kKind = EventKind::Collectors;
  int64_t periodMs = 0;
  std::string status;
  template <class S, class V>
  static void visit(S& s, V& v) {
    v("period_ms", s.periodMs);
    v("status", s.status);
  }
};
WW_LOG_RECORD(Collectors)

struct WiringPrior {
  static constexpr EventKind kKind = EventKind::WiringPrior;
  std::string file;
  uint64_t links = 0;
  std::vector<std::string> flags;
  template <class S, class V>
  static void visit(S& s, V& v) {
    v("file", s.file);
    v("links", s.links);
    v("flags", s.flags);
  }
};
WW_LOG_RECORD(WiringPrior)

struct LinkHealth {
  static constexpr EventKind kKind = EventKind::LinkHealth;
  int64_t timeNs = 0;
  uint64_t passes = 0;
  std::vector<LinkEntry> links;
  std::vector<SourceEntry> sources;
  template <class S, class V>
  static void visit(S& s, V& v) {
    v("time_ns", s.timeNs);
    v("passes", s.passes);
    v("links", s.links);
    v("sources", s.sources);
  }
};
WW_LOG_RECORD(LinkHealth)

struct RailShift {
  static constexpr EventKind kKind = EventKind::RailShift;
  uint64_t conn = 0;
  std::string peer;
  std::optional<std::string> host;  // the runtime adds this host
  int64_t timeNs = 0;
  std::vector<RailEntry> rails;
  uint64_t resentChunks = 0, resentSinceLast = 0;
  std::string reason;
  template <class S, class V>
  static void visit(S& s, V& v) {
    v("conn", s.conn);
    v("peer", s.peer);
    v("host", s.host);
    v("time_ns", s.timeNs);
    v("rails", s.rails);
    v("resent_chunks", s.resentChunks);
    v("resent_since_last", s.resentSinceLast);
    v("reason", s.reason);
  }
};
WW_LOG_RECORD(RailShift)

struct Summary {
  static constexpr EventKind kKind = EventKind::Summary;
  std::string comm;
  int64_t rank = 0, intervalMs = 0;
  std::vector<SummaryRow> rows;
  SummaryDrops drops;
  template <class S, class V>
  static void visit(S& s, V& v) {
    v("comm", s.comm);
    v("rank", s.rank);
    v("interval_ms", s.intervalMs);
    v("rows", s.rows);
    v("drops", s.drops);
  }
};
WW_LOG_RECORD(Summary)

struct NetPaths {
  static constexpr EventKind kKind = EventKind::NetPaths;
  std::string comm;
  int64_t rank = 0, intervalMs = 0;
  std::vector<NetPathRow> paths;
  uint64_t pathsOmitted = 0, ops = 0, steps = 0, nullParentOps = 0, netPluginEvents = 0;
  NetPathDrops drops;
  NetPathProcess process;
  template <class S, class V>
  static void visit(S& s, V& v) {
    v("comm", s.comm);
    v("rank", s.rank);
    v("interval_ms", s.intervalMs);
    v("paths", s.paths);
    v("paths_omitted", s.pathsOmitted);
    v("ops", s.ops);
    v("steps", s.steps);
    v("drops", s.drops);
    v("null_parent_ops", s.nullParentOps);
    v("net_plugin_events", s.netPluginEvents);
    v("process", s.process);
  }
};
WW_LOG_RECORD(NetPaths)

struct CuptiKernels {
  static constexpr EventKind kKind = EventKind::CuptiKernels;
  std::string attribution;
  uint64_t records = 0, ncclKernels = 0, otherKernels = 0, noTimestamp = 0, dropped = 0;
  std::vector<KernelRow> colls;
  uint64_t launches = 0, launchesLost = 0, launchesUnmapped = 0, staleLaunches = 0;
  uint64_t verified = 0, unverified = 0, mismatched = 0, unattributed = 0;
  std::vector<CuptiComm> comms;
  template <class S, class V>
  static void visit(S& s, V& v) {
    v("attribution", s.attribution);
    v("records", s.records);
    v("nccl_kernels", s.ncclKernels);
    v("other_kernels", s.otherKernels);
    v("no_timestamp", s.noTimestamp);
    v("dropped", s.dropped);
    v("colls", s.colls);
    v("launches", s.launches);
    v("launches_lost", s.launchesLost);
    v("launches_unmapped", s.launchesUnmapped);
    v("stale_launches", s.staleLaunches);
    v("verified", s.verified);
    v("unverified", s.unverified);
    v("mismatched", s.mismatched);
    v("unattributed", s.unattributed);
    v("comms", s.comms);
  }
};
WW_LOG_RECORD(CuptiKernels)

struct Control {
  static constexpr EventKind kKind = EventKind::Control;
  std::string level, message;  // level: "info", "warn"
  template <class S, class V>
  static void visit(S& s, V& v) {
    v("level", s.level);
    v("message", s.message);
  }
};
WW_LOG_RECORD(Control)

struct ControlStart {
  static constexpr EventKind kKind = EventKind::ControlStart;
  std::string coordinator, source, jobKey;
  bool hosting = false;
  template <class S, class V>
  static void visit(S& s, V& v) {
    v("coordinator", s.coordinator);
    v("source", s.source);
    v("hosting", s.hosting);
    v("job_key", s.jobKey);
  }
};
WW_LOG_RECORD(ControlStart)

struct Verdict {
  static constexpr EventKind kKind = EventKind::Verdict;
  std::string comm, reason, digest;
  uint64_t index = 0, boundary = 0;
  std::optional<uint64_t> next;  // written as null when there is none
  bool observeOnly = false;
  template <class S, class V>
  static void visit(S& s, V& v) {
    v("comm", s.comm);
    v("index", s.index);
    v("boundary", s.boundary);
    v.nullable("next", s.next);
    v("observe_only", s.observeOnly);
    v("reason", s.reason);
    v("digest", s.digest);
  }
};
WW_LOG_RECORD(Verdict)

// What both kinds of `table` event carry.
struct TableCommon {
  std::string comm, reason, source, digest;
  std::vector<Range> ranges;
  template <class S, class V>
  static void visit(S& s, V& v) {
    v("comm", s.comm);
    v("reason", s.reason);
    v(kSourceKey, s.source);
    v("digest", s.digest);
    v("ranges", s.ranges);
  }
};

// A per-rank `table`: the table a communicator's tuner applies from collective `seq`.
struct RankTable : TableCommon {
  static constexpr EventKind kKind = EventKind::Table;
  uint64_t seq = 0;
  template <class S, class V>
  static void visit(S& s, V& v) {
    TableCommon::visit(s, v);
    v("seq", s.seq);
  }
};
WW_LOG_RECORD(RankTable)

// The coordinator's `table` of one verdict (source "coordinator", with `index`, without `seq`).
struct CoordinatorTable : TableCommon {
  static constexpr EventKind kKind = EventKind::Table;
  CoordinatorTable() { source = std::string(kSourceCoordinator); }
  uint64_t index = 0, boundary = 0;
  std::optional<uint64_t> next;  // written as null when there is none
  bool probe = false;
  std::vector<Range> probes;
  std::optional<double> exploredUs, measuredUs;  // the policy's counters; older lines lack them
  template <class S, class V>
  static void visit(S& s, V& v) {
    TableCommon::visit(s, v);
    v(kIndexKey, s.index);
    v("boundary", s.boundary);
    v.nullable("next", s.next);
    v("probe", s.probe);
    v("probes", s.probes);
    v("explored_us", s.exploredUs);
    v("measured_us", s.measuredUs);
  }
};
WW_LOG_RECORD(CoordinatorTable)

// Which struct a `table` line is: the coordinator's has source "coordinator" and an `index` (one with the
// source but no index is read as a per-rank table). Throws type_error when `source` is not a string.
bool isCoordinatorTable(const nlohmann::json& line);

// One `adapt` event: a decision of the adaptive policy about one bucket range, with its evidence. Which
// optional keys are present depends on the kind (docs/adaptation-log.md).
struct Adapt {
  static constexpr EventKind kKind = EventKind::Adapt;
  std::string comm;
  uint64_t index = 0, boundary = 0;
  std::string kind;  // adaptKindName()
  std::string coll;
  uint64_t minBytes = 0, maxBytes = 0;
  std::string from, to;  // decision names
  std::optional<std::string> fromNccl;
  std::optional<double> beforeUs, afterUs, beforeBusBwGBs, afterBusBwGBs;
  std::optional<Detector> detector;
  std::optional<uint64_t> probes;  // alarm: candidates queued
  std::optional<bool> suspected, provisional;
  std::optional<std::vector<Candidate>> candidates;
  std::optional<double> exploredUs;
  std::vector<std::string> links;
  std::string reason;
  std::optional<Cause> cause;
  template <class S, class V>
  static void visit(S& s, V& v) {
    v("comm", s.comm);
    v("index", s.index);
    v("boundary", s.boundary);
    v("kind", s.kind);
    v("coll", s.coll);
    v("min_bytes", s.minBytes);
    v("max_bytes", s.maxBytes);
    v("from", s.from);
    v("to", s.to);
    v("from_nccl", s.fromNccl);
    v("before_us", s.beforeUs);
    v("after_us", s.afterUs);
    v("before_busbw_gbs", s.beforeBusBwGBs);
    v("after_busbw_gbs", s.afterBusBwGBs);
    v("detector", s.detector);
    v("probes", s.probes);
    v("suspected", s.suspected);
    v("provisional", s.provisional);
    v("candidates", s.candidates);
    v("explored_us", s.exploredUs);
    v.texts("links", s.links);
    v("reason", s.reason);
    v("cause", s.cause);
  }
};
WW_LOG_RECORD(Adapt)

struct LogDropped {
  static constexpr EventKind kKind = EventKind::LogDropped;
  uint64_t count = 0;
  template <class S, class V>
  static void visit(S& s, V& v) {
    v("count", s.count);
  }
};
WW_LOG_RECORD(LogDropped)

}  // namespace wirewise::logev
