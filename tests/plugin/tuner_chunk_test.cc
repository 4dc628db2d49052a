// Chunk size as a lever (tuner v6/v7, NCCL 2.30+): getChunkSize answers only from the table in force, keeps
// NCCL's pre-filled value where the table says nothing, never answers below the protocol's grain, and answers
// the same for the same collective whatever else the comm did. Driven through the loader's calcCollChunking.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstring>

#include "tests/plugin/plugin_fixture.h"

namespace wirewise::testing {
namespace {

using loader::Tuner;

constexpr size_t kNcclChunk = 131072;    // what NCCL pre-fills (a Simple ring step x chunkSteps, say)
constexpr size_t kBufferMax = 524288;    // NCCL's buffer ceiling for the answer

// Chunk sizes on three ranges: one with a full decision, one with the chunk alone, one below every grain.
const char* kConfig = R"({"version": 1, "rules": [
  {"coll": "allreduce", "min_bytes": 0, "max_bytes": 65535, "algo": "ring", "proto": "simple",
   "chunk_bytes": 1000000},
  {"coll": "allreduce", "min_bytes": 65536, "max_bytes": 1048575, "chunk_bytes": 40000},
  {"coll": "allgather", "min_bytes": 0, "max_bytes": -1, "chunk_bytes": 8},
  {"coll": "reducescatter", "min_bytes": 0, "max_bytes": -1, "algo": "tree", "proto": "ll"}
]})";

class ChunkSize : public PluginTest, public ::testing::WithParamInterface<int> {
 protected:
  void SetUp() override {
    PluginTest::SetUp();
    std::string why;
    tuner_ = Tuner::loadVersion(pluginHandle(), GetParam(), &why);
    ASSERT_NE(tuner_, nullptr) << why;
    ASSERT_TRUE(tuner_->hasChunkSize());
  }
  void* initComm() {
    void* ctx = nullptr;
    ncclTunerConstants_v5_t constants{};
    EXPECT_EQ(tuner_->init(&ctx, 0xc4, 16, 2, nullptr, nullptr, &constants), ncclSuccess);
    EXPECT_NE(ctx, nullptr);
    return ctx;
  }
  // What the kernel would run with for one share of a collective.
  size_t chunk(void* ctx, ncclFunc_t coll, size_t nBytes, int algo, int proto) {
    size_t out = 12345;
    EXPECT_EQ(tuner_->chunkSize(ctx, coll, nBytes, algo, proto, 1, kNcclChunk, kBufferMax, &out), ncclSuccess);
    return out;
  }
  std::unique_ptr<Tuner> tuner_;
};

TEST_P(ChunkSize, WithoutATableNcclsValueStands) {
  void* ctx = initComm();
  for (int proto : {NCCL_PROTO_LL, NCCL_PROTO_LL128, NCCL_PROTO_SIMPLE}) {
    const size_t grain = proto == NCCL_PROTO_LL ? 16 : proto == NCCL_PROTO_LL128 ? 1920 : 512;
    EXPECT_EQ(chunk(ctx, ncclFuncAllReduce, 4096, NCCL_ALGO_RING, proto), kNcclChunk / grain * grain);
  }
  EXPECT_EQ(tuner_->finalize(ctx), ncclSuccess);
}

