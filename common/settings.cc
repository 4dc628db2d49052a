#include "common/settings.h"

#include <unistd.h>

#include <cctype>
#include <cerrno>
#include <cinttypes>
#include <cstdio>
#include <cstdlib>
#include <initializer_list>
#include <string_view>

namespace wirewise {
namespace {

constexpr EnumValue<Mode> kModes[] = {{"apply", Mode::Apply}, {"observe", Mode::Observe}, {"off", Mode::Off}};
constexpr EnumValue<SyncMode> kSyncModes[] = {
    {"off", SyncMode::Off}, {"on", SyncMode::On}, {"deterministic", SyncMode::Deterministic}};
constexpr EnumValue<PolicyKind> kPolicies[] = {
    {"static", PolicyKind::Static}, {"adaptive", PolicyKind::Adaptive}, {"random-test", PolicyKind::RandomTest, false}};
constexpr EnumValue<bool> kSwitch[] = {{"on", true}, {"off", false}, {"1", true, false}, {"0", false, false}};

// Per user: a directory every user shares would be created by whoever came first, with their mode.
constexpr const char* kDefaultLog = "${TMPDIR:-/tmp}/wirewise-%u/%h-%p.jsonl";

// The table. Order is the documentation's: general, agreement, policy, net face, telemetry.
const SettingSpec kSpecs[] = {
    {"WIREWISE_MODE", EnumRow<Mode>{&Settings::mode, kModes},
     "`apply`: use the table in force; `observe`: measure and log only, never change what NCCL runs; `off`: leave "
     "NCCL entirely alone (no events requested)"},
    {"WIREWISE_CONFIG", TextRow{&Settings::config, TextKind::Path, nullptr, "(none)", "a readable file"},
     "static decision table: wirewise JSON ([config-format.md](config-format.md)) or NCCL's example "
     "`nccl_tuner.conf` CSV"},
    {"WIREWISE_LOG",
     TextRow{&Settings::logPath, TextKind::Path, kDefaultLog, nullptr, "a writable path, or 'none'", true, true, true},
     "the adaptation log ([adaptation-log.md](adaptation-log.md)); `%h` is the host name, `%p` the process id, `%u` "
     "the user id, `%r` the launcher's global rank (`RANK`, `SLURM_PROCID`, `OMPI_COMM_WORLD_RANK`, `PMIX_RANK`, "
     "`PMI_RANK`; `norank` without one), `%j` its job id (`TORCHELASTIC_RUN_ID` unless `none`, `SLURM_JOB_ID`, "
     "`OMPI_MCA_ess_base_jobid`, `PMIX_NAMESPACE`; `nojob` without one), `%%` a percent sign. Missing directories are created 0700 and the file 0600; a symbolic link, or "
     "a file that is not this user's, is refused. The default's directory must be this user's and writable by "
     "nobody else, else the log is off ([adaptation-log.md](adaptation-log.md#where-the-log-goes)); either refusal "
     "is one WARN naming the path and the fix"},
    {"WIREWISE_SUMMARY_MS", IntRow{&Settings::summaryMs, 100, 3600000},
     "interval between observation summaries in the adaptation log, in milliseconds"},
    {"WIREWISE_EVENT_POOL", IntRow{&Settings::eventPool, 16, 1 << 20},
     "in-flight collectives tracked per communicator (rounded up to a power of two), their kernel channels "
     "included; beyond it profiler events are dropped and counted"},
    {"WIREWISE_LOG_QUEUE", IntRow{&Settings::logQueue, 16, 1 << 20},
     "adaptation-log lines held in memory while the writer catches up; beyond it lines are dropped and counted"},
    {"WIREWISE_LOG_MAX_MB", IntRow{&Settings::logMaxMb, 1, 1 << 20, true},
     "size at which the adaptation log is rotated, in MiB (`0`: never): the file becomes `NAME.1.jsonl` (the one "
     "before it `NAME.2.jsonl`, and so on) and a new one is started; a process keeps at most "
     "(`WIREWISE_LOG_KEEP` + 1) files of this size ([adaptation-log.md](adaptation-log.md#rotation))"},
    {"WIREWISE_LOG_KEEP", IntRow{&Settings::logKeep, 1, 1000},
     "rotated adaptation-log files kept beside the one being written; the oldest goes first"},
    {"WIREWISE_SYNC", EnumRow<SyncMode>{&Settings::sync, kSyncModes},
     "agreement across ranks through the coordinator ([control-plane.md](control-plane.md)), on by default: every "
     "rank switches tables at the same collective, and no rank ever waits for a member that has not joined. "
     "`deterministic`: the coordinator waits for every member's report (the simulator's mode, reproducible runs); "
     "`off`: each rank keeps its static table. `WIREWISE_MODE=observe` measures without changing anything"},
    {"WIREWISE_COORDINATOR", TextRow{&Settings::coordinator, TextKind::Text, nullptr, "(rendezvous)", "host:port"},
     "the coordinator's address; otherwise `MASTER_ADDR` with port `MASTER_PORT`+17, then SLURM, then Open MPI "
     "(one node), then loopback"},
    {"WIREWISE_JOB_KEY",
     SecretRow{&Settings::jobKey, "(derived from the launcher's job id)", "any non-empty text"},
     "shared secret that authenticates every control-plane message; set it (or `WIREWISE_JOB_KEY_FILE`) wherever "
     "other users can reach the coordinator's port (a derived key only keeps stray jobs apart: "
     "[control-plane.md](control-plane.md#threat-model)). Never logged"},
    {"WIREWISE_JOB_KEY_FILE",
     TextRow{&Settings::jobKeyFile, TextKind::Path, nullptr, "(none)", "a file only its owner can read (chmod 600)",
             false, false, true},
     "the job key kept in a file (its content without surrounding white space), e.g. on a file system every node "
     "mounts, so that it is in no environment; it must be a regular file of this user's that nobody else may read "
     "or write (`chmod 600`). A file that others may read, or one missing or empty, is refused with a WARN naming "
     "it, and the process then joins no coordinator: its communicators keep their static table (it never falls "
     "back to a derived key). Wins over `WIREWISE_JOB_KEY`. The content is never logged"},
    {"WIREWISE_SYNC_TIMEOUT_MS", IntRow{&Settings::syncTimeoutMs, 100, 3600000},
     "a communicator waiting this long at a boundary for its verdict logs a WARN (coordinator, communicator, "
     "boundary, time waited), and again every interval; it keeps waiting"},
    {"WIREWISE_SYNC_GIVE_UP_MS", IntRow{&Settings::syncGiveUpMs, 1000, 86400000, true, true},
     "a communicator that has waited this long at one boundary for its verdict (its coordinator gone) gives up: "
     "its `getCollInfo` returns `ncclInternalError` from then on, so NCCL fails the collective (`ncclGroupEnd` "
     "returns the error and the framework raises) instead of hanging where PyTorch's watchdog cannot see it; the "
     "default, 5 minutes, is well inside PyTorch's 10-minute NCCL timeout. 0 waits for ever; values 1..999 are "
     "raised to 1000 with a WARN"},
    {"WIREWISE_JOIN_TIMEOUT_MS", IntRow{&Settings::joinTimeoutMs, 100, 3600000},
     "deterministic mode only: all members of a communicator must join within this time, else its verdict is "
     "observe-only (in production mode nobody waits for a join: the schedule starts once all have joined)"},
    {"WIREWISE_POLICY", EnumRow<PolicyKind>{&Settings::policy, kPolicies},
     "the coordinator's policy (needs `WIREWISE_SYNC`): `adaptive` (the default) measures, detects changes and "
     "re-plans ([policy.md](policy.md)); `static` distributes its `WIREWISE_CONFIG` table"},
    {"WIREWISE_BOUNDARY_SPACING", IntRow{&Settings::boundarySpacing, 8, 1 << 20, true},
     "collectives between boundaries; `0`: from observed collective rates (about 100 ms of a communicator's "
     "traffic, never under 8; 32 in deterministic mode)"},
    {"WIREWISE_PROBE_SPACING", IntRow{&Settings::probeSpacing, 8, 1 << 20},
     "adaptive policy: the shortest interval (collectives) that carries a probe; longer when the probed size is "
     "rare, shorter (down to 4) when fewer collectives hold 2 ms of traffic"},
    {"WIREWISE_EXPLORE_SHARE", RealRow{&Settings::exploreShare, 0, 0.2},
     "adaptive policy: re-probing stops while measured exploration exceeds this share of the communicator's "
     "measured time"},
    {"WIREWISE_SWITCH_GAIN", RealRow{&Settings::switchGain, 0, 0.5},
     "adaptive policy: a candidate replaces the incumbent only when measured this much faster (hysteresis)"},
    {"WIREWISE_DETECT_DRIFT", RealRow{&Settings::detectDrift, 0.001, 0.5},
     "adaptive policy: CUSUM drift k on the log time ratio; smaller changes are ignored"},
    {"WIREWISE_DETECT_THRESHOLD", RealRow{&Settings::detectThreshold, 0.01, 5},
     "adaptive policy: CUSUM alarm threshold h; raise it to trade detection speed for fewer false alarms"},
    {"WIREWISE_NET_STREAMS", IntRow{&Settings::netStreams, 1, 16},
     "net face ([net-plugin.md](net-plugin.md)): TCP connections per rail in every send/receive connection",
     SettingGroup::Net},
    {"WIREWISE_NET_CHUNK_KB", IntRow{&Settings::netChunkKb, 4, 1 << 20},
     "net face: messages larger than this many KiB are striped across rails in chunks of this size",
     SettingGroup::Net},
    {"WIREWISE_NET_RAIL_TIMEOUT_MS", IntRow{&Settings::netRailTimeoutMs, 200, 600000},
     "net face: a stream with bytes unacknowledged for this long while the peer's window is open is dead, and its "
     "chunks are resent on the other rails; a receiver's TCP keepalive idle time is this, rounded to seconds (at "
     "least 1 s). Below TCP's 200 ms minimum retransmission timeout one lost segment would kill a stream",
     SettingGroup::Net},
    {"WIREWISE_NET_ENGINE", EnumRow<bool>{&Settings::netEngine, kSwitch},
     "net face: the progress thread that drives connections while NCCL's proxy thread is busy elsewhere; `off` "
     "leaves all progress to the proxy thread, for a box with very few cores ([net.md](net.md#progress))",
     SettingGroup::Net},
    {"WIREWISE_NET_HEDGE", IntRow{&Settings::netHedge, 0, 100},
     "net face: copy the chunks queued on a rail that slowed down to the other rails when it would take this many "
     "times longer to deliver them (4 is what the tests use); 0 turns hedging off "
     "([net-plugin.md](net-plugin.md#faults-a-rail-that-slows-down-hedging))",
     SettingGroup::Net},
    {"WIREWISE_NET_QUEUE_MS", IntRow{&Settings::netQueueMs, 1, 1000},
     "net face: the scheduler keeps at most this many milliseconds of a rail's measured rate queued on it; smaller "
     "re-balances faster after a rail slows, larger keeps more bytes in flight per rail "
     "([net-plugin.md](net-plugin.md#adaptive-rail-weights))",
     SettingGroup::Net},
    {"WIREWISE_NET_IFNAMES",
     TextRow{&Settings::netIfnames, TextKind::Text, nullptr, "(`NCCL_SOCKET_IFNAME`)", "`[^][=]name[,name...]`"},
     "net face: the interfaces used as rails, in `NCCL_SOCKET_IFNAME`'s conventions (comma-separated name "
     "prefixes, `^` excludes, `=` exact); unset, NCCL's default order "
     "([net-plugin.md](net-plugin.md#devices-and-interface-selection))",
     SettingGroup::Net},
    {"WIREWISE_COLLECT_MS", IntRow{&Settings::collectMs, 100, 600000, true},
     "link collectors (IB/RoCE, netdev, TCP, NVML): sampling period in milliseconds, on the runtime's sampler "
     "thread; `0` turns them off. State changes are logged as `link_health` events at once, a full snapshot every "
     "`WIREWISE_SUMMARY_MS`"},
    {"WIREWISE_CUPTI", EnumRow<bool>{&Settings::cupti, kSwitch},
     "CUPTI kernel timing ([telemetry.md](telemetry.md)); off by default because CUPTI admits one client per "
     "process (a user's Nsight or Kineto would lose it)"},
    {"WIREWISE_NET_PATHS", EnumRow<bool>{&Settings::netPaths, kSwitch},
     "network-path telemetry ([telemetry.md](telemetry.md#profiler-events)): asks NCCL for ProxyOp/ProxyStep "
     "profiler events and logs per (channel, peer, direction) bytes, rates and wait states as `net_paths`; off by "
     "default because it adds about 5 callbacks per network transfer on NCCL's proxy thread"},
    {"WIREWISE_PROFILER_CHAIN",
     TextRow{&Settings::profilerChain, TextKind::Text, nullptr, "(off)",
             "a name (`libnccl-profiler-NAME.so`), a library file name or a path, or 'none'", false, true},
     "a second profiler plugin, opened as NCCL opens `NCCL_PROFILER_PLUGIN`, to which wirewise forwards every "
     "event it asks for, with its own handles: NCCL loads only one profiler, so this keeps NCCL Inspector or "
     "another profiler beside wirewise ([telemetry.md](telemetry.md#chaining-a-second-profiler)). It must export "
     "the profiler version NCCL uses with wirewise; one that cannot be opened, has another version or fails its "
     "init is one WARN and wirewise goes on alone"},
    {"WIREWISE_WIRING",
     TextRow{&Settings::wiring, TextKind::Path, nullptr, "(none)", "a file; %h expands to the host name", true},
     "wiring map written by `wirewise probe` ([wiring.md](wiring.md)) for this host: its GPU pairs join the "
     "link-health model (in `link_health` events) and flagged pairs travel to the coordinator as degraded links "
     "from the first boundary report, so the policy names them and is already suspicious. A map whose `host` is "
     "not this host is ignored with a WARN (use `%h` for one file per host); an unreadable map is a WARN and no "
     "prior"},
    {"WIREWISE_PROMETHEUS_DIR",
     TextRow{&Settings::prometheusDir, TextKind::Path, nullptr, "(off)", "a directory; %h, %p, %r, %j, %u expand", true,
             true},
     "Prometheus metrics as a node_exporter textfile ([prometheus.md](prometheus.md)): one `wirewise-<host>-<pid>.prom` "
     "file per process in this directory, rewritten (by rename) every `WIREWISE_SUMMARY_MS` and at exit. Missing "
     "directories are created 0700; the file is readable by all (the textfile collector runs as another user)"},
    {"WIREWISE_PROMETHEUS_PORT", IntRow{&Settings::prometheusPort, 1024, 65535, true},
     "Prometheus metrics over HTTP ([prometheus.md](prometheus.md)): each process serves `GET /metrics` on this port "
     "plus its local rank (`LOCAL_RANK`, `SLURM_LOCALID`, `OMPI_COMM_WORLD_LOCAL_RANK`), on every address; `0` turns "
     "it off. A port in use is one WARN and no endpoint"},
    {"WIREWISE_SYSFS_ROOT", TextRow{&Settings::sysfsRoot, TextKind::Path, "/sys", nullptr, "a directory"},
     "where the link collectors read sysfs (containers that mount the host's sysfs elsewhere; tests)"},
};

template <class T>
const char* nameOf(std::span<const EnumValue<T>> values, T v) {
  for (const auto& e : values)
    if (e.value == v) return e.name;
  return "?";
}

template <class T>
std::string listed(std::span<const EnumValue<T>> values) {
  std::string out;
  for (const auto& e : values) {
    if (!e.listed) continue;
    if (!out.empty()) out += ", ";
    out += e.name;
  }
  return out;
}

std::string realText(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%g", v);
  return buf;
}

std::string rangeText(const IntRow& r) {
  std::string range = std::to_string(r.lo) + " .. " + std::to_string(r.hi);
  return r.zeroMeansOff ? "0, or " + range : range;
}

// The first of `names` the launcher set (non-empty), with the characters a file name cannot hold replaced.
std::string launcherValue(const EnvSource& env, std::initializer_list<const char*> names, const char* none) {
  for (const char* name : names) {
    const char* v = env(name);
    if (v == nullptr || *v == '\0' || (std::string_view(name) == "TORCHELASTIC_RUN_ID" && std::string_view(v) == "none"))
      continue;
    std::string out(v);
    for (char& c : out)
      if (c == '/' || static_cast<unsigned char>(c) < 0x20) c = '_';
    return out;
  }
  return none;
}

// %h, %p, %u, %r, %j, %% and the one shell-style default the log's default path uses.
}  // namespace

std::string launcherRank(const EnvSource& env) {
  return launcherValue(env, {"RANK", "SLURM_PROCID", "OMPI_COMM_WORLD_RANK", "PMIX_RANK", "PMI_RANK"}, "norank");
}

// torchrun's default run id "none" names no job (every job that does not set one has it): skipped.
std::string launcherJobId(const EnvSource& env) {
  return launcherValue(env, {"TORCHELASTIC_RUN_ID", "SLURM_JOB_ID", "OMPI_MCA_ess_base_jobid", "PMIX_NAMESPACE"},
                       "nojob");
}

std::string expandSettingPath(std::string path, const EnvSource& env, const std::string& host, long pid) {
  static constexpr std::string_view kTmp = "${TMPDIR:-/tmp}";
  if (size_t at = path.find(kTmp); at != std::string::npos) {
    const char* tmp = env("TMPDIR");
    path.replace(at, kTmp.size(), tmp && *tmp ? tmp : "/tmp");
  }
  std::string out;
  for (size_t i = 0; i < path.size(); ++i) {
    if (path[i] == '%' && i + 1 < path.size()) {
      char c = path[i + 1];
      if (c == 'h') { out += host; ++i; continue; }
      if (c == 'p') { out += std::to_string(pid); ++i; continue; }
      if (c == 'u') { out += std::to_string(static_cast<unsigned long>(::geteuid())); ++i; continue; }
      if (c == 'r') { out += launcherRank(env); ++i; continue; }
      if (c == 'j') { out += launcherJobId(env); ++i; continue; }
      if (c == '%') { out += '%'; ++i; continue; }
    }
    out += path[i];
  }
  return out;
}

namespace {

std::string lower(std::string_view v) {
  std::string out(v);
  for (char& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

// Reads one row from the environment into s. A problem leaves the default in place and says why.
class RowReader {
 public:
  RowReader(const SettingSpec& spec, const char* raw, Settings* s, const EnvSource& env, const std::string& host,
            long pid, std::vector<SettingProblem>* problems)
      : spec_(spec), raw_(raw), s_(s), env_(env), host_(host), pid_(pid), problems_(problems) {}

  void operator()(const IntRow& r) {
    if (unset()) return;
    errno = 0;
    char* end = nullptr;
    long long x = std::strtoll(raw_, &end, 10);
    while (end && (*end == ' ' || *end == '\t')) ++end;
    const bool number = errno == 0 && end != raw_ && *end == '\0';
    if (number && r.zeroMeansOff && x == 0) {
      s_->*r.member = 0;
    } else if (number && x >= r.lo && x <= r.hi) {
      s_->*r.member = x;
    } else if (number && r.raiseToLo && x > 0 && x < r.lo) {
      s_->*r.member = r.lo;
      say(std::string(spec_.name) + "=" + raw_ + " is below " + std::to_string(r.lo) + ", too short to be safe; using " +
          std::to_string(r.lo) + (r.zeroMeansOff ? " (0 turns it off)" : ""));
    } else {
      ignored("range is " + rangeText(r), std::to_string(s_->*r.member));
    }
  }

  void operator()(const RealRow& r) {
    if (unset()) return;
    errno = 0;
    char* end = nullptr;
    double x = std::strtod(raw_, &end);
    while (end && (*end == ' ' || *end == '\t')) ++end;
    if (errno == 0 && end != raw_ && *end == '\0' && x >= r.lo && x <= r.hi)
      s_->*r.member = x;
    else
      ignored("range is " + realText(r.lo) + " .. " + realText(r.hi), realText(s_->*r.member));
  }

  template <class T>
  void operator()(const EnumRow<T>& r) {
    if (unset()) return;
    const std::string v = lower(raw_);
    for (const auto& e : r.values)
      if (v == e.name) {
        s_->*r.member = e.value;
        return;
      }
    ignored("values are " + listed(r.values), nameOf(r.values, s_->*r.member));
  }

  void operator()(const TextRow& r) {
    std::string v;
    if (raw_ != nullptr && *raw_ != '\0') {
      v = raw_;
    } else {
      if (raw_ != nullptr && r.emptyWarns)
        say(std::string(spec_.name) + " is set but empty: set " + r.accepted + "; using the default " +
            (r.fallback ? r.fallback : r.shownDefault));
      if (r.fallback == nullptr) return;
      v = r.fallback;
    }
    if (r.noneDisables && (v == "none" || v == "off")) {
      s_->*r.member = "";
      return;
    }
    s_->*r.member = r.expand ? expandSettingPath(v, env_, host_, pid_) : v;
  }

  void operator()(const SecretRow& r) {
    if (!unset()) (s_->*r.member).value = raw_;
  }

 private:
  bool unset() const { return raw_ == nullptr || *raw_ == '\0'; }
  void say(std::string m) { problems_->push_back({&spec_, std::move(m)}); }
  void ignored(const std::string& accepted, const std::string& fallback) {
    say("ignoring " + std::string(spec_.name) + "=\"" + raw_ + "\": accepted " + accepted + "; using the default " +
        fallback);
  }

  const SettingSpec& spec_;
  const char* raw_;
  Settings* s_;
  const EnvSource& env_;
  const std::string& host_;
  long pid_;
  std::vector<SettingProblem>* problems_;
};

struct TypeWord {
  std::string operator()(const IntRow&) const { return "int"; }
  std::string operator()(const RealRow&) const { return "real"; }
  std::string operator()(const TextRow& r) const { return r.kind == TextKind::Path ? "path" : "text"; }
  std::string operator()(const SecretRow&) const { return "text"; }
  template <class T>
  std::string operator()(const EnumRow<T>&) const { return "enum"; }
};

struct AcceptedText {
  std::string operator()(const IntRow& r) const { return rangeText(r); }
  std::string operator()(const RealRow& r) const { return realText(r.lo) + " .. " + realText(r.hi); }
  std::string operator()(const TextRow& r) const { return r.accepted; }
  std::string operator()(const SecretRow& r) const { return r.accepted; }
  template <class T>
  std::string operator()(const EnumRow<T>& r) const { return listed(r.values); }
};

// A member's value as text: in force (the echo) or as documented (the default of a Settings{}).
struct ValueText {
  const Settings& s;
  bool inForce;
  std::string operator()(const IntRow& r) const { return std::to_string(s.*r.member); }
  // The echo prints reals as it always has (std::to_string: "0.015000"); the docs as a reader writes them.
  std::string operator()(const RealRow& r) const { return inForce ? std::to_string(s.*r.member) : realText(s.*r.member); }
  std::string operator()(const TextRow& r) const {
    if (inForce) return s.*r.member;
    return r.fallback ? r.fallback : r.shownDefault;
  }
  std::string operator()(const SecretRow& r) const {
    if (inForce) return (s.*r.member).set() ? "(set)" : "(derived)";
    return r.shownDefault;
  }
  template <class T>
  std::string operator()(const EnumRow<T>& r) const { return nameOf(r.values, s.*r.member); }
};

// The Markdown table cell: pipes would end the cell.
std::string cell(std::string_view text) {
  std::string out;
  for (char c : text) {
    if (c == '|') out += '\\';
    out += c;
  }
  return out;
}

}  // namespace

std::span<const SettingSpec> settingSpecs() { return kSpecs; }

std::string_view enumName(Mode m) { return nameOf<Mode>(kModes, m); }
std::string_view enumName(SyncMode m) { return nameOf<SyncMode>(kSyncModes, m); }
std::string_view enumName(PolicyKind p) { return nameOf<PolicyKind>(kPolicies, p); }

std::string settingType(const SettingSpec& s) { return std::visit(TypeWord{}, s.row); }

std::string settingDefault(const SettingSpec& s) {
  const Settings d;
  return std::visit(ValueText{d, false}, s.row);
}

std::string settingAccepted(const SettingSpec& s) { return std::visit(AcceptedText{}, s.row); }

std::string settingValue(const SettingSpec& spec, const Settings& s) { return std::visit(ValueText{s, true}, spec.row); }

nlohmann::json settingsEcho(const Settings& s) {
  nlohmann::json out = nlohmann::json::object();
  for (const SettingSpec& spec : kSpecs) out[spec.name] = settingValue(spec, s);
  return out;
}

EnvSource processEnv() {
  return [](const char* name) -> const char* { return std::getenv(name); };
}

Settings readSettings(const EnvSource& env, const std::string& host, long pid, std::vector<SettingProblem>* problems) {
  Settings s;
  for (const SettingSpec& spec : kSpecs) std::visit(RowReader(spec, env(spec.name), &s, env, host, pid, problems), spec.row);
  return s;
}

Settings readSettings(const EnvSource& env, const std::string& host, long pid, std::vector<std::string>* warnings) {
  std::vector<SettingProblem> problems;
  Settings s = readSettings(env, host, pid, &problems);
  for (auto& p : problems) warnings->push_back(std::move(p.message));
  return s;
}

std::string plainDoc(std::string_view md) {
  std::string out;
  for (size_t i = 0; i < md.size(); ++i) {
    char c = md[i];
    if (c == '`') continue;
    if (c == '[') {
      // [text](target) -> text
      size_t close = md.find("](", i);
      size_t end = close == std::string_view::npos ? close : md.find(')', close);
      if (end != std::string_view::npos) {
        out += md.substr(i + 1, close - i - 1);
        i = end;
        continue;
      }
    }
    out += c;
  }
  return out;
}

std::string settingsMarkdownTable() {
  std::string out = "| variable | type | default | accepted | meaning |\n|---|---|---|---|---|\n";
  for (const SettingSpec& s : kSpecs) {
    const bool literal = !std::holds_alternative<TextRow>(s.row) && !std::holds_alternative<SecretRow>(s.row);
    const std::string def = settingDefault(s);
    const bool shown = std::holds_alternative<TextRow>(s.row) && std::get<TextRow>(s.row).fallback != nullptr;
    out += "| `" + std::string(s.name) + "` | " + settingType(s) + " | " +
           cell(literal || shown ? "`" + def + "`" : def) + " | " + cell(settingAccepted(s)) + " | " + cell(s.doc) +
           " |\n";
  }
  return out;
}

}  // namespace wirewise
