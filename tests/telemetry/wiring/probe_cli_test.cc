// `wirewise probe` run as a child process: the real binary on recorded maps, and the no-GPU paths.
#include <gtest/gtest.h>

#include <cstdio>
#include <string>

#include <nlohmann/json.hpp>

#include "tests/telemetry/wiring/mini_xml.h"
#include "tests/telemetry/wiring/wiring_test_util.h"
#include "tests/tools/cli_runner.h"

namespace wirewise::wiring {
namespace {

using tools::testing::runCli;
using tools::testing::slurp;
using wiring::testing::dataPath;

std::string tempPath(const char* suffix) {
  char path[] = "/tmp/ww_probe_cli_XXXXXX";
  int fd = mkstemp(path);
  if (fd >= 0) close(fd);
  std::remove(path);
  return std::string(path) + suffix;
}

TEST(ProbeCli, RendersARecordedMap) {
  const std::string svg = tempPath(".svg"), out = tempPath(".json");
  auto r = runCli("probe --from-json '" + dataPath("h100x4_degraded.json") + "' --svg '" + svg + "' --out '" + out + "'");
  EXPECT_EQ(r.status, 0) << r.err;
  EXPECT_NE(r.out.find("gpu0->gpu2 unidirectional: 180.1 GB/s is 0.40 of nominal 450.0 GB/s"), std::string::npos)
      << r.out;
  EXPECT_NE(r.out.find("[no_peer_access] gpu1->gpu3"), std::string::npos);
  EXPECT_NE(r.out.find("[missing_gpu] gpu4"), std::string::npos);
  EXPECT_NE(r.err.find("heatmap written to " + svg), std::string::npos) << r.err;
  testing::MiniXml parser;
  auto root = parser.parse(slurp(svg));
  ASSERT_NE(root, nullptr) << parser.error();
  // --out re-writes the map: it reads back to the same JSON.
  WiringMap a, b;
  std::string err;
  ASSERT_TRUE(readMapFile(dataPath("h100x4_degraded.json"), &a, &err)) << err;
  ASSERT_TRUE(readMapFile(out, &b, &err)) << err;
  EXPECT_EQ(toJson(a), toJson(b));
  std::remove(svg.c_str());
  std::remove(out.c_str());
}

TEST(ProbeCli, JsonOutputCarriesMapAndFlags) {
  auto r = runCli("probe --from-json '" + dataPath("pcie_a100x4_trained_down.json") + "' --json");
  ASSERT_EQ(r.status, 0) << r.err;
  auto j = nlohmann::json::parse(r.out, nullptr, false);
  ASSERT_FALSE(j.is_discarded()) << r.out;
  EXPECT_EQ(j["map"]["host"], "pcie-box-02");
  ASSERT_EQ(j["analysis"]["flags"].size(), 2u);
  EXPECT_EQ(j["analysis"]["flags"][0]["kind"], "pcie_trained_down");
  EXPECT_EQ(j["analysis"]["flags"][1]["kind"], "unidirectional");
  EXPECT_NEAR(j["analysis"]["flags"][1]["ratio"].get<double>(), 9.0 / (16 * 1.969), 1e-9);
}

TEST(ProbeCli, FailOnFlagsAndThreshold) {
  const std::string map = "'" + dataPath("h100x4_degraded.json") + "'";
  EXPECT_EQ(runCli("probe --from-json " + map + " --fail-on-flags").status, 4);
  EXPECT_EQ(runCli("probe --from-json '" + dataPath("h200x1_single.json") + "' --fail-on-flags").status, 0);
  auto r = runCli("probe --from-json " + map + " --flag-below 0.3");
  EXPECT_EQ(r.status, 0);
  EXPECT_EQ(r.out.find("[unidirectional] gpu0->gpu2"), std::string::npos) << "0.40 passes a 0.3 threshold";
}

TEST(ProbeCli, BadMapIsAnErrorNotACrash) {
  const std::string bad = tempPath(".json");
  FILE* f = std::fopen(bad.c_str(), "w");
  ASSERT_NE(f, nullptr);
  std::fputs("{\"wirewise_wiring\":1,\"gpus\":[{\"index\":0}],\"pairs\":[{\"src\":0,\"dst\":5}]}", f);
  std::fclose(f);
  auto r = runCli("probe --from-json '" + bad + "'");
  EXPECT_EQ(r.status, 1);
  EXPECT_NE(r.err.find("pairs[0]: src 0 and dst 5"), std::string::npos) << r.err;
  std::remove(bad.c_str());
}

TEST(ProbeCli, WithoutAProbeThereIsNothingToProbe) {
  auto r = runCli("probe --probe-binary /nonexistent/ww-probe-gpu");
  EXPECT_EQ(r.status, 3);
  EXPECT_NE(r.err.find("no CUDA device: nothing to probe"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("--from-json"), std::string::npos) << "it says what still works";
}

#ifdef WW_PROBE_GPU
// The real CUDA probe: on a machine without a GPU (CI) it must say so and exit 3, never crash; with a GPU
// it must produce a readable map.
TEST(ProbeCli, RealProbeSaysNoDeviceOrMeasures) {
  const std::string out = tempPath(".json");
  auto r = runCli("probe --probe-binary '" + std::string(WW_PROBE_GPU) + "' --bytes 16777216 --trials 3 --quiet --out '" +
                  out + "'");
  if (r.status == 3) {
    EXPECT_NE(r.err.find("ww-probe-gpu: no CUDA device: nothing to probe"), std::string::npos) << r.err;
    EXPECT_NE(r.err.find("wirewise probe: no CUDA device: nothing to probe"), std::string::npos) << r.err;
  } else {
    ASSERT_EQ(r.status, 0) << r.err;
    WiringMap m;
    std::string err;
    EXPECT_TRUE(readMapFile(out, &m, &err)) << err;
    EXPECT_FALSE(m.gpus.empty());
  }
  std::remove(out.c_str());
}
#endif

}  // namespace
}  // namespace wirewise::wiring
