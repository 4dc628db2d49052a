// The one home of the WIREWISE_* settings. Each setting is one row of one table (common/settings.cc):
// its variable name, the Settings member it fills, its accepted values and its documentation. Parsing, the
// WARN texts, `wirewise settings`, docs/settings.md (generated; a test fails when it is stale) and the
// plugin_start echo all come from that table; nothing else spells a variable's name — code that needs one
// asks settingName(&Settings::member).
//
// Settings are read once, when the runtime starts, through an injectable environment source (tests never
// setenv). A bad value never fails anything: it yields one warning naming the variable, the value and what
// is accepted, and the default is used.
#pragma once

#include <cstdint>
#include <functional>
#include <span>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include <nlohmann/json.hpp>

namespace wirewise {

enum class Mode : uint8_t {
  Apply,    // apply the table in force
  Observe,  // measure and log, never change what NCCL runs
  Off,      // pass-through: no tables, no profiling beyond what NCCL asks
};

// Agreement across ranks (docs/control-plane.md).
enum class SyncMode : uint8_t {
  Off,            // no control plane: the static table stays in force
  On,             // coordinator + boundaries; the coordinator decides on the reports it has after a short wait
  Deterministic,  // as On, but the coordinator waits for every member's report (the simulator's mode)
};

// The coordinator's policy (docs/policy.md). RandomTest is accepted but never listed: tests use it to
// change tables at every boundary.
enum class PolicyKind : uint8_t { Static, Adaptive, RandomTest };

// Defaults that components also start from when they are built without Settings (the policy's parameters,
// the transport's config, in tests and the simulator): defined here once, used by both.
namespace defaults {
inline constexpr double kExploreShare = 0.015;
inline constexpr double kSwitchGain = 0.03;
inline constexpr int64_t kProbeSpacing = 8;
inline constexpr double kDetectDrift = 0.03;
inline constexpr double kDetectThreshold = 0.12;
inline constexpr int64_t kNetStreams = 1;
inline constexpr int64_t kNetChunkKb = 256;
inline constexpr int64_t kNetRailTimeoutMs = 2000;
inline constexpr int64_t kNetQueueMs = 30;
inline constexpr int64_t kNetHedge = 0;
}  // namespace defaults

// A value that is used but never echoed or logged (the job key): the echo says only whether it is set.
struct Secret {
  std::string value;
  bool set() const { return !value.empty(); }
};

// Every member's default is here; every member's name, range and meaning is in the table.
struct Settings {
  Mode mode = Mode::Apply;
  std::string config;
  std::string logPath;  // after reading: the expanded path; "" = disabled
  int64_t summaryMs = 10000;
  int64_t eventPool = 1024;
  int64_t logQueue = 8192;
  int64_t logMaxMb = 64;  // 0: never rotate
  int64_t logKeep = 3;
  SyncMode sync = SyncMode::On;
  std::string coordinator;  // host:port as given; control/rendezvous parses it
  Secret jobKey;
  std::string jobKeyFile;  // "" = none; control/rendezvous reads it
  int64_t syncTimeoutMs = 30000;
  int64_t syncGiveUpMs = 300000;  // 0: wait for ever
  int64_t joinTimeoutMs = 10000;
  PolicyKind policy = PolicyKind::Adaptive;
  int64_t boundarySpacing = 0;  // 0: from observed rates
  int64_t probeSpacing = defaults::kProbeSpacing;
  double exploreShare = defaults::kExploreShare;
  double switchGain = defaults::kSwitchGain;
  double detectDrift = defaults::kDetectDrift;
  double detectThreshold = defaults::kDetectThreshold;
  int64_t netStreams = defaults::kNetStreams;
  int64_t netChunkKb = defaults::kNetChunkKb;
  int64_t netRailTimeoutMs = defaults::kNetRailTimeoutMs;
  bool netEngine = true;
  int64_t netHedge = defaults::kNetHedge;
  int64_t netQueueMs = defaults::kNetQueueMs;
  std::string netIfnames;  // raw; "" = NCCL_SOCKET_IFNAME's (net/devices.h parses it)
  int64_t collectMs = 1000;  // 0: no link collectors
  bool cupti = false;
  bool netPaths = false;
  std::string profilerChain;  // "" = no second profiler plugin
  std::string wiring;  // after reading: %h/%p expanded; "" = no wiring prior
  std::string sysfsRoot = "/sys";
  std::string prometheusDir;  // after reading: expanded; "" = no textfile output
  int64_t prometheusPort = 0;  // 0: no /metrics endpoint; else the base port, plus the local rank
};

// ---- The table's row types: one per kind of value -------------------------------------------------------

// An integer in lo..hi; with zeroMeansOff, 0 is accepted too. With raiseToLo, a value between 1 and lo-1
// is raised to lo (with a warning) instead of falling back to the default: used where the user's intent
// ("give up, soon") is clear and only the amount is unsafe.
struct IntRow {
  int64_t Settings::*member;
  int64_t lo, hi;
  bool zeroMeansOff = false;
  bool raiseToLo = false;
};

struct RealRow {
  double Settings::*member;
  double lo, hi;
};

template <class T>
struct EnumValue {
  const char* name;
  T value;
  bool listed = true;  // false: accepted but not offered (test-only values, aliases such as "1" for "on")
};

template <class T>
struct EnumRow {
  T Settings::*member;
  std::span<const EnumValue<T>> values;
};

enum class TextKind : uint8_t { Text, Path };
struct TextRow {
  std::string Settings::*member;
  TextKind kind;
  const char* fallback;      // the value when unset (before expansion); null: the member stays ""
  const char* shownDefault;  // what the docs print as the default when fallback is null ("(none)")
  const char* accepted;      // what the docs print as accepted
  bool expand = false;       // %h: host name, %p: pid, %u: user id, %%: a percent sign
  bool noneDisables = false; // "none" or "off" gives "" (a disabled output)
  bool emptyWarns = false;   // set but empty is a mistake worth a WARN, not the same as unset
};

struct SecretRow {
  Secret Settings::*member;
  const char* shownDefault;
  const char* accepted;
};

using SettingRow = std::variant<IntRow, RealRow, EnumRow<bool>, EnumRow<Mode>, EnumRow<SyncMode>,
                                EnumRow<PolicyKind>, TextRow, SecretRow>;

// Which component reports a setting's warnings: the net face is loaded on its own by NCCL's net loader
// and reports its settings itself; the runtime reports the rest.
enum class SettingGroup : uint8_t { Runtime, Net };

struct SettingSpec {
  const char* name;
  SettingRow row;
  const char* doc;  // Markdown: `code` and [links](file.md); `wirewise settings` strips the markup
  SettingGroup group = SettingGroup::Runtime;
};

// The whole table, in documentation order.
std::span<const SettingSpec> settingSpecs();

// The variable that fills a member ("WIREWISE_SYNC" for &Settings::sync); every name outside the table
// comes from here. Null for a member the table does not know (a test checks there is none).
template <class M>
const char* settingName(M Settings::*member) {
  for (const SettingSpec& s : settingSpecs()) {
    const char* found = std::visit(
        [&](const auto& row) -> const char* {
          if constexpr (std::is_same_v<decltype(row.member), M Settings::*>)
            return row.member == member ? s.name : nullptr;
          return nullptr;
        },
        s.row);
    if (found != nullptr) return found;
  }
  return nullptr;
}

// For documentation: the row's type word ("int", "real", "enum", "path", "text"), default and accepted
// values as text, exactly as `wirewise settings` and docs/settings.md print them.
std::string settingType(const SettingSpec& s);
std::string settingDefault(const SettingSpec& s);
std::string settingAccepted(const SettingSpec& s);

// The value of one setting in s as text (the plugin_start echo); a Secret prints as "(set)" or "(derived)".
std::string settingValue(const SettingSpec& spec, const Settings& s);
// Every setting's value: the "settings" object of the log's plugin_start event.
nlohmann::json settingsEcho(const Settings& s);

// The text form of an enum setting's value ("apply", "deterministic", "adaptive").
std::string_view enumName(Mode m);
std::string_view enumName(SyncMode m);
std::string_view enumName(PolicyKind p);

// Returns the value of a variable or null. The default reads the process environment.
using EnvSource = std::function<const char*(const char*)>;
EnvSource processEnv();

struct SettingProblem {
  const SettingSpec* spec;
  std::string message;  // "ignoring WIREWISE_X=\"v\": accepted ...; using the default ..."
};

// host and pid are injected so that %h/%p expansion is testable.
Settings readSettings(const EnvSource& env, const std::string& host, long pid, std::vector<SettingProblem>* problems);
Settings readSettings(const EnvSource& env, const std::string& host, long pid, std::vector<std::string>* warnings);

// A path setting's expansion: ${TMPDIR:-/tmp}, %h (host), %p (pid), %u (effective user id), %r (the launcher's
// global rank), %j (the launcher's job id), %% (a percent sign).
std::string expandSettingPath(std::string path, const EnvSource& env, const std::string& host, long pid);
// What %r and %j expand to: the first variable the launcher set (torchrun, srun, mpirun, PMIx), a '/' in it
// made '_'; "norank" and "nojob" when none is set.
std::string launcherRank(const EnvSource& env);
std::string launcherJobId(const EnvSource& env);

// docs/settings.md's generated table (Markdown), and `wirewise settings`'s plain-text doc of one setting.
std::string settingsMarkdownTable();
std::string plainDoc(std::string_view markdown);

}  // namespace wirewise
