// The one registry of WIREWISE_* settings: name, type, default, accepted range and documentation.
// Read once, when the runtime starts, through an injectable environment source (tests never setenv).
// A bad value never fails anything: it yields one warning naming the variable, the value and the
// accepted range, and the default is used.
#pragma once

#include <cstdint>
#include <functional>
#include <span>
#include <string>
#include <vector>

namespace wirewise {

enum class Mode : uint8_t {
  Apply,    // apply the table in force (today: the static WIREWISE_CONFIG table)
  Observe,  // measure and log, never change what NCCL runs
  Off,      // pass-through: no tables, no profiling beyond what NCCL asks
};

// Agreement across ranks (docs/control-plane.md). Off by default until an adaptive policy changes tables
// at run time: a static table is built identically by every rank from the shared file and needs none.
enum class SyncMode : uint8_t {
  Off,            // no control plane: the static table stays in force
  On,             // coordinator + boundaries; the coordinator decides on the reports it has after a short wait
  Deterministic,  // as On, but the coordinator waits for every member's report (the simulator's mode)
};

struct Settings {
  std::string config;            // WIREWISE_CONFIG
  std::string logPath;           // WIREWISE_LOG, after %h/%p expansion; "" = disabled
  Mode mode = Mode::Apply;       // WIREWISE_MODE
  int64_t summaryMs = 10000;     // WIREWISE_SUMMARY_MS
  int64_t eventPool = 1024;      // WIREWISE_EVENT_POOL
  int64_t logQueue = 8192;       // WIREWISE_LOG_QUEUE
  SyncMode sync = SyncMode::Off;   // WIREWISE_SYNC
  std::string coordinator;         // WIREWISE_COORDINATOR (read by control/rendezvous, kept for the log)
  bool jobKeySet = false;          // WIREWISE_JOB_KEY is set (its value is never stored here or logged)
  int64_t syncTimeoutMs = 30000;   // WIREWISE_SYNC_TIMEOUT_MS
  int64_t syncGiveUpMs = 0;        // WIREWISE_SYNC_GIVE_UP_MS; 0: wait for ever
  int64_t joinTimeoutMs = 10000;   // WIREWISE_JOIN_TIMEOUT_MS
  std::string policy = "static";   // WIREWISE_POLICY
  int64_t boundarySpacing = 0;     // WIREWISE_BOUNDARY_SPACING; 0: from observed rates
  int64_t probeSpacing = 8;        // WIREWISE_PROBE_SPACING
  double exploreShare = 0.015;     // WIREWISE_EXPLORE_SHARE
  double switchGain = 0.03;        // WIREWISE_SWITCH_GAIN
  double detectDrift = 0.03;       // WIREWISE_DETECT_DRIFT
  double detectThreshold = 0.12;   // WIREWISE_DETECT_THRESHOLD
  int64_t collectMs = 1000;        // WIREWISE_COLLECT_MS; 0: no link collectors
  bool cupti = false;              // WIREWISE_CUPTI
  bool netPaths = false;           // WIREWISE_NET_PATHS
  std::string sysfsRoot = "/sys";  // WIREWISE_SYSFS_ROOT
  std::string wiring;              // WIREWISE_WIRING, after %h/%p expansion; "" = no wiring prior
  int64_t netStreams = 1;          // WIREWISE_NET_STREAMS
  int64_t netChunkKb = 256;        // WIREWISE_NET_CHUNK_KB
  int64_t netRailTimeoutMs = 2000; // WIREWISE_NET_RAIL_TIMEOUT_MS
  int64_t netQueueMs = 30;         // WIREWISE_NET_QUEUE_MS
  int64_t netHedge = 0;            // WIREWISE_NET_HEDGE (0: off)
  bool netEngine = true;           // WIREWISE_NET_ENGINE
  std::string netIfnames;          // WIREWISE_NET_IFNAMES, raw; "" = NCCL_SOCKET_IFNAME's (net/devices.h parses)
};

// Returns the value of a variable or null. The default reads the process environment.
using EnvSource = std::function<const char*(const char*)>;
EnvSource processEnv();

struct SettingDoc {
  const char* name;
  const char* type;      // "path", "int", "enum"
  const char* fallback;  // the default, as text
  const char* range;     // accepted values, as text
  const char* doc;
};
std::span<const SettingDoc> settingDocs();

// host and pid are injected so that %h/%p expansion is testable.
Settings readSettings(const EnvSource& env, const std::string& host, long pid, std::vector<std::string>* warnings);

}  // namespace wirewise
