// Every exported tuner version, driven through the NCCL-faithful loader exactly as NCCL 2.28-2.32 call it:
// flat float[7][3] tables, -1.0 entries, nChannels pre-set to 0, NCCL's selection rule afterwards.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <atomic>
#include <cstdarg>
#include <cstring>
#include <mutex>
#include <random>
#include <thread>

#include "tests/plugin/plugin_fixture.h"

namespace wirewise::testing {
namespace {

using loader::CommChannels;
using loader::Selection;
using loader::Tuner;

constexpr int kNcclDefaultChannels = 8;
const CommChannels kComm{16, 16, 1};

// Rules chosen to exercise every path: a full override with channels, a full override keeping NCCL's
// channels, a request for a disabled entry, a channels-only rule and a protocol-free rule.
const char* kConfig = R"({"version": 1, "rules": [
  {"coll": "allreduce", "min_bytes": 0, "max_bytes": 65535, "algo": "tree", "proto": "simple", "channels": 2},
  {"coll": "allreduce", "min_bytes": 65536, "max_bytes": -1, "algo": "ring", "proto": "ll128", "channels": 0},
  {"coll": "allgather", "min_bytes": 0, "max_bytes": -1, "algo": "nvls", "proto": "simple", "channels": 4},
  {"coll": "broadcast", "min_bytes": 0, "max_bytes": -1, "algo": "any", "proto": "any", "channels": 3},
  {"coll": "reduce", "min_bytes": 0, "max_bytes": -1, "algo": "tree", "proto": "any", "channels": 0}
]})";

struct Outcome {
  int algo, proto, nChannels;
  bool operator==(const Outcome&) const = default;
};

std::ostream& operator<<(std::ostream& os, const Outcome& o) {
  return os << "{algo " << o.algo << ", proto " << o.proto << ", ch " << o.nChannels << "}";
}

class TunerVersion : public PluginTest, public ::testing::WithParamInterface<int> {
 protected:
  void SetUp() override {
    PluginTest::SetUp();
    std::string why;
    tuner_ = Tuner::loadVersion(pluginHandle(), GetParam(), &why);
    ASSERT_NE(tuner_, nullptr) << why;
    ASSERT_EQ(tuner_->version(), GetParam());
    EXPECT_STREQ(tuner_->name(), "wirewise");
  }
  void* initComm(uint64_t commId = 0xabc, size_t nRanks = 16, size_t nNodes = 2) {
    void* ctx = nullptr;
    ncclNvlDomainInfo_v5_t nvl{2, 8, 8};
    ncclTunerConstants_v5_t constants{};
    EXPECT_EQ(tuner_->init(&ctx, commId, nRanks, nNodes, nullptr, &nvl, &constants), ncclSuccess);
    EXPECT_NE(ctx, nullptr);
    return ctx;
  }
  Outcome run(void* ctx, ncclFunc_t coll, size_t bytes, CostTable t = typicalTable()) {
    int nChannels = -7;  // the loader must pre-set 0, as NCCL does
    EXPECT_EQ(tuner_->getCollInfo(ctx, coll, bytes, 1, t.cells, 0, &nChannels), ncclSuccess);
    Selection s = loader::selectAlgo(t.cells, nChannels, kNcclDefaultChannels, kComm);
    EXPECT_TRUE(s.ok);
    return {s.algo, s.proto, s.nChannels};
  }
  std::unique_ptr<Tuner> tuner_;
};

TEST_P(TunerVersion, WithoutConfigurationNcclChoiceStandsBitForBit) {
  void* ctx = initComm();
  for (int coll = 0; coll < 5; ++coll) {
    for (size_t bytes : {size_t{0}, size_t{1}, size_t{4096}, size_t{1} << 20, size_t{1} << 34}) {
      CostTable before = typicalTable(), after = typicalTable();
      int nChannels = 0;
      ASSERT_EQ(tuner_->getCollInfo(ctx, static_cast<ncclFunc_t>(coll), bytes, 1, after.cells, 0, &nChannels),
                ncclSuccess);
      EXPECT_EQ(std::memcmp(before.cells, after.cells, sizeof before.cells), 0);
      EXPECT_EQ(nChannels, 0);
    }
  }
  EXPECT_EQ(tuner_->finalize(ctx), ncclSuccess);
}

