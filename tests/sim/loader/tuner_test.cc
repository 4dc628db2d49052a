// Tuner version shims against recording fake plugins: symbol order per NCCL release, argument orders, the flat
// cost table, nChannels pre-set, v3's missing regBuff, v2's (algo, proto) mapping, v7's constants and the
// chunk-size step of v6/v7.
#include <dlfcn.h>
#include <gtest/gtest.h>

#include "sim/loader/nccl_loader.h"
#include "tests/sim/loader/loader_test_util.h"

namespace wirewise::loader {
namespace {

using testing::testLogger;

// One fake library opened for a test, with its record reset.
class FakeTuner {
 public:
  explicit FakeTuner(const char* path) : handle_(dlopen(path, RTLD_NOW | RTLD_LOCAL)) {
    if (handle_ == nullptr) return;
    rec_ = testing::tunerRecord(handle_);
    if (rec_ != nullptr) *rec_ = FakeTunerRecord{};
    tuner_ = Tuner::load(handle_, &why_);
  }
  ~FakeTuner() {
    tuner_.reset();
    if (handle_ != nullptr) dlclose(handle_);
  }
  const Tuner* tuner() const { return tuner_.get(); }
  FakeTunerRecord* rec() const { return rec_; }
  const std::string& why() const { return why_; }

