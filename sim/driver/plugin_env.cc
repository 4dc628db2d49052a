#include "sim/driver/plugin_env.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <stdexcept>

#include "common/settings.h"

namespace wirewise::sim {
namespace {

std::optional<std::string> envValue(const char* name) {
  const char* v = std::getenv(name);
  if (v == nullptr || *v == '\0') return std::nullopt;  // the plugin treats empty as unset too
  return std::string(v);
}

EnvChoice choose(const char* name, const std::optional<std::string>& option, const char* fallback) {
  if (option && !option->empty()) return {*option, "option"};
  if (auto v = envValue(name)) return {*v, "environment"};
  return {fallback, "driver default"};
}

// A loopback port nobody listens on now. Every run needs its own coordinator: the plugin's default
// rendezvous (a port derived from the user) would make concurrent runs (ctest -j) join one coordinator,
// where their communicators, named alike, would mix.
int freeLoopbackPort() {
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  if (fd < 0) return 0;
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  a.sin_port = 0;
  socklen_t len = sizeof a;
  int port = 0;
  if (::bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0 &&
      ::getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len) == 0)
    port = ntohs(a.sin_port);
  ::close(fd);
  return port;
}

// The plugin's own expansion of the log path (%h, %p, %%), so that the driver reads the very file the
// plugin writes.
std::string expandLogPath(const std::string& path) {
  char host[256] = {};
  if (::gethostname(host, sizeof host - 1) != 0) std::snprintf(host, sizeof host, "unknown-host");
  return expandSettingPath(path, processEnv(), host, static_cast<long>(::getpid()));
}

// The variables the driver sets for the plugin, by the settings table's names.
const char* const kLog = settingName(&Settings::logPath);
const char* const kSync = settingName(&Settings::sync);
const char* const kPolicy = settingName(&Settings::policy);
const char* const kCollectMs = settingName(&Settings::collectMs);
const char* const kCoordinator = settingName(&Settings::coordinator);
const char* const kJobKey = settingName(&Settings::jobKey);

// An empty file "<TMPDIR or /tmp>/<stem>-XXXXXX.jsonl", created here.
std::string temporaryFile(const std::string& stem) {
  const char* dir = std::getenv("TMPDIR");
  std::string tmpl = std::string(dir != nullptr && *dir != '\0' ? dir : "/tmp") + "/" + stem + "-XXXXXX.jsonl";
  const int fd = ::mkstemps(tmpl.data(), 6);
  if (fd < 0) throw std::runtime_error("cannot create a temporary adaptation log in " + tmpl);
  ::close(fd);
  return tmpl;
}

}  // namespace

PluginEnv::PluginEnv(const std::string& logPath, const std::optional<std::string>& sync,
                     const std::optional<std::string>& policy, int processes) {
  if (logPath.empty() || logPath == "none" || logPath == "off") {
    logPath_ = temporaryFile("wirewise-simulate");
    temporary_ = true;
  } else {
    logPath_ = expandLogPath(logPath);
    struct stat st {};
    if (::stat(logPath_.c_str(), &st) == 0) logStart_ = static_cast<uint64_t>(st.st_size);
  }
  try {
    for (int p = 1; p < processes; ++p)
      processLogs_.push_back(temporaryFile("wirewise-simulate-p" + std::to_string(p)));
  } catch (...) {
    for (const std::string& f : processLogs_) std::remove(f.c_str());
    if (temporary_) std::remove(logPath_.c_str());
    throw;
  }
  sync_ = choose(kSync, sync, kDefaultSync);
  policy_ = choose(kPolicy, policy, kDefaultPolicy);
  set(kLog, logPath_);
  set(kSync, sync_.value);
  set(kPolicy, policy_.value);
  // The simulated cluster has no link collectors: this machine's own links must not pose as its evidence.
  if (!envValue(kCollectMs)) set(kCollectMs, "0");
  if (sync_.value != "off" && !envValue(kCoordinator)) {
    if (const int port = freeLoopbackPort(); port > 0) {
      set(kCoordinator, "127.0.0.1:" + std::to_string(port));
      // Should another process take the port first, a key of our own makes its coordinator refuse us
      // (observe-only) instead of mixing the runs.
      if (!envValue(kJobKey))
        set(kJobKey, "wirewise-simulate:" + std::to_string(::getpid()) + ":" + std::to_string(port));
    }
  }
}

PluginEnv::~PluginEnv() {
  for (auto it = saved_.rbegin(); it != saved_.rend(); ++it) {
    if (it->second) ::setenv(it->first.c_str(), it->second->c_str(), 1);
    else ::unsetenv(it->first.c_str());
  }
  if (temporary_) std::remove(logPath_.c_str());
  for (const std::string& f : processLogs_) std::remove(f.c_str());
}

void PluginEnv::useProcessLog(int p) const {
  if (p >= 1 && p <= static_cast<int>(processLogs_.size()))
    ::setenv(kLog, processLogs_[static_cast<size_t>(p) - 1].c_str(), 1);
}

void PluginEnv::mergeProcessLogs() const {
  if (processLogs_.empty()) return;
  std::ofstream out(logPath_, std::ios::binary | std::ios::app);
  for (const std::string& f : processLogs_) {
    std::ifstream in(f, std::ios::binary);
    if (!in) throw std::runtime_error("cannot read the adaptation log of a simulator process: " + f);
    if (in.peek() != std::ifstream::traits_type::eof()) out << in.rdbuf();
  }
  out.flush();
  if (!out) throw std::runtime_error("cannot append the simulator processes' adaptation logs to " + logPath_);
}

void PluginEnv::set(const char* name, const std::string& value) {
  const char* old = std::getenv(name);
  saved_.emplace_back(name, old != nullptr ? std::optional<std::string>(old) : std::nullopt);
  ::setenv(name, value.c_str(), 1);
}

}  // namespace wirewise::sim
