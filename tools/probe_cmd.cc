// `wirewise probe`: measure every GPU pair (by running ww-probe-gpu, the CUDA part, as a child process),
// or read a recorded map (--from-json), then print the matrices and flags, write the map (JSON) and the
// heatmap (SVG). wirewise itself never links or loads CUDA: see docs/wiring.md for why the probe is a
// separate executable.
#include <fmt/core.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <climits>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "telemetry/wiring/analysis.h"
#include "telemetry/wiring/render.h"
#include "telemetry/wiring/wiring_json.h"
#include "tools/cli_util.h"
#include "tools/commands.h"

namespace wirewise::tools {
namespace {

// ww-probe-gpu's exit statuses (kernels/probe.h; copied, since that header is only built with CUDA).
constexpr int kProbeNoDevice = 3;
constexpr int kProbeUsage = 2;

// wirewise probe's own exit statuses (docs/wiring.md).
constexpr int kExitError = 1;
constexpr int kExitNoDevice = 3;
constexpr int kExitFlagged = 4;

struct ProbeOptions {
  std::string fromJson, out, svg, probeBinary, devices;
  bool json = false, failOnFlags = false, quiet = false;
  double flagBelow = 0.6;
  uint64_t bytes = 0;
  int trials = 0;
  int timeoutS = 300;
};

// Runs argv[0] with argv, waiting at most timeoutS; returns its exit status, or -1 with *why.
int runChild(const std::vector<std::string>& args, int timeoutS, std::string* why) {
  std::vector<char*> argv;
  for (const auto& a : args) argv.push_back(const_cast<char*>(a.c_str()));
  argv.push_back(nullptr);
  pid_t pid = fork();
  if (pid < 0) {
    *why = std::string("fork: ") + std::strerror(errno);
    return -1;
  }
  if (pid == 0) {
    execv(argv[0], argv.data());
    _exit(127);
  }
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(timeoutS);
  for (;;) {
    int status = 0;
    pid_t r = waitpid(pid, &status, WNOHANG);
    if (r == pid) {
      if (WIFEXITED(status)) return WEXITSTATUS(status);
      *why = "the probe died of signal " + std::to_string(WTERMSIG(status));
      return -1;
    }
    if (r < 0 && errno != EINTR) {
      *why = std::string("waitpid: ") + std::strerror(errno);
      return -1;
    }
    if (std::chrono::steady_clock::now() > deadline) {
      kill(pid, SIGKILL);
      waitpid(pid, &status, 0);
      *why = "the probe did not finish within " + std::to_string(timeoutS) + " s and was killed (--timeout)";
      return -1;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
}

// Runs the GPU probe into a temporary file and reads the map. Returns 0 or an exit status, having said why.
int measure(const ProbeOptions& o, wiring::WiringMap* map) {
  const std::string probe = o.probeBinary.empty() ? selfDirectory() + "/ww-probe-gpu" : o.probeBinary;
  if (access(probe.c_str(), X_OK) != 0) {
    fmt::print(stderr,
               "wirewise probe: no CUDA device: nothing to probe (no GPU probe at {}: this wirewise was built "
               "without CUDA; rebuild where CMake finds nvcc, or pass --probe-binary). "
               "`wirewise probe --from-json MAP` renders a recorded map.\n",
               probe);
    return kExitNoDevice;
  }
  char tmpl[] = "/tmp/ww_wiring_XXXXXX";
  int fd = mkstemp(tmpl);
  if (fd < 0) {
    fmt::print(stderr, "wirewise probe: cannot create a temporary file: {}\n", std::strerror(errno));
    return kExitError;
  }
  close(fd);
  std::vector<std::string> args = {probe, "--out", tmpl};
  if (o.bytes > 0) args.insert(args.end(), {"--bytes", std::to_string(o.bytes)});
  if (o.trials > 0) args.insert(args.end(), {"--trials", std::to_string(o.trials)});
  if (!o.devices.empty()) args.insert(args.end(), {"--devices", o.devices});
  if (o.quiet) args.push_back("--quiet");
  std::string why;
  const int rc = runChild(args, o.timeoutS, &why);
  int result = 0;
  if (rc == kProbeNoDevice) {
    fmt::print(stderr,
               "wirewise probe: no CUDA device: nothing to probe (the probe's reason is above). "
               "`wirewise probe --from-json MAP` renders a recorded map.\n");
    result = kExitNoDevice;
  } else if (rc == 127) {
    fmt::print(stderr, "wirewise probe: cannot run {}\n", probe);
    result = kExitError;
  } else if (rc == kProbeUsage) {
    fmt::print(stderr, "wirewise probe: the probe rejected its arguments (see above)\n");
    result = kExitError;
  } else if (rc != 0) {
    fmt::print(stderr, "wirewise probe: the probe failed: {}\n", rc < 0 ? why : "exit status " + std::to_string(rc));
    result = kExitError;
  } else if (std::string err; !wiring::readMapFile(tmpl, map, &err)) {
    fmt::print(stderr, "wirewise probe: the probe's map is unreadable: {}\n", err);
    result = kExitError;
  }
  unlink(tmpl);
  return result;
}

bool writeText(const std::string& path, const std::string& text) {
  std::ofstream out(path);
  out << text;
  out.close();
  return static_cast<bool>(out);
}

int runProbe(const ProbeOptions& o) {
  wiring::WiringMap map;
  if (!o.fromJson.empty()) {
    std::string err;
    if (!wiring::readMapFile(o.fromJson, &map, &err)) {
      fmt::print(stderr, "wirewise probe: {}\n", err);
      return kExitError;
    }
  } else if (int rc = measure(o, &map); rc != 0) {
    return rc;
  }
  wiring::AnalysisOptions ao;
  ao.flagBelow = o.flagBelow;
  const wiring::Analysis analysis = wiring::analyze(map, ao);
  if (o.json) {
    nlohmann::json j = {{"map", wiring::toJson(map)}, {"analysis", wiring::toJson(analysis)}};
    fmt::print("{}\n", j.dump(2));
  } else {
    fmt::print("{}", wiring::matrixText(map, analysis));
  }
  // A measured map is always kept (default file name); a recorded one is re-written only on request.
  const std::string out = !o.out.empty() ? o.out : o.fromJson.empty() ? "wirewise-wiring.json" : "";
  if (!out.empty()) {
    std::string err;
    if (!wiring::writeMapFile(out, map, &err)) {
      fmt::print(stderr, "wirewise probe: {}\n", err);
      return kExitError;
    }
    fmt::print(stderr, "wirewise probe: map written to {}\n", out);
  }
  if (!o.svg.empty()) {
    if (!writeText(o.svg, wiring::heatmapSvg(map, analysis))) {
      fmt::print(stderr, "wirewise probe: cannot write {}\n", o.svg);
      return kExitError;
    }
    fmt::print(stderr, "wirewise probe: heatmap written to {}\n", o.svg);
  }
  return o.failOnFlags && !analysis.flags.empty() ? kExitFlagged : 0;
}

}  // namespace

void addProbeCommand(CLI::App& app) {
  auto o = std::make_shared<ProbeOptions>();
  auto* cmd = app.add_subcommand("probe",
                                 "Measure every GPU pair's bandwidth and latency (or read a recorded map), compare "
                                 "them with what the links claim, print the matrices and flags");
  cmd->add_option("--from-json", o->fromJson, "render a recorded map instead of measuring (no GPU needed)")
      ->check(CLI::ExistingFile);
  cmd->add_option("--out", o->out,
                  "write the map (JSON) here; default wirewise-wiring.json when measuring, nothing with --from-json");
  cmd->add_option("--svg", o->svg, "write the heatmap (SVG) here");
  cmd->add_flag("--json", o->json, "print the map and its analysis as JSON instead of text");
  cmd->add_option("--flag-below", o->flagBelow, "flag pairs below this fraction of their nominal bandwidth")
      ->check(CLI::Range(0.0, 1.0));
  cmd->add_flag("--fail-on-flags", o->failOnFlags, "exit with status 4 when anything is flagged");
  cmd->add_option("--bytes", o->bytes, "bytes per copy (probe default 256 MiB)")->check(CLI::Range(1024ull, 1ull << 40));
  cmd->add_option("--trials", o->trials, "timed trials per figure, median taken (probe default 10)")
      ->check(CLI::Range(1, 1000));
  cmd->add_option("--devices", o->devices, "only these CUDA devices, e.g. 0,1,3 (default all)");
  cmd->add_option("--probe-binary", o->probeBinary, "the GPU probe to run (default: ww-probe-gpu next to wirewise)");
  cmd->add_option("--timeout", o->timeoutS, "kill the probe after this many seconds")->check(CLI::Range(1, 86400));
  cmd->add_flag("--quiet", o->quiet, "no per-measurement progress from the probe");
  cmd->callback([o] {
    if (int rc = runProbe(*o); rc != 0) throw CLI::RuntimeError(rc);
  });
}

}  // namespace wirewise::tools
