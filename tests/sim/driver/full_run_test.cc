// The README's main demo, in full: the embedded default scenario, 600 steps, 16 ranks through the plugin.
// Labelled slow. The run must stay within the 30 s budget on a small CI machine.
#include <gtest/gtest.h>

#include "sim/driver/driver.h"

namespace wirewise::sim {
namespace {

TEST(FullRun, DefaultScenarioWithinBudget) {
  std::string error;
  const auto sc = parseScenario(defaultScenarioJson(), &error);
  ASSERT_TRUE(sc) << error;
  SimOptions o;
  o.pluginPath = WW_PLUGIN_PATH;
  const SimResult r = runSimulation(*sc, o);
  EXPECT_EQ(r.steps, 600);
  EXPECT_EQ(r.ranks, 16);
  EXPECT_EQ(r.collectivesPerRank, 74400u);
  EXPECT_EQ(r.divergences, 0u);
  EXPECT_TRUE(r.tunerLoaded && r.profilerLoaded && r.sameInstance) << r.pluginNote;
  EXPECT_LE(r.runTimeS, 30.0);
  // The faults make a difference the oracle can exploit: the scenario is worth adapting in.
  EXPECT_LT(r.modes[2].commTimeUs, r.modes[0].commTimeUs);
  RecordProperty("run_time_s", std::to_string(r.runTimeS));
  std::printf("%s", reportTable(r).c_str());
}

}  // namespace
}  // namespace wirewise::sim