TEST_P(TunerVersion, StaticTableDecidesWhatNcclRuns) {
  useConfig(kConfig);
  void* ctx = initComm();
  const bool v2 = GetParam() == 2;
  // Full override with a channel count.
  EXPECT_EQ(run(ctx, ncclFuncAllReduce, 1024), (Outcome{NCCL_ALGO_TREE, NCCL_PROTO_SIMPLE, 2}));
  EXPECT_EQ(run(ctx, ncclFuncAllReduce, 65535), (Outcome{NCCL_ALGO_TREE, NCCL_PROTO_SIMPLE, 2}));
  // Full override, channels left to NCCL (0 -> NCCL's own count).
  EXPECT_EQ(run(ctx, ncclFuncAllReduce, 65536), (Outcome{NCCL_ALGO_RING, NCCL_PROTO_LL128, kNcclDefaultChannels}));
  // NVLS is disabled (-1) in NCCL's table: never enabled, NCCL's choice and channels stand.
  EXPECT_EQ(run(ctx, ncclFuncAllGather, 1 << 20), (Outcome{NCCL_ALGO_RING, NCCL_PROTO_LL, kNcclDefaultChannels}));
  // Channels only: NCCL's algorithm and protocol, our channel count.
  EXPECT_EQ(run(ctx, ncclFuncBroadcast, 1 << 20), (Outcome{NCCL_ALGO_RING, NCCL_PROTO_LL, 3}));
  // Tree with any protocol: the cheapest Tree entry by NCCL's own costs (LL128 = 15). v2 has no costs to
  // compare, so such a rule keeps NCCL's choice there.
  Outcome reduce = run(ctx, ncclFuncReduce, 4096);
  if (v2)
    EXPECT_EQ(reduce, (Outcome{NCCL_ALGO_RING, NCCL_PROTO_LL, kNcclDefaultChannels}));
  else
    EXPECT_EQ(reduce, (Outcome{NCCL_ALGO_TREE, NCCL_PROTO_LL128, kNcclDefaultChannels}));
  // No rule for ReduceScatter.
  EXPECT_EQ(run(ctx, ncclFuncReduceScatter, 4096), (Outcome{NCCL_ALGO_RING, NCCL_PROTO_LL, kNcclDefaultChannels}));
  EXPECT_EQ(tuner_->finalize(ctx), ncclSuccess);
}

TEST_P(TunerVersion, NeverEnablesAnEntryNcclDisabled) {
  useConfig(kConfig);
  void* ctx = initComm();
  std::mt19937 rng(GetParam());
  for (int i = 0; i < 2000; ++i) {
    CostTable t;
    for (auto& row : t.cells)
      for (float& c : row) c = (rng() % 3 == 0) ? -1.0f : static_cast<float>(1 + rng() % 1000);
    t.cells[NCCL_ALGO_RING][NCCL_PROTO_SIMPLE] = 500;  // NCCL always leaves something enabled
    CostTable before = t;
    int nChannels = 0;
    auto coll = static_cast<ncclFunc_t>(rng() % 5);
    size_t bytes = size_t{1} << (rng() % 30);
    ASSERT_EQ(tuner_->getCollInfo(ctx, coll, bytes, 1, t.cells, 0, &nChannels), ncclSuccess);
    for (int a = 0; a < NCCL_NUM_ALGORITHMS; ++a)
      for (int p = 0; p < NCCL_NUM_PROTOCOLS; ++p)
        if (before.cells[a][p] < 0) {
          ASSERT_EQ(t.cells[a][p], -1.0f) << "entry " << a << "/" << p << " enabled";
        }
    ASSERT_GE(nChannels, 0);
    ASSERT_LE(nChannels, 64);
    ASSERT_TRUE(loader::selectAlgo(t.cells, nChannels, kNcclDefaultChannels, kComm).ok);
  }
  EXPECT_EQ(tuner_->finalize(ctx), ncclSuccess);
}

TEST_P(TunerVersion, BadConfigurationNeverFailsInit) {
  useConfig("allreduce,0,100,warp,ll,1,-1,-1\nthis is not a table\n", "nccl_tuner.conf");
  void* ctx = initComm();
  EXPECT_EQ(run(ctx, ncclFuncAllReduce, 64), (Outcome{NCCL_ALGO_RING, NCCL_PROTO_LL, kNcclDefaultChannels}));
  EXPECT_EQ(tuner_->finalize(ctx), ncclSuccess);
  auto problems = logEvents("config_problem");
  ASSERT_GE(problems.size(), 2u);
  EXPECT_EQ(problems[0]["line"], 1);
  EXPECT_EQ(problems[1]["line"], 2);
}

