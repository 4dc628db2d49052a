// Shared helpers for the driver tests: the example scenarios and the built plugin.
#pragma once

#include <string>

#include <gtest/gtest.h>

#include "sim/driver/driver.h"
#include "sim/model/scenario.h"

namespace wirewise::sim::testing {

inline Scenario loadExample(const std::string& file) {
  std::string error;
  auto sc = loadScenarioFile(std::string(WW_SCENARIO_DIR) + "/" + file, &error);
  if (!sc) ADD_FAILURE() << file << ": " << error;
  return sc ? *sc : Scenario{};
}

inline SimOptions options(int steps, const std::string& plugin = WW_PLUGIN_PATH) {
  SimOptions o;
  o.pluginPath = plugin;
  o.steps = steps;
  return o;
}

}  // namespace wirewise::sim::testing