 private:
  void* handle_;
  FakeTunerRecord* rec_ = nullptr;
  std::unique_ptr<Tuner> tuner_;
  std::string why_;
};

// A table with a distinct value in every cell (so a mis-indexed read shows), some cells disabled.
void fillTable(float t[7][3]) {
  for (int a = 0; a < 7; ++a)
    for (int p = 0; p < 3; ++p) t[a][p] = 10.0f * static_cast<float>(a) + static_cast<float>(p) + 0.5f;
}

TEST(TunerLoad, PrefersTheNewestVersion) {
  struct Case {
    const char* path;
    int version;
    const char* name;
  } cases[] = {{WW_FAKE_TUNER_V54, 5, "fake-v5"},
               {WW_FAKE_TUNER_V432, 4, "fake-v4"},
               {WW_FAKE_TUNER_V32, 3, "fake-v3"},
               {WW_FAKE_TUNER_V2, 2, "fake-v2"}};
  for (const Case& c : cases) {
    FakeTuner f(c.path);
    ASSERT_NE(f.tuner(), nullptr) << c.path << ": " << f.why();
    EXPECT_EQ(f.tuner()->version(), c.version) << c.path;
    EXPECT_STREQ(f.tuner()->name(), c.name);
  }
}

TEST(TunerLoad, LibraryWithoutSymbolsIsUnsupported) {
  FakeTuner f(WW_FAKE_EMPTY);
  EXPECT_EQ(f.tuner(), nullptr);
  EXPECT_NE(f.why().find("unsupported"), std::string::npos);
  std::string why;
  EXPECT_EQ(Tuner::load(nullptr, &why), nullptr);
}

TEST(TunerLoad, CallsReachTheChosenVersionOnly) {
  FakeTuner f(WW_FAKE_TUNER_V54);
  ASSERT_NE(f.tuner(), nullptr);
  void* ctx = nullptr;
  ASSERT_EQ(f.tuner()->init(&ctx, 1, 2, 1, testLogger, nullptr, nullptr), ncclSuccess);
  EXPECT_EQ(f.rec()->lastEntryVersion, 5);
}

TEST(TunerV5, InitPassesEverythingInOrder) {
  FakeTuner f(WW_FAKE_TUNER_V5);
  ASSERT_NE(f.tuner(), nullptr);
  ncclNvlDomainInfo_v5_t nvl{1, 8, 8};
  ncclTunerConstants_v5_t constants{};
  void* ctx = nullptr;
  ASSERT_EQ(f.tuner()->init(&ctx, 0xabcdef12345ULL, 16, 2, testLogger, &nvl, &constants), ncclSuccess);
  const FakeTunerRecord& r = *f.rec();
  EXPECT_EQ(r.commId, 0xabcdef12345ULL);
  EXPECT_EQ(r.nRanks, 16u);
  EXPECT_EQ(r.nNodes, 2u);
  EXPECT_EQ(r.logFn, reinterpret_cast<const void*>(&testLogger));
  EXPECT_EQ(r.nvl, &nvl);
  EXPECT_EQ(r.constants, &constants);
  EXPECT_EQ(ctx, r.ctxGiven);
  ASSERT_EQ(f.tuner()->finalize(ctx), ncclSuccess);
  EXPECT_EQ(r.finalizeCalls, 1);
  EXPECT_EQ(r.finalizeCtx, ctx);
}

TEST(TunerV5, GetCollInfoSeesTheFlatTableAndReturnsThroughIt) {
  FakeTuner f(WW_FAKE_TUNER_V5);
  ASSERT_NE(f.tuner(), nullptr);
  void* ctx = nullptr;
  ASSERT_EQ(f.tuner()->init(&ctx, 7, 8, 1, testLogger, nullptr, nullptr), ncclSuccess);
  FakeTunerRecord& r = *f.rec();
  r.writeAlgo = NCCL_ALGO_TREE;
  r.writeProto = NCCL_PROTO_LL128;
  r.writeValue = 0.25f;
  r.replyChannels = 12;
  float table[7][3];
  fillTable(table);
  table[NCCL_ALGO_NVLS][NCCL_PROTO_LL] = -1.0f;
  int nChannels = 99;
  ASSERT_EQ(f.tuner()->getCollInfo(ctx, ncclFuncAllReduce, 1 << 20, 3, table, 1, &nChannels), ncclSuccess);
  EXPECT_EQ(r.collCtx, ctx);
  EXPECT_EQ(r.coll, ncclFuncAllReduce);
  EXPECT_EQ(r.nBytes, 1u << 20);
  EXPECT_EQ(r.numPipeOps, 3);
  EXPECT_EQ(r.numAlgo, 7);
  EXPECT_EQ(r.numProto, 3);
  EXPECT_EQ(r.regBuff, 1);
  EXPECT_EQ(r.nChannelsOnEntry, 0) << "NCCL pre-sets nChannels to 0";
  EXPECT_EQ(r.tableArg, &table[0][0]);
  for (int a = 0; a < 7; ++a) {
    for (int p = 0; p < 3; ++p) {
      const float expected = (a == NCCL_ALGO_NVLS && p == NCCL_PROTO_LL) ? -1.0f : 10.0f * a + p + 0.5f;
      EXPECT_EQ(r.tableSeen[a * 3 + p], expected) << a << "," << p;
    }
  }
  EXPECT_EQ(table[NCCL_ALGO_TREE][NCCL_PROTO_LL128], 0.25f) << "plugin writes land in the caller's table";
  EXPECT_EQ(nChannels, 12);
}

TEST(TunerV5, ErrorsPropagate) {
  FakeTuner f(WW_FAKE_TUNER_V5);
  ASSERT_NE(f.tuner(), nullptr);
  f.rec()->initResult = ncclInternalError;
  void* ctx = nullptr;
  EXPECT_EQ(f.tuner()->init(&ctx, 1, 2, 1, testLogger, nullptr, nullptr), ncclInternalError);
  f.rec()->collResult = ncclInvalidUsage;
  float table[7][3];
  fillTable(table);
  int nChannels = 0;
  EXPECT_EQ(f.tuner()->getCollInfo(nullptr, ncclFuncBroadcast, 8, 1, table, 0, &nChannels), ncclInvalidUsage);
}

TEST(TunerRelease, EachReleaseTriesItsOwnNewestVersionFirst) {
  void* handle = dlopen(WW_FAKE_TUNER_V765, RTLD_NOW | RTLD_LOCAL);
  ASSERT_NE(handle, nullptr) << dlerror();
  const std::pair<NcclRelease, int> expected[] = {
      {NcclRelease::V2_28, 5}, {NcclRelease::V2_29, 5}, {NcclRelease::V2_30, 6}, {NcclRelease::V2_32, 7}};
  for (auto [release, version] : expected) {
    std::string why;
    auto t = Tuner::load(handle, &why, release);
    ASSERT_NE(t, nullptr) << why;
    EXPECT_EQ(t->version(), version) << releaseName(release);
    EXPECT_EQ(newestTunerVersion(release), version) << releaseName(release);
    EXPECT_EQ(t->hasChunkSize(), version >= 6);
  }
  // A v5-only plugin still loads under every release.
  void* v5 = dlopen(WW_FAKE_TUNER_V5, RTLD_NOW | RTLD_LOCAL);
  ASSERT_NE(v5, nullptr) << dlerror();
  for (NcclRelease release : kAllReleases) {
    std::string why;
    auto t = Tuner::load(v5, &why, release);
    ASSERT_NE(t, nullptr) << why;
    EXPECT_EQ(t->version(), 5);
    EXPECT_FALSE(t->hasChunkSize());
  }
  dlclose(v5);
  dlclose(handle);
}

TEST(TunerV7, InitGetsFiveRowsOfConstantsAndItsChangesComeBack) {
  void* handle = dlopen(WW_FAKE_TUNER_V765, RTLD_NOW | RTLD_LOCAL);
  ASSERT_NE(handle, nullptr) << dlerror();
  FakeTunerRecord& r = *testing::tunerRecord(handle);
  r = FakeTunerRecord{};
  r.v7WriteLlMaxBw00 = 42.0;
  std::string why;
  auto t = Tuner::load(handle, &why, NcclRelease::V2_32);
  ASSERT_NE(t, nullptr) << why;
  ncclTunerConstants_v5_t constants{};
  constants.llMaxBws[3][1] = 7.5;
  void* ctx = nullptr;
  ASSERT_EQ(t->init(&ctx, 5, 8, 1, testLogger, nullptr, &constants), ncclSuccess);
  EXPECT_EQ(r.lastEntryVersion, 7);
  EXPECT_EQ(r.v7LlMaxBw31, 7.5);
  EXPECT_EQ(r.v7LlMaxBw41, 7.5) << "the fifth row starts as a copy of the fourth";
  EXPECT_EQ(constants.llMaxBws[0][0], 42.0) << "what the plugin wrote reaches NCCL's four rows";
  EXPECT_EQ(t->finalize(ctx), ncclSuccess);
  EXPECT_EQ(r.lastEntryVersion, 7);
  t.reset();
  dlclose(handle);
}

TEST(TunerV6, ChunkSizeIsPrefilledThenClampedCastAndRoundedToTheGrain) {
  void* handle = dlopen(WW_FAKE_TUNER_V765, RTLD_NOW | RTLD_LOCAL);
  ASSERT_NE(handle, nullptr) << dlerror();
  FakeTunerRecord& r = *testing::tunerRecord(handle);
  r = FakeTunerRecord{};
  auto t = Tuner::loadVersion(handle, 6, nullptr);
  ASSERT_NE(t, nullptr);
  size_t chunk = 0;
  // The plugin leaves it: NCCL's own value, rounded to Simple's 512 B grain.
  ASSERT_EQ(t->chunkSize(nullptr, ncclFuncAllGather, 3000, NCCL_ALGO_RING, NCCL_PROTO_SIMPLE, 1, 131072, 524288, &chunk),
            ncclSuccess);
  EXPECT_EQ(chunk, 131072u);
  EXPECT_EQ(r.chunkOnEntry, 131072u) << "NCCL pre-fills its own choice";
  EXPECT_EQ(r.chunkColl, ncclFuncAllGather);
  EXPECT_EQ(r.chunkBytes, 3000u);
  EXPECT_EQ(r.chunkAlgo, NCCL_ALGO_RING);
  EXPECT_EQ(r.chunkProto, NCCL_PROTO_SIMPLE);
  EXPECT_EQ(r.chunkChannels, 1);
  EXPECT_EQ(r.lastEntryVersion, 6);
  // Above the buffer's ceiling: clamped.
  r.replyChunk = 10'000'000;
  ASSERT_EQ(t->chunkSize(nullptr, ncclFuncAllReduce, 1 << 20, NCCL_ALGO_RING, NCCL_PROTO_SIMPLE, 1, 131072, 524288,
                         &chunk),
            ncclSuccess);
  EXPECT_EQ(chunk, 524288u);
  // Rounded down to LL128's 1,920 B grain; below the grain it becomes 0, the hazard a plugin must avoid.
  r.replyChunk = 5000;
  ASSERT_EQ(t->chunkSize(nullptr, ncclFuncAllReduce, 1 << 20, NCCL_ALGO_RING, NCCL_PROTO_LL128, 1, 131072, 524288,
                         &chunk),
            ncclSuccess);
  EXPECT_EQ(chunk, 3840u);
  r.replyChunk = 1000;
  ASSERT_EQ(t->chunkSize(nullptr, ncclFuncAllReduce, 1 << 20, NCCL_ALGO_RING, NCCL_PROTO_LL128, 1, 131072, 524288,
                         &chunk),
            ncclSuccess);
  EXPECT_EQ(chunk, 0u);
  // A failure fails the collective.
  r.chunkResult = ncclInvalidUsage;
  EXPECT_EQ(t->chunkSize(nullptr, ncclFuncAllReduce, 8, NCCL_ALGO_RING, NCCL_PROTO_LL, 1, 16, 64, &chunk),
            ncclInvalidUsage);
  // Before v6 NCCL never asks.
  auto v5 = Tuner::loadVersion(handle, 5, nullptr);
  ASSERT_NE(v5, nullptr);
  const int calls = r.chunkCalls;
  ASSERT_EQ(v5->chunkSize(nullptr, ncclFuncAllReduce, 8, NCCL_ALGO_RING, NCCL_PROTO_LL, 1, 4096, 8192, &chunk),
            ncclSuccess);
  EXPECT_EQ(chunk, 4096u);
  EXPECT_EQ(r.chunkCalls, calls);
  t.reset();
  v5.reset();
  dlclose(handle);
}

TEST(TunerV4, InitTakesContextLastAndDropsV5Arguments) {
  FakeTuner f(WW_FAKE_TUNER_V4);
  ASSERT_NE(f.tuner(), nullptr);
  ncclNvlDomainInfo_v5_t nvl{};
  ncclTunerConstants_v5_t constants{};
  void* ctx = nullptr;
  ASSERT_EQ(f.tuner()->init(&ctx, 0x55, 32, 4, testLogger, &nvl, &constants), ncclSuccess);
  const FakeTunerRecord& r = *f.rec();
  EXPECT_EQ(r.lastEntryVersion, 4);
  EXPECT_EQ(r.nRanks, 32u);
  EXPECT_EQ(r.nNodes, 4u);
  EXPECT_EQ(r.logFn, reinterpret_cast<const void*>(&testLogger));
  EXPECT_NE(ctx, nullptr);
  EXPECT_EQ(ctx, r.ctxGiven);
  ASSERT_EQ(f.tuner()->finalize(ctx), ncclSuccess);
  EXPECT_EQ(r.finalizeCtx, ctx) << "finalize maps to destroy";
}

TEST(TunerV4, GetCollInfoPassesRegBuffAndFlatTable) {
  FakeTuner f(WW_FAKE_TUNER_V4);
  ASSERT_NE(f.tuner(), nullptr);
  float table[7][3];
  fillTable(table);
  f.rec()->replyChannels = 5;
  int nChannels = -7;
  ASSERT_EQ(f.tuner()->getCollInfo(nullptr, ncclFuncAllGather, 4096, 1, table, 1, &nChannels), ncclSuccess);
  EXPECT_EQ(f.rec()->regBuff, 1);
  EXPECT_EQ(f.rec()->nChannelsOnEntry, 0);
  EXPECT_EQ(f.rec()->tableSeen[NCCL_ALGO_RING * 3 + NCCL_PROTO_SIMPLE], 12.5f);
  EXPECT_EQ(nChannels, 5);
}

TEST(TunerV3, GetCollInfoHasNoRegBuff) {
  FakeTuner f(WW_FAKE_TUNER_V3);
  ASSERT_NE(f.tuner(), nullptr);
  void* ctx = nullptr;
  ASSERT_EQ(f.tuner()->init(&ctx, 9, 4, 1, testLogger, nullptr, nullptr), ncclSuccess);
  EXPECT_EQ(f.rec()->nRanks, 4u);
  float table[7][3];
  fillTable(table);
  f.rec()->replyChannels = 3;
  f.rec()->writeAlgo = NCCL_ALGO_PAT;
  f.rec()->writeProto = NCCL_PROTO_SIMPLE;
  f.rec()->writeValue = 1.0f;
  int nChannels = 42;
  ASSERT_EQ(f.tuner()->getCollInfo(ctx, ncclFuncReduceScatter, 512, 2, table, 1, &nChannels), ncclSuccess);
  const FakeTunerRecord& r = *f.rec();
  EXPECT_EQ(r.lastEntryVersion, 3);
  EXPECT_EQ(r.regBuff, -1);
  EXPECT_EQ(r.numAlgo, 7);
  EXPECT_EQ(r.numProto, 3);
  EXPECT_EQ(r.nChannelsOnEntry, 0);
  EXPECT_EQ(nChannels, 3) << "nChannels is the 8th argument, not the 9th";
  EXPECT_EQ(table[NCCL_ALGO_PAT][NCCL_PROTO_SIMPLE], 1.0f);
  EXPECT_EQ(f.tuner()->finalize(ctx), ncclSuccess);
  EXPECT_EQ(r.finalizeCalls, 1);
}

TEST(TunerV2, SupportFlagsAreInferredFromTheTable) {
  FakeTuner f(WW_FAKE_TUNER_V2);
  ASSERT_NE(f.tuner(), nullptr);
  float table[7][3];
  int nChannels = 0;
  struct Case {
    float nvlsSimple, nvlsTreeSimple, chainSimple;
    int nvls, collNet;
  } cases[] = {{-1, -1, -1, 0, 0}, {5, -1, -1, 1, 0}, {-1, 5, 7, 1, 1}, {3, 3, 3, 1, 1}};
  for (const Case& c : cases) {
    fillTable(table);
    table[NCCL_ALGO_NVLS][NCCL_PROTO_SIMPLE] = c.nvlsSimple;
    table[NCCL_ALGO_NVLS_TREE][NCCL_PROTO_SIMPLE] = c.nvlsTreeSimple;
    table[NCCL_ALGO_COLLNET_CHAIN][NCCL_PROTO_SIMPLE] = c.chainSimple;
    ASSERT_EQ(f.tuner()->getCollInfo(nullptr, ncclFuncAllReduce, 64, 1, table, 1, &nChannels), ncclSuccess);
    EXPECT_EQ(f.rec()->nvlsSupport, c.nvls);
    EXPECT_EQ(f.rec()->collNetSupport, c.collNet);
  }
  // Only the Simple column counts: disabling NVLS LL alone keeps support.
  fillTable(table);
  table[NCCL_ALGO_COLLNET_CHAIN][NCCL_PROTO_LL] = -1.0f;
  ASSERT_EQ(f.tuner()->getCollInfo(nullptr, ncclFuncAllReduce, 64, 1, table, 1, &nChannels), ncclSuccess);
  EXPECT_EQ(f.rec()->collNetSupport, 1);
}

TEST(TunerV2, AnswerBecomesAZeroCostUnlessDisabledOrOutOfRange) {
  FakeTuner f(WW_FAKE_TUNER_V2);
  ASSERT_NE(f.tuner(), nullptr);
  float table[7][3];
  int nChannels = 0;

  fillTable(table);
  f.rec()->replyAlgo = NCCL_ALGO_RING;
  f.rec()->replyProto = NCCL_PROTO_LL;
  f.rec()->replyChannels = 4;
  ASSERT_EQ(f.tuner()->getCollInfo(nullptr, ncclFuncAllReduce, 1024, 2, table, 0, &nChannels), ncclSuccess);
  EXPECT_EQ(table[NCCL_ALGO_RING][NCCL_PROTO_LL], 0.0f);
  EXPECT_EQ(table[NCCL_ALGO_RING][NCCL_PROTO_SIMPLE], 12.5f) << "other cells untouched";
  EXPECT_EQ(nChannels, 4);
  EXPECT_EQ(f.rec()->nChannelsOnEntry, 0);
  EXPECT_EQ(f.rec()->numPipeOps, 2);
  EXPECT_EQ(f.rec()->nBytes, 1024u);

  fillTable(table);
  table[NCCL_ALGO_TREE][NCCL_PROTO_LL128] = -1.0f;
  f.rec()->replyAlgo = NCCL_ALGO_TREE;
  f.rec()->replyProto = NCCL_PROTO_LL128;
  ASSERT_EQ(f.tuner()->getCollInfo(nullptr, ncclFuncAllReduce, 1024, 1, table, 0, &nChannels), ncclSuccess);
  EXPECT_EQ(table[NCCL_ALGO_TREE][NCCL_PROTO_LL128], -1.0f) << "a disabled choice stays disabled";

  for (const auto& [a, p] : {std::pair{7, 0}, std::pair{-1, 2}, std::pair{0, 3}, std::pair{0, -1}}) {
    fillTable(table);
    float before[7][3];
    fillTable(before);
    f.rec()->replyAlgo = a;
    f.rec()->replyProto = p;
    ASSERT_EQ(f.tuner()->getCollInfo(nullptr, ncclFuncAllReduce, 1024, 1, table, 0, &nChannels), ncclSuccess);
    for (int i = 0; i < 7; ++i)
      for (int j = 0; j < 3; ++j) EXPECT_EQ(table[i][j], before[i][j]) << a << "," << p;
  }
}

TEST(TunerV2, InitAndFinalizeMapToV2Entries) {
  FakeTuner f(WW_FAKE_TUNER_V2);
  ASSERT_NE(f.tuner(), nullptr);
  void* ctx = nullptr;
  ASSERT_EQ(f.tuner()->init(&ctx, 3, 64, 8, testLogger, nullptr, nullptr), ncclSuccess);
  EXPECT_EQ(f.rec()->nRanks, 64u);
  EXPECT_EQ(f.rec()->nNodes, 8u);
  EXPECT_EQ(ctx, f.rec()->ctxGiven);
  EXPECT_EQ(f.tuner()->finalize(ctx), ncclSuccess);
  EXPECT_EQ(f.rec()->finalizeCtx, ctx);
  EXPECT_EQ(f.rec()->lastEntryVersion, 2);
}

}  // namespace
}  // namespace wirewise::loader
