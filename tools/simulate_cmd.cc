// `wirewise simulate [FILE]`: four modes on one scenario, a report, a table and optionally a plot.
#include "tools/simulate_cmd.h"

#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <fstream>
#include <optional>
#include <stdexcept>
#include <string>

#include <fmt/core.h>

#include "common/settings.h"
#include "sim/driver/driver.h"
#include "sim/model/scenario.h"
#include "tools/cli_util.h"

namespace wirewise::tools {
namespace {

struct SimulateArgs {
  std::string file, report, plot, plugin, profiler, log;
  std::optional<uint64_t> seed;
  std::optional<int> steps;
  int procs = 1;
  std::optional<std::string> sync, policy;
  bool quiet = false;
};

bool exists(const std::string& p) {
  struct stat st {};
  return ::stat(p.c_str(), &st) == 0;
}

void writeFile(const std::string& path, const std::string& text) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out << text;
  if (!out) throw std::runtime_error("cannot write " + path);
}

int runSimulate(const SimulateArgs& a) {
  std::string error;
  std::optional<sim::Scenario> sc =
      a.file.empty() ? sim::parseScenario(sim::defaultScenarioJson(), &error) : sim::loadScenarioFile(a.file, &error);
  if (!sc) {
    std::fprintf(stderr, "wirewise simulate: %s: %s\n", a.file.empty() ? "default scenario" : a.file.c_str(),
                 error.c_str());
    return 2;
  }
  sim::SimOptions opt;
  opt.pluginPath = a.plugin;
  if (opt.pluginPath.empty()) {
    for (const std::string& p : defaultPluginPaths())
      if (exists(p)) {
        opt.pluginPath = p;
        break;
      }
    if (opt.pluginPath.empty()) {
      std::fprintf(stderr, "wirewise simulate: no plugin library found next to this program (%s); pass --plugin\n",
                   defaultPluginPaths().front().c_str());
      return 2;
    }
  }
  opt.profilerPath = a.profiler;
  opt.logPath = a.log;
  opt.sync = a.sync;
  opt.policy = a.policy;
  opt.seed = a.seed;
  opt.steps = a.steps;
  opt.procs = a.procs;
  const auto start = std::chrono::steady_clock::now();
  const bool tty = ::isatty(STDERR_FILENO) != 0;
  int lastDecile = 0;
  if (!a.quiet) {
    opt.progress = [&](int done, int total) {
      const int decile = static_cast<int>(10LL * done / total);
      if (decile == lastDecile || done == total) return;
      lastDecile = decile;
      const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
      if (tty || s > 2.0)
        std::fprintf(stderr, "wirewise simulate: %3d%% (%d/%d steps, %.1f s)\n", decile * 10, done, total, s);
    };
  }
  sim::SimResult r = sim::runSimulation(*sc, opt);
  if (!a.report.empty()) writeFile(a.report, sim::reportJson(r).dump(2) + "\n");
  if (!a.plot.empty()) writeFile(a.plot, sim::plotSvg(r));
  if (!a.quiet) {
    std::fputs(sim::reportTable(r).c_str(), stdout);
    std::printf("  run time %.1f s%s%s\n", r.runTimeS, a.report.empty() ? "" : ", report ",
                a.report.c_str());
  }
  return r.divergences == 0 ? 0 : 3;
}

}  // namespace

void addSimulateCommand(CLI::App& app) {
  auto args = std::make_shared<SimulateArgs>();
  auto* cmd = app.add_subcommand(
      "simulate", "Run a scenario in the simulator (simulated cluster, real plugin): nccl-default, static-best, "
                  "oracle and wirewise on the same noise");
  cmd->add_option("file", args->file, "Scenario JSON (default: the embedded 2x8-h100-nic-degrade)");
  cmd->add_option("--report", args->report, "Write the JSON report here");
  cmd->add_option("--plot", args->plot, "Write an SVG plot of per-step comm time here");
  cmd->add_option("--seed", args->seed, "Override the scenario's seed");
  cmd->add_option("--steps", args->steps, "Override workload.steps")->check(CLI::PositiveNumber);
  cmd->add_option("--procs", args->procs,
                  "Spread the ranks over N processes that meet at one coordinator over TCP (default 1)")
      ->check(CLI::PositiveNumber);
  cmd->add_option("--plugin", args->plugin, "Tuner library (as NCCL_TUNER_PLUGIN; default: the one next to wirewise)");
  cmd->add_option("--profiler", args->profiler,
                  "Profiler library (default: libnccl-profiler-wirewise.so next to --plugin)");
  cmd->add_option("--log", args->log,
                  fmt::format("{} for the plugin during the run (default: a temporary file, removed afterwards)",
                              settingName(&Settings::logPath)));
  cmd->add_option("--sync", args->sync,
                  fmt::format("{} for the run (default: the environment's, else deterministic)",
                              settingName(&Settings::sync)))
      ->check(CLI::IsMember({"off", "on", "deterministic"}));
  cmd->add_option("--policy", args->policy,
                  fmt::format("{} for the run, e.g. static (default: the environment's, else adaptive)",
                              settingName(&Settings::policy)));
  cmd->add_flag("--quiet,-q", args->quiet, "No table and no progress");
  cmd->callback([args] {
    int rc = 0;
    try {
      rc = runSimulate(*args);
    } catch (const std::exception& e) {
      std::fprintf(stderr, "wirewise simulate: %s\n", e.what());
      rc = 2;
    }
    if (rc != 0) throw CLI::RuntimeError(rc);
  });
}

}  // namespace wirewise::tools