TEST_P(TunerVersion, ConcurrentCallsFromManyThreadsAndCommsAgree) {
  useConfig(kConfig);
  constexpr int kComms = 4, kThreadsPerComm = 3, kCalls = 3000;
  std::vector<void*> ctx;
  for (int c = 0; c < kComms; ++c) ctx.push_back(initComm(0x100 + c));
  auto sizeFor = [](int i) { return size_t{1} << (i % 28); };
  std::vector<Outcome> expected;
  for (int i = 0; i < kCalls; ++i) expected.push_back(run(ctx[0], static_cast<ncclFunc_t>(i % 5), sizeFor(i)));
  std::atomic<int> mismatches{0};
  std::vector<std::thread> threads;
  for (int c = 0; c < kComms; ++c) {
    for (int t = 0; t < kThreadsPerComm; ++t) {
      threads.emplace_back([&, c] {
        for (int i = 0; i < kCalls; ++i) {
          CostTable table = typicalTable();
          int nChannels = 0;
          tuner_->getCollInfo(ctx[c], static_cast<ncclFunc_t>(i % 5), sizeFor(i), 1, table.cells, 0, &nChannels);
          Selection s = loader::selectAlgo(table.cells, nChannels, kNcclDefaultChannels, kComm);
          if (!(Outcome{s.algo, s.proto, s.nChannels} == expected[i])) mismatches++;
        }
      });
    }
  }
  for (auto& th : threads) th.join();
  EXPECT_EQ(mismatches.load(), 0);
  for (void* x : ctx) EXPECT_EQ(tuner_->finalize(x), ncclSuccess);
}

TEST_P(TunerVersion, NullArgumentsAreHarmless) {
  CostTable t = typicalTable();
  int nChannels = 0;
  EXPECT_EQ(tuner_->getCollInfo(nullptr, ncclFuncAllReduce, 1024, 1, t.cells, 0, &nChannels), ncclSuccess);
  EXPECT_EQ(tuner_->finalize(nullptr), ncclSuccess);
}

INSTANTIATE_TEST_SUITE_P(EveryExportedVersion, TunerVersion, ::testing::Values(7, 6, 5, 4, 3, 2),
                         [](const auto& param) { return "v" + std::to_string(param.param); });

TEST_F(PluginTest, EachNcclReleasePicksTheNewestFaceItKnows) {
  const std::pair<loader::NcclRelease, int> expected[] = {{loader::NcclRelease::V2_28, 5},
                                                          {loader::NcclRelease::V2_29, 5},
                                                          {loader::NcclRelease::V2_30, 6},
                                                          {loader::NcclRelease::V2_32, 7}};
  for (auto [release, version] : expected) {
    std::string why;
    auto t = Tuner::load(pluginHandle(), &why, release);
    ASSERT_NE(t, nullptr) << why;
    EXPECT_EQ(t->version(), version) << loader::releaseName(release);
    EXPECT_EQ(t->hasChunkSize(), version >= 6) << loader::releaseName(release);
  }
}

TEST_F(PluginTest, OutOfRangeInputsKeepNcclChoice) {
  useConfig(kConfig);
  std::string why;
  auto tuner = Tuner::loadVersion(pluginHandle(), 5, &why);
  ASSERT_NE(tuner, nullptr) << why;
  void* ctx = nullptr;
  ASSERT_EQ(tuner->init(&ctx, 1, 8, 1, nullptr, nullptr, nullptr), ncclSuccess);
  // collType values NCCL never tunes (SendRecv, AlltoAll, past ncclNumFuncs) and a cut-down table must change
  // nothing. Only values the C++ enum can hold (0..15): passing another is undefined behaviour (UBSan says so).
  for (int coll : {5, 6, 8, 10, 11, 12, 15}) {
    CostTable t = typicalTable(), before = typicalTable();
    int nChannels = 0;
    ASSERT_EQ(tuner->getCollInfo(ctx, static_cast<ncclFunc_t>(coll), 1024, 1, t.cells, 0, &nChannels), ncclSuccess);
    EXPECT_EQ(std::memcmp(t.cells, before.cells, sizeof t.cells), 0) << coll;
    EXPECT_EQ(nChannels, 0);
  }
  EXPECT_EQ(tuner->finalize(ctx), ncclSuccess);
}

