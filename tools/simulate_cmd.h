// `wirewise simulate`: runs a scenario through the simulator (sim/driver) with the real plugin library.
#pragma once

#include <CLI/CLI.hpp>

namespace wirewise::tools {

void addSimulateCommand(CLI::App& app);

}  // namespace wirewise::tools
