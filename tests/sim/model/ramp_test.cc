// The `ramp` fault kind (docs/simulator.md, "Format extensions"): parsing, and the capacity it leaves at a step.
#include <set>
#include <string>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "sim/model/scenario.h"
#include "sim/model/truth.h"

namespace wirewise::sim {
namespace {

using Json = nlohmann::json;

Json withFaults(const Json& faults) {
  Json j = Json::parse(R"({
    "name": "ramp", "seed": 1,
    "cluster": { "nodes": 2, "gpus_per_node": 8, "gpu": "h100-sxm", "nics_per_node": 4 },
    "comms": [ { "name": "world", "ranks": "all" } ],
    "workload": { "steps": 400, "step": [ { "comm": "world", "coll": "allreduce", "bytes": 1048576 } ] }
  })");
  j["faults"] = faults;
  return j;
}

std::string parseError(const Json& j) {
  std::string error;
  EXPECT_FALSE(parseScenario(j.dump(), &error).has_value()) << j.dump();
  return error;
}

TEST(RampTest, Parses) {
  std::string error;
  auto s = parseScenario(withFaults(Json::parse(R"([{ "kind": "ramp", "link": "nic", "node": 1, "index": 0,
      "factor": 0.3, "from_step": 100, "to_step": 300, "ramp_steps": 50 }])")).dump(), &error);
  ASSERT_TRUE(s) << error;
  ASSERT_EQ(s->faults.size(), 1u);
  const Fault& f = s->faults[0];
  EXPECT_EQ(f.kind, FaultKind::Ramp);
  EXPECT_EQ(f.link, LinkKind::Nic);
  EXPECT_EQ(f.node, 1);
  EXPECT_EQ(f.index, 0);
  EXPECT_DOUBLE_EQ(f.factor, 0.3);
  EXPECT_EQ(f.rampSteps, 50);
  EXPECT_EQ(f.fromStep, 100);
  EXPECT_EQ(f.toStep, 300);
  EXPECT_EQ(faultKindName(f.kind), "ramp");
}

TEST(RampTest, StrictFields) {
  const Json ok = Json::parse(R"({ "kind": "ramp", "link": "nic", "factor": 0.5, "ramp_steps": 10 })");
  Json missing = ok;
  missing.erase("ramp_steps");
  EXPECT_EQ(parseError(withFaults(Json::array({missing}))), "faults[0].ramp_steps: required field missing");
  Json noFactor = ok;
  noFactor.erase("factor");
  EXPECT_EQ(parseError(withFaults(Json::array({noFactor}))), "faults[0].factor: required field missing");
  Json zero = ok;
  zero["ramp_steps"] = 0;
  EXPECT_EQ(parseError(withFaults(Json::array({zero}))), "faults[0].ramp_steps: must be at least 1");
  Json badFactor = ok;
  badFactor["factor"] = 1.5;
  EXPECT_EQ(parseError(withFaults(Json::array({badFactor}))), "faults[0].factor: must be in (0, 1]");
  Json flows = ok;
  flows["flows"] = 2;
  EXPECT_EQ(parseError(withFaults(Json::array({flows}))), "faults[0].flows: not used by this fault kind");
  Json period = ok;
  period["period_steps"] = 4;
  EXPECT_EQ(parseError(withFaults(Json::array({period}))), "faults[0].period_steps: not used by this fault kind");
  // ramp_steps belongs to ramps only.
  Json degrade = Json::parse(R"({ "kind": "degrade", "link": "nic", "factor": 0.5, "ramp_steps": 10 })");
  EXPECT_EQ(parseError(withFaults(Json::array({degrade}))), "faults[0].ramp_steps: not used by this fault kind");
  // A ramp on NVLink needs NVLink, like every NVLink fault.
  Json j = withFaults(
      Json::array({Json::parse(R"({ "kind": "ramp", "link": "nvlink", "factor": 0.5, "ramp_steps": 10 })")}));
  j["cluster"]["gpu"] = "pcie";
  EXPECT_EQ(parseError(j), "faults[0].link: cluster has no NVLink");
}

double nicMultAt(const Scenario& s, int step) { return linkStateAt(s, step).nodes[1].nicMult[0]; }

TEST(RampTest, FallsOnePerStepThenHoldsUntilToStep) {
  std::string error;
  auto s = parseScenario(withFaults(Json::parse(R"([{ "kind": "ramp", "link": "nic", "node": 1, "index": 0,
      "factor": 0.2, "from_step": 100, "to_step": 300, "ramp_steps": 10 }])")).dump(), &error);
  ASSERT_TRUE(s) << error;
  EXPECT_EQ(nicMultAt(*s, 99), 1.0);
  EXPECT_DOUBLE_EQ(nicMultAt(*s, 100), 1.0 - 0.8 * 1 / 10);  // the first level is in force at onset
  EXPECT_DOUBLE_EQ(nicMultAt(*s, 104), 1.0 - 0.8 * 5 / 10);
  EXPECT_DOUBLE_EQ(nicMultAt(*s, 109), 0.2);  // the last at from + ramp_steps - 1
  EXPECT_DOUBLE_EQ(nicMultAt(*s, 200), 0.2);
  EXPECT_DOUBLE_EQ(nicMultAt(*s, 299), 0.2);
  EXPECT_EQ(nicMultAt(*s, 300), 1.0);  // to_step is exclusive, as for every kind
  // Strictly decreasing over the ramp: one distinct state per step.
  for (int step = 101; step < 110; ++step) EXPECT_LT(nicMultAt(*s, step), nicMultAt(*s, step - 1)) << step;
  // Only the selected NIC of the selected node.
  EXPECT_EQ(linkStateAt(*s, 200).nodes[0].nicMult[0], 1.0);
  EXPECT_EQ(linkStateAt(*s, 200).nodes[1].nicMult[1], 1.0);
}

TEST(RampTest, LongRampHasBoundedLevels) {
  std::string error;
  auto s = parseScenario(withFaults(Json::parse(R"([{ "kind": "ramp", "link": "nic", "node": 1, "index": 0,
      "factor": 0.36, "from_step": 50, "ramp_steps": 320 }])")).dump(), &error);
  ASSERT_TRUE(s) << error;
  std::set<double> levels;
  for (int step = 0; step < 400; ++step) levels.insert(nicMultAt(*s, step));
  // kDefaultRampLevels levels plus the healthy state, each held ramp_steps / kDefaultRampLevels = 10 steps.
  EXPECT_EQ(levels.size(), static_cast<size_t>(kDefaultRampLevels) + 1);
  EXPECT_DOUBLE_EQ(nicMultAt(*s, 50), 1.0 - 0.64 / kDefaultRampLevels);
  EXPECT_DOUBLE_EQ(nicMultAt(*s, 59), 1.0 - 0.64 / kDefaultRampLevels);
  EXPECT_DOUBLE_EQ(nicMultAt(*s, 60), 1.0 - 0.64 * 2 / kDefaultRampLevels);
  EXPECT_DOUBLE_EQ(nicMultAt(*s, 50 + 309), 1.0 - 0.64 * (kDefaultRampLevels - 1) / kDefaultRampLevels);
  EXPECT_DOUBLE_EQ(nicMultAt(*s, 50 + 310), 0.36);  // the last level, held for its 10 steps and on
  EXPECT_DOUBLE_EQ(nicMultAt(*s, 399), 0.36);  // holds to the end without to_step
}

TEST(RampTest, ExplicitLevels) {
  std::string error;
  auto s = parseScenario(withFaults(Json::parse(R"([{ "kind": "ramp", "link": "nic", "node": 1, "index": 0,
      "factor": 0.2, "from_step": 100, "ramp_steps": 40, "levels": 4 }])")).dump(), &error);
  ASSERT_TRUE(s) << error;
  EXPECT_EQ(s->faults[0].rampLevels, 4);
  std::set<double> levels;
  for (int step = 0; step < 400; ++step) levels.insert(nicMultAt(*s, step));
  EXPECT_EQ(levels.size(), 5u);
  EXPECT_DOUBLE_EQ(nicMultAt(*s, 100), 0.8);  // 10 steps per level
  EXPECT_DOUBLE_EQ(nicMultAt(*s, 109), 0.8);
  EXPECT_DOUBLE_EQ(nicMultAt(*s, 110), 0.6);
  EXPECT_DOUBLE_EQ(nicMultAt(*s, 129), 0.4);
  EXPECT_DOUBLE_EQ(nicMultAt(*s, 130), 0.2);
  EXPECT_DOUBLE_EQ(nicMultAt(*s, 399), 0.2);
  // The default: min(ramp_steps, 32).
  Json j = withFaults(Json::parse(R"([{ "kind": "ramp", "link": "nic", "factor": 0.5, "ramp_steps": 12 }])"));
  EXPECT_EQ(parseScenario(j.dump(), &error)->faults[0].rampLevels, 12);
  j["faults"][0]["ramp_steps"] = 100;
  EXPECT_EQ(parseScenario(j.dump(), &error)->faults[0].rampLevels, kDefaultRampLevels);
  // levels: 1..ramp_steps, and only on ramps.
  j["faults"][0]["levels"] = 101;
  EXPECT_EQ(parseError(j), "faults[0].levels: must be at most 100");
  j["faults"][0]["levels"] = 0;
  EXPECT_EQ(parseError(j), "faults[0].levels: must be at least 1");
  Json flap = withFaults(
      Json::parse(R"([{ "kind": "flap", "link": "nic", "factor": 0.5, "period_steps": 4, "levels": 2 }])"));
  EXPECT_EQ(parseError(flap), "faults[0].levels: not used by this fault kind");
}

TEST(RampTest, ComposesWithOtherFaults) {
  std::string error;
  auto s = parseScenario(withFaults(Json::parse(R"([
      { "kind": "ramp", "link": "nic", "node": 1, "index": 0, "factor": 0.5, "from_step": 10, "ramp_steps": 2 },
      { "kind": "degrade", "link": "nic", "node": 1, "index": "*", "factor": 0.5, "from_step": 20 },
      { "kind": "ramp", "link": "pcie", "node": "*", "index": 3, "factor": 0.1, "from_step": 0, "ramp_steps": 1 }
  ])")).dump(), &error);
  ASSERT_TRUE(s) << error;
  EXPECT_DOUBLE_EQ(nicMultAt(*s, 10), 0.75);
  EXPECT_DOUBLE_EQ(nicMultAt(*s, 15), 0.5);
  EXPECT_DOUBLE_EQ(nicMultAt(*s, 25), 0.25);  // multipliers multiply
  EXPECT_DOUBLE_EQ(linkStateAt(*s, 0).nodes[0].pcieMult[3], 0.1);  // ramp_steps 1 is a degrade
  EXPECT_EQ(linkStateAt(*s, 0).nodes[0].pcieMult[2], 1.0);
  EXPECT_TRUE(faultActiveAt(s->faults[0], 10));
  EXPECT_FALSE(faultActiveAt(s->faults[0], 9));
}

}  // namespace
}  // namespace wirewise::sim
