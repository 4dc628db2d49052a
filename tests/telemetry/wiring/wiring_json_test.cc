#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdio>
#include <functional>
#include <string>

#include "telemetry/wiring/wiring_json.h"
#include "tests/telemetry/wiring/wiring_test_util.h"

namespace wirewise::wiring {
namespace {

using nlohmann::json;
using testing::loadMap;

TEST(WiringJson, RecordedMapsReadWithEveryField) {
  WiringMap m = loadMap("h100x4_degraded.json");
  ASSERT_EQ(m.gpus.size(), 5u);
  ASSERT_EQ(m.pairs.size(), 12u);
  EXPECT_EQ(m.host, "hgx-test-07");
  EXPECT_EQ(m.method.bytes, 268435456u);
  EXPECT_EQ(m.method.trials, 10);
  const GpuInfo* g0 = m.gpu(0);
  ASSERT_NE(g0, nullptr);
  EXPECT_EQ(g0->ccMajor, 9);
  EXPECT_EQ(g0->nvlinksUp, 18);
  EXPECT_DOUBLE_EQ(g0->nvlinkGbpsPerLink, 25.0);
  EXPECT_EQ(g0->pcie.gen, 5);
  EXPECT_EQ(g0->pcie.maxWidth, 16);
  const GpuInfo* g4 = m.gpu(4);
  ASSERT_NE(g4, nullptr);
  EXPECT_FALSE(g4->present);
  EXPECT_LT(g4->selfCopyGbps, 0) << "absent figures stay 'not measured'";
  const PairResult* p = m.pair(0, 2);
  ASSERT_NE(p, nullptr);
  EXPECT_EQ(p->link, LinkType::kNvlink);
  EXPECT_DOUBLE_EQ(p->ceGbps, 180.1);
  EXPECT_DOUBLE_EQ(p->bestUniGbps(), 180.1);
  EXPECT_DOUBLE_EQ(p->latencyUs, 2.41);
  const PairResult* np = m.pair(1, 3);
  ASSERT_NE(np, nullptr);
  EXPECT_FALSE(np->peerAccess);
  EXPECT_LT(np->smWriteGbps, 0);
  EXPECT_FALSE(np->error.empty());
}

TEST(WiringJson, RoundTripIsLossless) {
  for (const char* name : {"h100x4_degraded.json", "pcie_a100x4_trained_down.json", "h200x1_single.json"}) {
    WiringMap m = loadMap(name);
    const json first = toJson(m);
    WiringMap back;
    std::string err;
    ASSERT_TRUE(fromJson(first, &back, &err)) << name << ": " << err;
    EXPECT_EQ(toJson(back), first) << name;
    // And through a file, as `wirewise probe --out` writes it.
    char path[] = "/tmp/ww_wiring_rt_XXXXXX";
    int fd = mkstemp(path);
    ASSERT_GE(fd, 0);
    close(fd);
    ASSERT_TRUE(writeMapFile(path, m, &err)) << err;
    WiringMap fromFile;
    ASSERT_TRUE(readMapFile(path, &fromFile, &err)) << err;
    EXPECT_EQ(toJson(fromFile), first) << name;
    std::remove(path);
  }
}

TEST(WiringJson, UnmeasuredFiguresAreLeftOut) {
  WiringMap m;
  m.gpus.push_back(GpuInfo{});
  m.gpus.push_back(GpuInfo{});
  m.gpus[1].index = 1;
  PairResult p;
  p.src = 0;
  p.dst = 1;
  p.ceGbps = 12.5;
  m.pairs.push_back(p);
  const json j = toJson(m);
  const json& pj = j["pairs"][0];
  EXPECT_EQ(pj["ce_gbps"], 12.5);
  EXPECT_FALSE(pj.contains("sm_write_gbps"));
  EXPECT_FALSE(pj.contains("latency_us"));
  EXPECT_FALSE(j["gpus"][0].contains("self_copy_gbps"));
  EXPECT_FALSE(j["gpus"][0].contains("nvlinks_up"));
}

TEST(WiringJson, BadMapsAreRejectedWithThePath) {
  const json good = toJson(loadMap("pcie_a100x4_trained_down.json"));
  struct Case {
    const char* what;
    std::function<void(json&)> edit;
    const char* expect;
  };
  const Case cases[] = {
      {"no version", [](json& j) { j.erase("wirewise_wiring"); }, "not a wiring map"},
      {"future version", [](json& j) { j["wirewise_wiring"] = 2; }, "schema version 2"},
      {"figure as string", [](json& j) { j["pairs"][3]["ce_gbps"] = "fast"; }, "pairs[3].ce_gbps: expected a number"},
      {"unknown link", [](json& j) { j["pairs"][0]["link"] = "infiniband"; }, "pairs[0].link"},
      {"pair to unknown gpu", [](json& j) { j["pairs"][0]["dst"] = 9; }, "pairs[0]: src 0 and dst 9"},
      {"self pair", [](json& j) { j["pairs"][0]["dst"] = 0; }, "two different GPUs"},
      {"duplicate pair", [](json& j) { j["pairs"][1] = j["pairs"][0]; }, "listed twice"},
      {"duplicate gpu", [](json& j) { j["gpus"][1]["index"] = 0; }, "GPU 0 listed twice"},
      {"missing src", [](json& j) { j["pairs"][2].erase("src"); }, "pairs[2].src: missing"},
      {"bad cc", [](json& j) { j["gpus"][0]["cc"] = "nine"; }, "gpus[0].cc"},
      {"pairs not array", [](json& j) { j["pairs"] = 3; }, "pairs: expected an array"},
  };
  for (const Case& c : cases) {
    json j = good;
    c.edit(j);
    WiringMap m;
    std::string err;
    EXPECT_FALSE(fromJson(j, &m, &err)) << c.what;
    EXPECT_NE(err.find(c.expect), std::string::npos) << c.what << ": " << err;
  }
  WiringMap m;
  std::string err;
  EXPECT_TRUE(fromJson(good, &m, &err)) << "the unedited map must pass, or the cases above prove nothing";
}

TEST(WiringJson, UnreadableFilesSayWhy) {
  WiringMap m;
  std::string err;
  EXPECT_FALSE(readMapFile("/nonexistent/map.json", &m, &err));
  EXPECT_NE(err.find("cannot read /nonexistent/map.json"), std::string::npos) << err;
  char path[] = "/tmp/ww_wiring_bad_XXXXXX";
  int fd = mkstemp(path);
  ASSERT_GE(fd, 0);
  ASSERT_EQ(write(fd, "{not json", 9), 9);
  close(fd);
  EXPECT_FALSE(readMapFile(path, &m, &err));
  EXPECT_NE(err.find("not valid JSON"), std::string::npos) << err;
  std::remove(path);
}

}  // namespace
}  // namespace wirewise::wiring
