// `wirewise`: inspect the settings, watch the plugin decide, and read adaptation logs.
#include <CLI/CLI.hpp>

#include "tools/commands.h"

int main(int argc, char** argv) {
  CLI::App app{"wirewise: adaptive NCCL tuner and profiler plugin - command-line tool"};
  app.set_version_flag("--version", std::string("wirewise ") + WIREWISE_VERSION);
  app.require_subcommand(1);
  wirewise::tools::addSettingsCommand(app);
  wirewise::tools::addDemoCommand(app);
  wirewise::tools::addLogCommand(app);
  wirewise::tools::addReportCommand(app);
  wirewise::tools::addProbeCommand(app);
  wirewise::tools::addDoctorCommand(app);
#ifdef WW_HAVE_SIMULATE
  wirewise::tools::addSimulateCommand(app);
  wirewise::tools::addScenarioCommand(app);
#endif
#ifdef WW_HAVE_ADVISE
  wirewise::tools::addAdviseCommand(app);
#endif
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    const int rc = app.exit(e);
    // `wirewise scenario` promises exit status 2 for every bad argument; CLI11's own usage errors are 100 and up.
    const auto parsed = app.get_subcommands();
    if (rc >= 100 && !parsed.empty() && parsed.front()->get_name() == "scenario") return 2;
    return rc;
  }
  return 0;
}
