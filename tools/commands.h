// The subcommands of `wirewise`. main.cc builds the CLI11 app and calls one add*Command per subcommand;
// each lives in its own file, so a new subcommand plugs in with one declaration and one call.
#pragma once

#include <CLI/CLI.hpp>

namespace wirewise::tools {

void addSettingsCommand(CLI::App& app);  // settings_cmd.cc
void addDemoCommand(CLI::App& app);      // demo_cmd.cc
void addLogCommand(CLI::App& app);       // log_cmd.cc
void addReportCommand(CLI::App& app);    // log_cmd.cc
void addProbeCommand(CLI::App& app);     // probe_cmd.cc
void addDoctorCommand(CLI::App& app);    // doctor_cmd.cc
#ifdef WW_HAVE_SIMULATE
void addSimulateCommand(CLI::App& app);  // simulate_cmd.cc (the simulator's)
void addScenarioCommand(CLI::App& app);  // scenario_cmd.cc (the simulator's scenario generator)
#endif
#ifdef WW_HAVE_ADVISE
void addAdviseCommand(CLI::App& app);  // advise_cmd.cc (the strategy advisor)
#endif

}  // namespace wirewise::tools
