// The plugin's environment for one simulated run. The plugin reads its settings from the environment once,
// when its runtime starts, so the driver sets them before loading it and puts the previous values back after
// the run (several runs may share a process: tests, benchmarks). See docs/simulator.md.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace wirewise::sim {

inline constexpr const char* kDefaultSync = "deterministic";
inline constexpr const char* kDefaultPolicy = "adaptive";

// A value the driver hands the plugin, and where it came from: "option", "environment" or "driver default".
struct EnvChoice {
  std::string value;
  std::string from;
};

class PluginEnv {
 public:
  // logPath: the user's --log ("", "none" or "off": a temporary file, removed by the destructor; %h and %p
  // expand as the plugin expands them).
  // sync/policy: the --sync/--policy options; unset: the environment's value, else the driver's default.
  // processes > 1 (SimOptions::procs): processes 1.. each get a log file of their own (temporary, removed by
  // the destructor), because lines of several writers appending to one file through stdio can interleave
  // mid-line; mergeProcessLogs() appends them to logPath() once they are complete.
  // Throws std::runtime_error when no temporary log file can be created.
  PluginEnv(const std::string& logPath, const std::optional<std::string>& sync,
            const std::optional<std::string>& policy, int processes = 1);
  ~PluginEnv();
  PluginEnv(const PluginEnv&) = delete;
  PluginEnv& operator=(const PluginEnv&) = delete;

  const std::string& logPath() const { return logPath_; }
  bool temporaryLog() const { return temporary_; }
  // Size of the log file before the run: the run's own lines start there (the plugin appends).
  uint64_t logStart() const { return logStart_; }
  const EnvChoice& sync() const { return sync_; }
  const EnvChoice& policy() const { return policy_; }
  // In process p >= 1 (a forked child, which never restores anything): WIREWISE_LOG = its own file.
  void useProcessLog(int p) const;
  // In process 0, after every process's plugin has finalized: appends the files of processes 1.. to
  // logPath(), whole, in process order. Throws std::runtime_error when one cannot be read or appended.
  void mergeProcessLogs() const;

 private:
  void set(const char* name, const std::string& value);

  std::string logPath_;
  bool temporary_ = false;
  uint64_t logStart_ = 0;
  std::vector<std::string> processLogs_;  // index p - 1: process p's
  EnvChoice sync_, policy_;
  std::vector<std::pair<std::string, std::optional<std::string>>> saved_;  // name, value before the run
};

}  // namespace wirewise::sim
