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

struct Settings {
  std::string config;            // WIREWISE_CONFIG
  std::string logPath;           // WIREWISE_LOG, after %h/%p expansion; "" = disabled
  Mode mode = Mode::Apply;       // WIREWISE_MODE
  int64_t summaryMs = 10000;     // WIREWISE_SUMMARY_MS
  int64_t eventPool = 1024;      // WIREWISE_EVENT_POOL
  int64_t logQueue = 8192;       // WIREWISE_LOG_QUEUE
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
