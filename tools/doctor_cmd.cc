// `wirewise doctor`: checks this host before a job runs (tools/doctor.h), in words or as JSON; exit 0 when
// nothing needs fixing, 1 on warnings, 2 on errors.
#include <pwd.h>
#include <unistd.h>

#include <fmt/core.h>

#include <climits>
#include <cstdlib>
#include <filesystem>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "tools/commands.h"
#include "tools/doctor.h"

namespace wirewise::tools {
namespace {

namespace fs = std::filesystem;

// PyTorch's wheels bring their own NCCL (nvidia-nccl-cu*: site-packages/nvidia/nccl/lib). Looked for under the
// usual Python prefixes: the system's, the user's, an active virtual environment and conda environment.
std::vector<std::string> pythonNcclCandidates(const std::string& home) {
  std::vector<std::string> prefixes = {"/usr/lib", "/usr/local/lib", home + "/.local/lib"};
  for (const char* var : {"VIRTUAL_ENV", "CONDA_PREFIX"})
    if (const char* v = std::getenv(var)) prefixes.push_back(std::string(v) + "/lib");
  std::vector<std::string> out;
  std::error_code ec;
  for (const std::string& prefix : prefixes) {
    for (const auto& e : fs::directory_iterator(prefix, ec)) {
      const std::string name = e.path().filename().string();
      if (name.rfind("python3", 0) != 0) continue;
      for (const char* pkgs : {"site-packages", "dist-packages"}) {
        const fs::path base = e.path() / pkgs;
        for (const char* rel : {"nvidia/nccl/lib/libnccl.so.2", "torch/lib/libnccl.so.2"})
          if (fs::exists(base / rel, ec)) out.push_back((base / rel).string());
      }
    }
  }
  return out;
}

DoctorInput hostInput(bool probeNetwork) {
  DoctorInput in;
  in.env = processEnv();
  const passwd* pw = ::getpwuid(::getuid());  // NCCL's ~/.nccl.conf comes from here, not from $HOME
  in.homeDir = pw != nullptr && pw->pw_dir != nullptr ? pw->pw_dir : "";
  char host[HOST_NAME_MAX + 1] = {};
  ::gethostname(host, sizeof host - 1);
  in.host = host;
  in.uid = static_cast<long>(::geteuid());
  in.ncclCandidates = pythonNcclCandidates(in.homeDir);
  in.probeNetwork = probeNetwork;
  return in;
}

}  // namespace

void addDoctorCommand(CLI::App& app) {
  auto* cmd = app.add_subcommand(
      "doctor", "Check this host before a job: how NCCL resolves the plugins, the NCCL found, settings that defeat "
                "tuning, nccl.conf lines, the rendezvous, the job key, the log directory and telemetry");
  auto json = std::make_shared<bool>(false);
  auto noNetwork = std::make_shared<bool>(false);
  cmd->add_flag("--json", *json, "print the findings as JSON");
  cmd->add_flag("--no-network", *noNetwork, "do not try a TCP connection to a coordinator on another host");
  cmd->callback([json, noNetwork] {
    const std::vector<Finding> findings = runDoctor(hostInput(!*noNetwork));
    const int code = doctorExitCode(findings);
    if (*json) {
      nlohmann::json j;
      j["findings"] = nlohmann::json::array();
      for (const Finding& f : findings)
        j["findings"].push_back({{"check", f.check}, {"level", levelName(f.level)}, {"text", f.text}, {"fix", f.fix}});
      j["exit"] = code;
      fmt::print("{}\n", j.dump(2));
    } else {
      size_t counts[4] = {};
      for (const Finding& f : findings) {
        ++counts[static_cast<int>(f.level)];
        fmt::print("{:<6} {:<17} {}\n", levelName(f.level), f.check, f.text);
        if (!f.fix.empty()) fmt::print("{:<6} {:<17} fix: {}\n", "", "", f.fix);
      }
      fmt::print("\n{} checks: {} ok, {} info, {} warnings, {} errors\n", findings.size(), counts[0], counts[1],
                 counts[2], counts[3]);
    }
    if (code != 0) throw CLI::RuntimeError(code);
  });
}

}  // namespace wirewise::tools