TEST_F(PluginTest, LogRecordsLifecycleAndTable) {
  useConfig(kConfig);
  std::string why;
  auto tuner = Tuner::loadVersion(pluginHandle(), 5, &why);
  ASSERT_NE(tuner, nullptr) << why;
  void* ctx = nullptr;
  ASSERT_EQ(tuner->init(&ctx, 0xfeed, 16, 2, nullptr, nullptr, nullptr), ncclSuccess);
  for (int i = 0; i < 10; ++i) {
    CostTable t = typicalTable();
    int nChannels = 0;
    tuner->getCollInfo(ctx, ncclFuncAllReduce, 1024, 1, t.cells, 0, &nChannels);
  }
  CostTable t = typicalTable();
  int nChannels = 0;
  tuner->getCollInfo(ctx, ncclFuncAllGather, 1024, 1, t.cells, 0, &nChannels);  // NVLS disabled -> kept
  ASSERT_EQ(tuner->finalize(ctx), ncclSuccess);

  auto inits = logEvents("comm_init");
  ASSERT_EQ(inits.size(), 1u);
  EXPECT_EQ(inits[0]["comm"], "0x000000000000feed");
  EXPECT_EQ(inits[0]["abi"], "tuner_v5");
  EXPECT_EQ(inits[0]["nranks"], 16);
  auto tables = logEvents("table");
  ASSERT_EQ(tables.size(), 1u);
  EXPECT_EQ(tables[0]["source"], dir_ + "/table.json");
  EXPECT_EQ(tables[0]["reason"], "init");
  EXPECT_EQ(tables[0]["ranges"].size(), 5u);
  auto fin = logEvents("comm_finalize");
  ASSERT_EQ(fin.size(), 1u);
  EXPECT_EQ(fin[0]["collectives"], 11);
  EXPECT_EQ(fin[0]["applied"], 10);
  EXPECT_EQ(fin[0]["kept"], 1);
  EXPECT_EQ(logEvents("plugin_start").size(), 1u);
  EXPECT_EQ(logEvents("plugin_stop").size(), 1u);
}

// NCCL's logger stand-in: the plugin keeps the first non-null logger of the process.
std::mutex gLogMu;
std::vector<std::pair<int, std::string>> gLogLines;
void captureLog(ncclDebugLogLevel level, unsigned long, const char*, int, const char* fmt, ...) {
  char buf[2048];
  va_list ap;
  va_start(ap, fmt);
  std::vsnprintf(buf, sizeof buf, fmt, ap);
  va_end(ap);
  std::lock_guard<std::mutex> lock(gLogMu);
  gLogLines.emplace_back(level, buf);
}

TEST_F(PluginTest, BadSettingsAndLinesWarnThroughNcclsLoggerAndInitStillSucceeds) {
  setenv("WIREWISE_SUMMARY_MS", "fast", 1);
  useConfig("allreduce,0,100,warp,ll,1,-1,-1\n", "bad.conf");
  std::string why;
  auto tuner = Tuner::loadVersion(pluginHandle(), 5, &why);
  void* ctx = nullptr;
  ASSERT_EQ(tuner->init(&ctx, 3, 8, 1, captureLog, nullptr, nullptr), ncclSuccess);
  ASSERT_NE(ctx, nullptr);
  EXPECT_EQ(tuner->finalize(ctx), ncclSuccess);
  unsetenv("WIREWISE_SUMMARY_MS");
  std::lock_guard<std::mutex> lock(gLogMu);
  auto warned = [](const std::vector<std::string>& parts) {
    for (const auto& [level, text] : gLogLines) {
      bool all = level == NCCL_LOG_WARN;
      for (const auto& p : parts) all = all && text.find(p) != std::string::npos;
      if (all) return true;
    }
    return false;
  };
  EXPECT_TRUE(warned({"WIREWISE_SUMMARY_MS", "\"fast\"", "100 .. 3600000"}));
  EXPECT_TRUE(warned({"bad.conf:1", "warp"}));
}

TEST_F(PluginTest, ObserveModeNeverChangesAnything) {
  useConfig(kConfig);
  setenv("WIREWISE_MODE", "observe", 1);
  std::string why;
  auto tuner = Tuner::loadVersion(pluginHandle(), 5, &why);
  void* ctx = nullptr;
  ASSERT_EQ(tuner->init(&ctx, 2, 8, 1, nullptr, nullptr, nullptr), ncclSuccess);
  CostTable t = typicalTable(), before = typicalTable();
  int nChannels = 0;
  tuner->getCollInfo(ctx, ncclFuncAllReduce, 1024, 1, t.cells, 0, &nChannels);
  EXPECT_EQ(std::memcmp(t.cells, before.cells, sizeof t.cells), 0);
  EXPECT_EQ(nChannels, 0);
  EXPECT_EQ(tuner->finalize(ctx), ncclSuccess);
  unsetenv("WIREWISE_MODE");
}

}  // namespace
}  // namespace wirewise::testing
