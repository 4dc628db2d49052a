// `wirewise advise` run as a child process: the table, the JSON fields, the SVG, and the time it takes.
#include <gtest/gtest.h>

#include <chrono>
#include <cstdio>
#include <set>
#include <string>

#include <nlohmann/json.hpp>

#include "tests/tools/cli_runner.h"

namespace wirewise::tools::testing {
namespace {

const std::string kScenario = std::string(WW_SOURCE_DIR) + "/scenarios/2x8-h100-nic-degrade.json";

TEST(AdviseCli, Llama7bJsonOnAnExampleScenario) {
  const auto start = std::chrono::steady_clock::now();
  const CliResult r = runCli("advise --model llama-7b --scenario '" + kScenario + "' --json");
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_LT(seconds, 10.0);
  const nlohmann::json j = nlohmann::json::parse(r.out);
  ASSERT_TRUE(j["strategies"].is_array());
  std::set<std::string> names;
  for (const auto& s : j["strategies"]) {
    names.insert(s["name"].get<std::string>());
    EXPECT_GE(s["tp"].get<int>(), 1);
    EXPECT_GT(s["step_time_ms"].get<double>(), 0);
    EXPECT_GE(s["exposed_comm_ms"].get<double>(), 0);
    EXPECT_TRUE(s["fits"].is_boolean());
    const auto& m = s["memory_gb"];
    EXPECT_NEAR(m["total"].get<double>(),
                m["params"].get<double>() + m["grads"].get<double>() + m["optimizer"].get<double>() +
                    m["activations"].get<double>(),
                1e-6);
    EXPECT_TRUE(s["what_if"].contains("nic_25"));
    EXPECT_TRUE(s["what_if"].contains("nvlink_50"));
    EXPECT_TRUE(s["what_if"].contains("recorded"));  // the scenario schedules faults
  }
  EXPECT_EQ(names, (std::set<std::string>{"ddp", "fsdp_full", "fsdp_grad_op", "hsdp", "zero1", "zero2", "zero3"}));
  // DDP of llama-7b needs 16 x 6.74 = 108 GB of model states: it does not fit an 80 GB H100.
  for (const auto& s : j["strategies"]) {
    if (s["name"] == "ddp" && s["tp"] == 1) {
      EXPECT_FALSE(s["fits"].get<bool>());
    }
  }
  EXPECT_EQ(j["recommended"].get<int>(), 1);
  EXPECT_TRUE(j["strategies"][0]["fits"].get<bool>());
}

TEST(AdviseCli, TableAndSvg) {
  const std::string svg = "/tmp/ww_advise_cli_test.svg";
  const CliResult r = runCli("advise --model gpt-1.3b --tp 1 --svg " + svg);
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_NE(r.out.find("recommended:"), std::string::npos);
  EXPECT_NE(r.out.find("wirewise: best enabled choice, simulated upper bound"), std::string::npos);
  EXPECT_NE(slurp(svg).find("</svg>"), std::string::npos);
  std::remove(svg.c_str());
}

TEST(AdviseCli, ParamsAndLogAndWiring) {
  CliResult r = runCli("advise --params 7.5B --strategies zero1,zero3 --tp 1 --json");
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_EQ(nlohmann::json::parse(r.out)["strategies"].size(), 2u);
  r = runCli("advise --model llama-7b --tp 1 --log '" + std::string(WW_ADVISE_DATA) + "/link_health.jsonl'");
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_NE(r.out.find("mlx5_3:1 degraded"), std::string::npos);
  r = runCli("advise --model llama-7b --tp 1 --nodes 2 --nic-gbps 25 --wiring '" + std::string(WW_WIRING_DATA) +
             "/h100x4_degraded.json'");
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_NE(r.out.find("cluster: 2 x 4 h100-sxm"), std::string::npos);
}

TEST(AdviseCli, BadArguments) {
  EXPECT_EQ(runCli("advise --model llama-8t").status, 2);
  EXPECT_EQ(runCli("advise").status, 2);
  EXPECT_EQ(runCli("advise --model llama-7b --scenario /nonexistent.json").status, 2);
  EXPECT_NE(runCli("advise --model llama-7b --strategies nope").status, 0);
}

}  // namespace
}  // namespace wirewise::tools::testing
