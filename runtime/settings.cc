#include "runtime/settings.h"

#include <cctype>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <string_view>

namespace wirewise {
namespace {

constexpr const char* kDefaultLog = "${TMPDIR:-/tmp}/wirewise/%h-%p.jsonl";

// The registry. Every field of Settings appears exactly once here; docs/settings.md mirrors this table
// (a test checks that every name is documented there).
constexpr SettingDoc kDocs[] = {
    {"WIREWISE_MODE", "enum", "apply", "apply, observe, off",
     "apply: use the table in force; observe: measure and log only; off: leave NCCL entirely alone"},
    {"WIREWISE_CONFIG", "path", "(none)", "a readable file",
     "static decision table: wirewise JSON (docs/config-format.md) or NCCL's example nccl_tuner.conf CSV"},
    {"WIREWISE_LOG", "path", kDefaultLog, "a writable path, or 'none'",
     "adaptation log (JSON lines); %h expands to the host name, %p to the pid"},
    {"WIREWISE_SUMMARY_MS", "int", "10000", "100 .. 3600000",
     "interval between observation summaries in the adaptation log, in milliseconds"},
    {"WIREWISE_EVENT_POOL", "int", "1024", "16 .. 1048576",
     "in-flight collectives tracked per communicator; beyond it profiler events are dropped and counted"},
    {"WIREWISE_LOG_QUEUE", "int", "8192", "16 .. 1048576",
     "adaptation-log lines held in memory while the writer catches up; beyond it lines are dropped and counted"},
    {"WIREWISE_SYNC", "enum", "off", "off, on, deterministic",
     "agreement across ranks through the coordinator (docs/control-plane.md); deterministic: the coordinator "
     "waits for every member's report (simulator)"},
    {"WIREWISE_COORDINATOR", "text", "(rendezvous)", "host:port",
     "the coordinator's address; else MASTER_ADDR with MASTER_PORT+17, SLURM, Open MPI, loopback"},
    {"WIREWISE_JOB_KEY", "text", "(derived from the launcher's job id)", "any non-empty text",
     "shared secret that authenticates control-plane messages; set it where other users can reach the port"},
    {"WIREWISE_SYNC_TIMEOUT_MS", "int", "30000", "100 .. 3600000",
     "a communicator waiting this long at a boundary for its verdict logs a WARN (and again every interval)"},
    {"WIREWISE_SYNC_GIVE_UP_MS", "int", "0", "0 (never), 1000 .. 86400000",
     "a communicator that has waited this long at one boundary stops waiting: its getCollInfo returns "
     "ncclInternalError from then on, so NCCL fails the collective instead of hanging (docs/control-plane.md)"},
    {"WIREWISE_JOIN_TIMEOUT_MS", "int", "10000", "100 .. 3600000",
     "members of a communicator must all join within this time, else it is observe-only"},
    {"WIREWISE_POLICY", "enum", "static", "static, adaptive, random-test",
     "the coordinator's policy (needs WIREWISE_SYNC): static distributes WIREWISE_CONFIG; adaptive measures, "
     "detects changes and re-plans (docs/policy.md); random-test changes tables at every boundary (tests only)"},
    {"WIREWISE_BOUNDARY_SPACING", "int", "0", "0, or 8 .. 1048576",
     "collectives between boundaries; 0: from observed rates (about 100 ms of a comm's traffic; 32 in "
     "deterministic mode)"},
    {"WIREWISE_PROBE_SPACING", "int", "8", "8 .. 1048576",
     "adaptive policy: the shortest interval (collectives) that carries a probe; longer when the probed size "
     "is rare"},
    {"WIREWISE_EXPLORE_SHARE", "real", "0.015", "0 .. 0.2",
     "adaptive policy: re-probing stops while measured exploration exceeds this share of the comm's time"},
    {"WIREWISE_SWITCH_GAIN", "real", "0.03", "0 .. 0.5",
     "adaptive policy: a candidate replaces the incumbent only when measured this much faster (hysteresis)"},
    {"WIREWISE_DETECT_DRIFT", "real", "0.03", "0.001 .. 0.5",
     "adaptive policy: CUSUM drift k on the log time ratio; smaller changes are ignored"},
    {"WIREWISE_DETECT_THRESHOLD", "real", "0.12", "0.01 .. 5",
     "adaptive policy: CUSUM alarm threshold h; raise it to trade detection speed for fewer false alarms"},
    {"WIREWISE_NET_STREAMS", "int", "1", "1 .. 16",
     "net face: TCP connections per rail in every send/receive connection"},
    {"WIREWISE_NET_CHUNK_KB", "int", "256", "4 .. 1048576",
     "net face: messages larger than this many KiB are striped across rails in chunks of this size"},
    {"WIREWISE_NET_IFNAMES", "text", "(NCCL_SOCKET_IFNAME)", "[^][=]name[,name...]",
     "net face: interfaces used as rails, NCCL_SOCKET_IFNAME's conventions (prefixes; ^ excludes, = exact)"},
    {"WIREWISE_NET_RAIL_TIMEOUT_MS", "int", "2000", "200 .. 600000",
     "net face: a stream with bytes unacknowledged this long while the peer's window is open is dead; its "
     "chunks are resent on the other rails"},
    {"WIREWISE_NET_QUEUE_MS", "int", "30", "1 .. 1000",
     "net face: bytes queued per rail, at most this long at the rail's measured rate"},
    {"WIREWISE_NET_ENGINE", "enum", "on", "on, off",
     "net face: the progress thread that drives connections while NCCL's proxy thread is busy elsewhere; "
     "off leaves all progress to the proxy thread (a box with very few cores)"},
    {"WIREWISE_NET_HEDGE", "int", "0", "0 .. 100",
     "net face: copy a slowed rail's queued chunks to the other rails when it would take this many times "
     "longer to deliver them; 0 turns hedging off"},
    {"WIREWISE_COLLECT_MS", "int", "1000", "0, or 100 .. 600000",
     "link collectors (IB/RoCE, netdev, TCP, NVML): sampling period in milliseconds; 0 turns them off"},
    {"WIREWISE_CUPTI", "enum", "off", "off, on",
     "CUPTI kernel timing (docs/telemetry.md): off by default because CUPTI admits one client per process"},
    {"WIREWISE_NET_PATHS", "enum", "off", "off, on",
     "network-path telemetry from NCCL's ProxyOp/ProxyStep profiler events (docs/telemetry.md): off by default, "
     "it adds ~5 callbacks per network transfer on NCCL's proxy thread"},
    {"WIREWISE_WIRING", "path", "(none)", "a file; %h expands to the host name",
     "wiring map from `wirewise probe` (docs/wiring.md): its pairs seed the link-health model, flagged ones "
     "are named to the policy as degraded links from the first boundary"},
    {"WIREWISE_SYSFS_ROOT", "path", "/sys", "a directory",
     "where the link collectors read sysfs (containers that mount the host's sysfs elsewhere; tests)"},
};

std::string describe(const SettingDoc& d) { return std::string(d.name) + " (" + d.range + ")"; }

const SettingDoc& docOf(std::string_view name) {
  for (const auto& d : kDocs)
    if (name == d.name) return d;
  return kDocs[0];  // unreachable: names below are the registry's own
}

// on/off (or 1/0); anything else is one WARN and the default already in *out.
void readSwitch(const EnvSource& env, const char* name, bool* out, std::vector<std::string>* warnings) {
  const char* c = env(name);
  if (c == nullptr || *c == '\0') return;
  const std::string v(c);
  if (v == "on" || v == "1") {
    *out = true;
  } else if (v == "off" || v == "0") {
    *out = false;
  } else {
    warnings->push_back("ignoring " + std::string(name) + "=\"" + v + "\": accepted values are " +
                        describe(docOf(name)) + "; using the default " + (*out ? "on" : "off"));
  }
}

void readInt(const EnvSource& env, const char* name, int64_t lo, int64_t hi, int64_t* out,
             std::vector<std::string>* warnings) {
  const char* v = env(name);
  if (v == nullptr || *v == '\0') return;
  errno = 0;
  char* end = nullptr;
  long long x = std::strtoll(v, &end, 10);
  while (end && (*end == ' ' || *end == '\t')) ++end;
  if (errno != 0 || end == v || *end != '\0' || x < lo || x > hi) {
    warnings->push_back("ignoring " + std::string(name) + "=\"" + v + "\": accepted range is " + docOf(name).range +
                        "; using the default " + docOf(name).fallback);
    return;
  }
  *out = x;
}

void readReal(const EnvSource& env, const char* name, double lo, double hi, double* out,
              std::vector<std::string>* warnings) {
  const char* v = env(name);
  if (v == nullptr || *v == '\0') return;
  errno = 0;
  char* end = nullptr;
  double x = std::strtod(v, &end);
  while (end && (*end == ' ' || *end == '\t')) ++end;
  if (errno != 0 || end == v || *end != '\0' || !(x >= lo && x <= hi)) {
    warnings->push_back("ignoring " + std::string(name) + "=\"" + v + "\": accepted range is " + docOf(name).range +
                        "; using the default " + docOf(name).fallback);
    return;
  }
  *out = x;
}

std::string expandLogPath(std::string path, const EnvSource& env, const std::string& host, long pid) {
  if (path == kDefaultLog) {
    const char* tmp = env("TMPDIR");
    path = std::string(tmp && *tmp ? tmp : "/tmp") + "/wirewise/%h-%p.jsonl";
  }
  std::string out;
  for (size_t i = 0; i < path.size(); ++i) {
    if (path[i] == '%' && i + 1 < path.size()) {
      char c = path[i + 1];
      if (c == 'h') { out += host; ++i; continue; }
      if (c == 'p') { out += std::to_string(pid); ++i; continue; }
      if (c == '%') { out += '%'; ++i; continue; }
    }
    out += path[i];
  }
  return out;
}

}  // namespace

EnvSource processEnv() {
  return [](const char* name) -> const char* { return std::getenv(name); };
}

std::span<const SettingDoc> settingDocs() { return kDocs; }

Settings readSettings(const EnvSource& env, const std::string& host, long pid, std::vector<std::string>* warnings) {
  Settings s;
  if (const char* m = env("WIREWISE_MODE"); m && *m) {
    std::string v(m);
    for (auto& c : v) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    if (v == "apply") s.mode = Mode::Apply;
    else if (v == "observe") s.mode = Mode::Observe;
    else if (v == "off") s.mode = Mode::Off;
    else
      warnings->push_back("ignoring WIREWISE_MODE=\"" + std::string(m) + "\": accepted values are " +
                          describe(docOf("WIREWISE_MODE")) + "; using the default apply");
  }
  if (const char* c = env("WIREWISE_CONFIG"); c && *c) s.config = c;

  std::string log = kDefaultLog;
  if (const char* l = env("WIREWISE_LOG"); l) {
    if (*l == '\0')
      warnings->push_back("WIREWISE_LOG is set but empty: set a path, or 'none' to disable; using the default " +
                          std::string(kDefaultLog));
    else
      log = l;
  }
  s.logPath = (log == "none" || log == "off") ? "" : expandLogPath(log, env, host, pid);

  readInt(env, "WIREWISE_SUMMARY_MS", 100, 3600000, &s.summaryMs, warnings);
  readInt(env, "WIREWISE_EVENT_POOL", 16, 1 << 20, &s.eventPool, warnings);
  readInt(env, "WIREWISE_LOG_QUEUE", 16, 1 << 20, &s.logQueue, warnings);

  if (const char* m = env("WIREWISE_SYNC"); m && *m) {
    std::string v(m);
    for (auto& c : v) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    if (v == "off") s.sync = SyncMode::Off;
    else if (v == "on") s.sync = SyncMode::On;
    else if (v == "deterministic") s.sync = SyncMode::Deterministic;
    else
      warnings->push_back("ignoring WIREWISE_SYNC=\"" + std::string(m) + "\": accepted values are " +
                          describe(docOf("WIREWISE_SYNC")) + "; using the default off");
  }
  if (const char* c = env("WIREWISE_COORDINATOR"); c && *c) s.coordinator = c;
  if (const char* k = env("WIREWISE_JOB_KEY"); k && *k) s.jobKeySet = true;
  readInt(env, "WIREWISE_SYNC_TIMEOUT_MS", 100, 3600000, &s.syncTimeoutMs, warnings);
  readInt(env, "WIREWISE_SYNC_GIVE_UP_MS", 0, 86400000, &s.syncGiveUpMs, warnings);
  if (s.syncGiveUpMs > 0 && s.syncGiveUpMs < 1000) {
    warnings->push_back("WIREWISE_SYNC_GIVE_UP_MS=" + std::to_string(s.syncGiveUpMs) +
                       " is below 1000 ms, shorter than an ordinary stall; using 1000 (0 = never give up)");
    s.syncGiveUpMs = 1000;
  }
  readInt(env, "WIREWISE_JOIN_TIMEOUT_MS", 100, 3600000, &s.joinTimeoutMs, warnings);
  readInt(env, "WIREWISE_BOUNDARY_SPACING", 0, 1 << 20, &s.boundarySpacing, warnings);
  readInt(env, "WIREWISE_NET_STREAMS", 1, 16, &s.netStreams, warnings);
  readInt(env, "WIREWISE_NET_CHUNK_KB", 4, 1 << 20, &s.netChunkKb, warnings);
  readInt(env, "WIREWISE_NET_RAIL_TIMEOUT_MS", 200, 600000, &s.netRailTimeoutMs, warnings);
  readInt(env, "WIREWISE_NET_QUEUE_MS", 1, 1000, &s.netQueueMs, warnings);
  readInt(env, "WIREWISE_NET_HEDGE", 0, 100, &s.netHedge, warnings);
  if (const char* v = env("WIREWISE_NET_IFNAMES"); v && *v) s.netIfnames = v;  // checked by the net face
  readInt(env, "WIREWISE_PROBE_SPACING", 8, 1 << 20, &s.probeSpacing, warnings);
  readInt(env, "WIREWISE_COLLECT_MS", 0, 600000, &s.collectMs, warnings);
  if (s.collectMs > 0 && s.collectMs < 100) {
    warnings->push_back("ignoring WIREWISE_COLLECT_MS=" + std::to_string(s.collectMs) +
                        ": accepted range is 0, or 100 .. 600000; using the default 1000");
    s.collectMs = 1000;
  }
  readSwitch(env, "WIREWISE_CUPTI", &s.cupti, warnings);
  readSwitch(env, "WIREWISE_NET_PATHS", &s.netPaths, warnings);
  readSwitch(env, "WIREWISE_NET_ENGINE", &s.netEngine, warnings);
  if (const char* r = env("WIREWISE_SYSFS_ROOT"); r && *r) s.sysfsRoot = r;
  if (const char* w = env("WIREWISE_WIRING"); w && *w) s.wiring = expandLogPath(w, env, host, pid);
  readReal(env, "WIREWISE_EXPLORE_SHARE", 0, 0.2, &s.exploreShare, warnings);
  readReal(env, "WIREWISE_SWITCH_GAIN", 0, 0.5, &s.switchGain, warnings);
  readReal(env, "WIREWISE_DETECT_DRIFT", 0.001, 0.5, &s.detectDrift, warnings);
  readReal(env, "WIREWISE_DETECT_THRESHOLD", 0.01, 5, &s.detectThreshold, warnings);
  if (s.boundarySpacing > 0 && s.boundarySpacing < 8) {
    warnings->push_back("ignoring WIREWISE_BOUNDARY_SPACING=" + std::to_string(s.boundarySpacing) +
                        ": accepted range is 0, or 8 .. 1048576; using the default 0");
    s.boundarySpacing = 0;
  }
  if (const char* p = env("WIREWISE_POLICY"); p && *p) {
    std::string v(p);
    if (v == "static" || v == "adaptive" || v == "random-test")
      s.policy = v;
    else
      warnings->push_back("ignoring WIREWISE_POLICY=\"" + v + "\": accepted values are " +
                          describe(docOf("WIREWISE_POLICY")) + "; using the default static");
  }
  return s;
}

}  // namespace wirewise
