// `wirewise doctor`: what users get wrong, checked on this host the way NCCL and the plugin would see it,
// before a job runs. Every check is a function of an injected environment and paths, so tests can play any
// host; the command (doctor_cmd.cc) passes the real ones.
#pragma once

#include <string>
#include <vector>

#include "common/settings.h"

namespace wirewise::tools {

enum class Level { kOk, kInfo, kWarn, kError };
const char* levelName(Level l);  // "ok", "info", "warn", "error"

struct Finding {
  std::string check;  // a stable id: tuner_plugin, profiler_plugin, net_plugin, nccl_version, ...
  Level level = Level::kOk;
  std::string text;   // what was found
  std::string fix;    // what to do, when there is something to do
};

struct DoctorInput {
  EnvSource env;                  // the environment NCCL would start with
  std::string homeDir;            // for ~/.nccl.conf (NCCL uses the password entry's home, not $HOME)
  std::string siteConf = "/etc/nccl.conf";
  std::string sysfsRoot = "/sys";
  std::string host;               // this host's name, for %h
  long uid = 0;
  // Where to look for an NCCL library besides the loader's path ("libnccl.so.2"): PyTorch's wheels ship
  // theirs under site-packages/nvidia/nccl/lib.
  std::vector<std::string> ncclCandidates;
  bool probeNetwork = true;       // try a TCP connection to a remote coordinator (1 s at most)
};

// One KEY=VALUE line of an nccl.conf file as NCCL reads it (src/misc/param.cc): '#' in the first column is a
// comment, the key is everything before the first '=' (spaces included), the value everything after.
struct ConfLine {
  std::string file, key, value;
  int line = 0;
};
std::vector<ConfLine> readNcclConf(const std::string& path);

// The environment NCCL's plugins see: the process's variables, then NCCL_CONF_FILE's (else ~/.nccl.conf's),
// then /etc/nccl.conf's, each only where the variable is not set yet.
EnvSource withNcclConf(const EnvSource& env, const std::vector<ConfLine>& userConf,
                       const std::vector<ConfLine>& siteConf);

// Every check, in the order printed.
std::vector<Finding> runDoctor(const DoctorInput& in);

// 0: nothing to fix; 1: warnings; 2: errors.
int doctorExitCode(const std::vector<Finding>& findings);

}  // namespace wirewise::tools
