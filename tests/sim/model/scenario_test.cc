#include "sim/model/scenario.h"

#include <filesystem>
#include <string>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

namespace wirewise::sim {
namespace {

using Json = nlohmann::json;

Json base() {
  return Json::parse(R"({
    "name": "t", "seed": 7,
    "cluster": { "nodes": 2, "gpus_per_node": 8, "gpu": "h100-sxm" },
    "comms": [ { "name": "world", "ranks": "all" }, { "name": "tp", "ranks": "per-node" } ],
    "workload": { "steps": 100, "step": [ { "comm": "world", "coll": "allreduce", "bytes": 1024 } ] },
    "faults": [ { "kind": "degrade", "link": "nic", "node": 1, "index": 3, "factor": 0.5, "from_step": 10 } ]
  })");
}

TEST(ScenarioTest, EveryExampleFileParses) {
  int count = 0;
  for (const auto& e : std::filesystem::directory_iterator(WW_SCENARIO_DIR)) {
    if (e.path().extension() != ".json") continue;
    std::string error;
    auto s = loadScenarioFile(e.path().string(), &error);
    EXPECT_TRUE(s.has_value()) << e.path() << ": " << error;
    ++count;
  }
  EXPECT_GE(count, 4);
}

TEST(ScenarioTest, DefaultsPresetsAndExpansion) {
  std::string error;
  auto s = parseScenario(base().dump(), &error);
  ASSERT_TRUE(s) << error;
  EXPECT_EQ(s->seed, 7u);
  EXPECT_EQ(s->description, "");
  EXPECT_NEAR(s->cluster.nvlinkGbps, 370.8, 1e-9);
  EXPECT_TRUE(s->cluster.nvls);
  EXPECT_EQ(s->cluster.pcieGbps, 48);
  EXPECT_EQ(s->cluster.nicsPerNode, 8);
  EXPECT_EQ(s->cluster.nicGbps, 50);
  EXPECT_EQ(s->cluster.netLatencyUs, 2.0);
  EXPECT_EQ(s->cluster.transport, Transport::Ib);
  EXPECT_EQ(s->cluster.computeCapability, 90);
  ASSERT_EQ(s->comms.size(), 3u);  // world + one tp per node
  EXPECT_EQ(s->comms[0].ranks.size(), 16u);
  auto tp = s->commInstances("tp");
  ASSERT_EQ(tp.size(), 2u);
  EXPECT_EQ(tp[1]->ranks.front(), 8);
  EXPECT_EQ(tp[1]->ranks.back(), 15);
  EXPECT_EQ(s->workload.step[0].repeat, 1);
  EXPECT_EQ(s->workload.step[0].dtype, DType::F32);
  EXPECT_EQ(s->workload.computeUs, 0);
  EXPECT_EQ(s->faults[0].toStep, kUntilEnd);
  EXPECT_EQ(s->noise.jitter, 0);
}

TEST(ScenarioTest, ExplicitOverridesAndRankLists) {
  Json j = base();
  j["cluster"]["gpu"] = "a100-sxm";
  j["cluster"]["nvlink_gbps"] = 100;
  j["cluster"]["transport"] = "socket";
  j["comms"][1]["ranks"] = Json::array({0, 9});
  j["faults"][0]["index"] = "*";
  std::string error;
  auto s = parseScenario(j.dump(), &error);
  ASSERT_TRUE(s) << error;
  EXPECT_EQ(s->cluster.nvlinkGbps, 100);
  EXPECT_FALSE(s->cluster.nvls);
  EXPECT_EQ(s->cluster.transport, Transport::Socket);
  EXPECT_EQ(s->commInstances("tp")[0]->ranks, (std::vector<int>{0, 9}));
  EXPECT_EQ(s->faults[0].index, kAllIndex);
}

struct BadCase {
  const char* pointer;  // JSON pointer to set
  const char* value;    // JSON text; "DELETE" removes the field
  const char* expectPath;
};

// Readable test names in ctest's listing instead of the struct's bytes.
void PrintTo(const BadCase& c, std::ostream* os) { *os << c.pointer << " = " << c.value; }

class ScenarioBadTest : public ::testing::TestWithParam<BadCase> {};

TEST_P(ScenarioBadTest, RejectedWithPath) {
  const BadCase& c = GetParam();
  Json j = base();
  Json::json_pointer ptr(c.pointer);
  if (std::string(c.value) == "DELETE") {
    j[ptr.parent_pointer()].erase(ptr.back());
  } else {
    j[ptr] = Json::parse(c.value);
  }
  std::string error;
  EXPECT_FALSE(parseScenario(j.dump(), &error).has_value()) << c.pointer;
  EXPECT_EQ(error.rfind(c.expectPath, 0), 0u) << "error was: " << error;
}

INSTANTIATE_TEST_SUITE_P(
    Table, ScenarioBadTest,
    ::testing::Values(
        BadCase{"/cluster/nic_gpbs", "50", "cluster.nic_gpbs: unknown field"},
        BadCase{"/extra", "1", "extra: unknown field"}, BadCase{"/name", "DELETE", "name: required"},
        BadCase{"/name", "3", "name: must be a string"}, BadCase{"/seed", "-1", "seed:"},
        BadCase{"/cluster/gpu", "\"v100\"", "cluster.gpu: unknown value"},
        BadCase{"/cluster/gpu", "DELETE", "cluster.gpu: required"},
        BadCase{"/cluster/nodes", "0", "cluster.nodes: must be at least 1"},
        BadCase{"/cluster/nodes", "\"2\"", "cluster.nodes: must be an integer"},
        BadCase{"/cluster/gpus_per_node", "1.5", "cluster.gpus_per_node: must be an integer"},
        BadCase{"/cluster/nic_gbps", "-5", "cluster.nic_gbps: must be positive"},
        BadCase{"/cluster/net_latency_us", "-1", "cluster.net_latency_us: must not be negative"},
        BadCase{"/cluster/nvls", "1", "cluster.nvls: must be true or false"},
        BadCase{"/cluster/transport", "\"roce\"", "cluster.transport: unknown value"},
        BadCase{"/comms", "[]", "comms: must be a non-empty array"},
        BadCase{"/comms/0/ranks", "\"some\"", "comms[0].ranks: unknown value"},
        BadCase{"/comms/0/ranks", "[0, 16]", "comms[0].ranks[1]: must be at most 15"},
        BadCase{"/comms/0/ranks", "[0, -1]", "comms[0].ranks[1]: must be at least 0"},
        BadCase{"/comms/0/ranks", "[3, 3]", "comms[0].ranks[1]: duplicate rank"},
        BadCase{"/comms/1/name", "\"world\"", "comms[1].name: duplicate"},
        BadCase{"/comms/0/size", "2", "comms[0].size: unknown field"},
        BadCase{"/workload/steps", "0", "workload.steps: must be at least 1"},
        BadCase{"/workload/step/0/coll", "\"alltoall\"", "workload.step[0].coll: unknown value"},
        BadCase{"/workload/step/0/comm", "\"dp\"", "workload.step[0].comm: unknown communicator"},
        BadCase{"/workload/step/0/dtype", "\"f64\"", "workload.step[0].dtype: unknown value"},
        BadCase{"/workload/step/0/bytes", "-4", "workload.step[0].bytes: must be at least 1"},
        BadCase{"/workload/step/0/bytes", "6", "workload.step[0].bytes: must be a multiple"},
        BadCase{"/workload/step/0/repeat", "0", "workload.step[0].repeat: must be at least 1"},
        BadCase{"/workload/compute_us", "-1", "workload.compute_us: must not be negative"},
        BadCase{"/faults/0/kind", "\"melt\"", "faults[0].kind: unknown value"},
        BadCase{"/faults/0/link", "\"qpi\"", "faults[0].link: unknown value"},
        BadCase{"/faults/0/node", "2", "faults[0].node: node 2 out of range"},
        BadCase{"/faults/0/index", "8", "faults[0].index: NIC 8 out of range"},
        BadCase{"/faults/0/index", "\"all\"", "faults[0].index: must be an integer or \"*\""},
        BadCase{"/faults/0/factor", "1.5", "faults[0].factor: must be in (0, 1]"},
        BadCase{"/faults/0/factor", "DELETE", "faults[0].factor: required"},
        BadCase{"/faults/0/flows", "3", "faults[0].flows: not used"},
        BadCase{"/faults/0/to_step", "10", "faults[0].to_step: must be greater than from_step"},
        BadCase{"/faults/0/from_step", "-3", "faults[0].from_step: must be at least 0"},
        BadCase{"/faults/0/frm_step", "3", "faults[0].frm_step: unknown field"},
        BadCase{"/noise/jitter", "-0.1", "noise.jitter: must not be negative"},
        BadCase{"/noise/straggler_prob", "2", "noise.straggler_prob: must be at most 1"},
        BadCase{"/noise/stragler_us", "2", "noise.stragler_us: unknown field"}));

TEST(ScenarioTest, FaultKindSpecificFields) {
  Json j = base();
  j["faults"] = Json::parse(R"([{ "kind": "contention", "link": "nic", "node": 0 }])");
  std::string error;
  EXPECT_FALSE(parseScenario(j.dump(), &error));
  EXPECT_EQ(error.rfind("faults[0].flows: required", 0), 0u) << error;
  j["faults"] = Json::parse(
      R"([{ "kind": "flap", "link": "nvlink", "node": 0, "index": 9, "factor": 0.5, "period_steps": 4 }])");
  EXPECT_FALSE(parseScenario(j.dump(), &error));
  EXPECT_EQ(error.rfind("faults[0].index: GPU 9 out of range", 0), 0u) << error;
  j["faults"] = Json::parse(R"([{ "kind": "latency", "link": "net", "add_us": 0 }])");
  EXPECT_FALSE(parseScenario(j.dump(), &error));
  EXPECT_EQ(error.rfind("faults[0].add_us: must be positive", 0), 0u) << error;
  EXPECT_FALSE(parseScenario("{ not json", &error));
  EXPECT_NE(error.find("(json)"), std::string::npos);
  EXPECT_FALSE(loadScenarioFile("/nonexistent/x.json", &error));
}

}  // namespace
}  // namespace wirewise::sim