TEST_P(ChunkSize, TheTableDecidesWithinNcclsLimits) {
  useConfig(kConfig);
  void* ctx = initComm();
  // A full decision matching what NCCL runs: the table's chunk, clamped by NCCL to its buffer.
  EXPECT_EQ(chunk(ctx, ncclFuncAllReduce, 4096, NCCL_ALGO_RING, NCCL_PROTO_SIMPLE), kBufferMax);
  // The same range while NCCL runs something else (the cost table decision did not take): NCCL's chunk.
  EXPECT_EQ(chunk(ctx, ncclFuncAllReduce, 4096, NCCL_ALGO_TREE, NCCL_PROTO_SIMPLE), kNcclChunk);
  // A chunk alone applies to whatever runs, rounded down to the protocol's grain.
  EXPECT_EQ(chunk(ctx, ncclFuncAllReduce, 1 << 17, NCCL_ALGO_RING, NCCL_PROTO_SIMPLE), 40000u / 512 * 512);
  EXPECT_EQ(chunk(ctx, ncclFuncAllReduce, 1 << 17, NCCL_ALGO_TREE, NCCL_PROTO_LL128), 40000u / 1920 * 1920);
  EXPECT_EQ(chunk(ctx, ncclFuncAllReduce, 1 << 17, NCCL_ALGO_RING, NCCL_PROTO_LL), 40000u);
  // Below every grain but LL's: NCCL's value stays (NCCL would round the answer to 0 and divide by it).
  EXPECT_EQ(chunk(ctx, ncclFuncAllGather, 1 << 20, NCCL_ALGO_RING, NCCL_PROTO_SIMPLE), kNcclChunk);
  EXPECT_EQ(chunk(ctx, ncclFuncAllGather, 1 << 20, NCCL_ALGO_RING, NCCL_PROTO_LL128), kNcclChunk / 1920 * 1920);
  EXPECT_EQ(chunk(ctx, ncclFuncAllGather, 1 << 20, NCCL_ALGO_RING, NCCL_PROTO_LL), kNcclChunk);
  // A rule without a chunk size, sizes with no rule, and collectives NCCL never asks about: NCCL's.
  EXPECT_EQ(chunk(ctx, ncclFuncReduceScatter, 4096, NCCL_ALGO_TREE, NCCL_PROTO_LL), kNcclChunk);
  EXPECT_EQ(chunk(ctx, ncclFuncAllReduce, size_t{1} << 30, NCCL_ALGO_RING, NCCL_PROTO_SIMPLE), kNcclChunk);
  EXPECT_EQ(chunk(ctx, static_cast<ncclFunc_t>(7), 4096, NCCL_ALGO_RING, NCCL_PROTO_SIMPLE), kNcclChunk);
  EXPECT_EQ(chunk(ctx, ncclFuncAllReduce, 4096, NCCL_ALGO_RING, 9), kNcclChunk / 512 * 512);
  EXPECT_EQ(tuner_->finalize(ctx), ncclSuccess);
  // The log shows the chunk sizes of the table in force, and only where a range sets one.
  std::vector<uint64_t> logged;
  for (const auto& t : logEvents("table"))
    for (const auto& r : t["ranges"])
      if (r.contains("chunk_bytes")) logged.push_back(r["chunk_bytes"].get<uint64_t>());
  EXPECT_THAT(logged, ::testing::IsSupersetOf({1000000u, 40000u, 8u}));
  for (const auto& t : logEvents("table")) {
    for (const auto& r : t["ranges"]) {
      if (r["coll"] == "reducescatter") {
        EXPECT_FALSE(r.contains("chunk_bytes"));
      }
    }
  }
}

TEST_P(ChunkSize, AChunkAloneLeavesTheCostTableAlone) {
  useConfig(kConfig);
  void* ctx = initComm();
  CostTable before = typicalTable(), after = typicalTable();
  int nChannels = 0;
  ASSERT_EQ(tuner_->getCollInfo(ctx, ncclFuncAllReduce, 1 << 17, 1, after.cells, 0, &nChannels), ncclSuccess);
  EXPECT_EQ(std::memcmp(before.cells, after.cells, sizeof before.cells), 0);
  EXPECT_EQ(nChannels, 0);
  EXPECT_EQ(tuner_->finalize(ctx), ncclSuccess);
}

TEST_P(ChunkSize, SameAnswerForTheSameShareWhateverCameBefore) {
  // Two comms of one process stand for two ranks: one asked about many other shapes first.
  useConfig(kConfig);
  void* a = initComm();
  void* b = initComm();
  for (size_t bytes = 1; bytes < (size_t{1} << 24); bytes = bytes * 3 + 1) chunk(b, ncclFuncAllReduce, bytes, NCCL_ALGO_RING, NCCL_PROTO_SIMPLE);
  for (size_t bytes : {size_t{100}, size_t{65536}, size_t{500000}, size_t{1} << 22})
    for (int proto = 0; proto < 3; ++proto)
      EXPECT_EQ(chunk(a, ncclFuncAllReduce, bytes, NCCL_ALGO_RING, proto),
                chunk(b, ncclFuncAllReduce, bytes, NCCL_ALGO_RING, proto));
  EXPECT_EQ(tuner_->finalize(a), ncclSuccess);
  EXPECT_EQ(tuner_->finalize(b), ncclSuccess);
}

TEST_P(ChunkSize, ObserveModeAndNullArgumentsChangeNothing) {
  useConfig(kConfig);
  setenv("WIREWISE_MODE", "observe", 1);
  void* ctx = initComm();
  EXPECT_EQ(chunk(ctx, ncclFuncAllReduce, 4096, NCCL_ALGO_RING, NCCL_PROTO_SIMPLE), kNcclChunk);
  EXPECT_EQ(tuner_->finalize(ctx), ncclSuccess);
  unsetenv("WIREWISE_MODE");
  EXPECT_EQ(chunk(nullptr, ncclFuncAllReduce, 4096, NCCL_ALGO_RING, NCCL_PROTO_SIMPLE), kNcclChunk);
}

INSTANTIATE_TEST_SUITE_P(TunerV6AndV7, ChunkSize, ::testing::Values(7, 6),
                         [](const auto& param) { return "v" + std::to_string(param.param); });

}  // namespace
}  // namespace wirewise::testing
