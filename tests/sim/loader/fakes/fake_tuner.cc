// A recording fake tuner plugin. FAKE_TUNER_V7/V6/V5/V4/V3/V2 choose which ncclTunerPlugin_vN symbols it exports.
#include "common/nccl/tuner.h"
#include "tests/sim/loader/fakes/fake_record.h"

#define FAKE_EXPORT __attribute__((visibility("default")))

namespace {

FakeTunerRecord rec;
int contextToken;

// Version-independent part of init: remember the args, hand out a context.
[[maybe_unused]] ncclResult_t recordInit(int version, size_t nRanks, size_t nNodes, ncclDebugLogger_t log, void** ctx) {
  ++rec.initCalls;
  rec.lastEntryVersion = version;
  rec.nRanks = nRanks;
  rec.nNodes = nNodes;
  rec.logFn = reinterpret_cast<const void*>(log);
  if (rec.initResult != ncclSuccess) return rec.initResult;
  *ctx = &contextToken;
  rec.ctxGiven = *ctx;
  return ncclSuccess;
}

// Version-independent part of getCollInfo for the table-based versions (v3-v5).
[[maybe_unused]] ncclResult_t recordColl(int version, void* ctx, ncclFunc_t coll, size_t nBytes, int numPipeOps,
                                         float** table, int numAlgo, int numProto, int* nChannels) {
  ++rec.collCalls;
  rec.lastEntryVersion = version;
  rec.collCtx = ctx;
  rec.coll = coll;
  rec.nBytes = nBytes;
  rec.numPipeOps = numPipeOps;
  rec.numAlgo = numAlgo;
  rec.numProto = numProto;
  rec.nChannelsOnEntry = *nChannels;
  rec.tableArg = table;
  // The table is a flat float[numAlgo][numProto]; reading it as float** would fault or return garbage.
  float* flat = reinterpret_cast<float*>(table);
  for (int i = 0; i < numAlgo * numProto && i < 21; ++i) rec.tableSeen[i] = flat[i];
  if (rec.writeAlgo >= 0) flat[rec.writeAlgo * numProto + rec.writeProto] = rec.writeValue;
  *nChannels = rec.replyChannels;
  return rec.collResult;
}

[[maybe_unused]] ncclResult_t recordFinalize(int version, void* ctx) {
  ++rec.finalizeCalls;
  rec.lastEntryVersion = version;
  rec.finalizeCtx = ctx;
  return ncclSuccess;
}

[[maybe_unused]] ncclResult_t recordChunk(int version, ncclFunc_t coll, size_t nBytes, int algo, int proto,
                                          int nChannels, size_t* chunkSize) {
  ++rec.chunkCalls;
  rec.lastEntryVersion = version;
  rec.chunkColl = coll;
  rec.chunkBytes = nBytes;
  rec.chunkAlgo = algo;
  rec.chunkProto = proto;
  rec.chunkChannels = nChannels;
  rec.chunkOnEntry = *chunkSize;
  if (rec.replyChunk != 0) *chunkSize = rec.replyChunk;
  return rec.chunkResult;
}

}  // namespace

extern "C" FAKE_EXPORT FakeTunerRecord* fakeTunerRecord() { return &rec; }

#ifdef FAKE_TUNER_V7
extern "C" {
FAKE_EXPORT ncclTuner_v7_t ncclTunerPlugin_v7 = {
    "fake-v7",
    [](void** ctx, uint64_t commId, size_t nRanks, size_t nNodes, ncclDebugLogger_t log, ncclNvlDomainInfo_v7_t* nvl,
       ncclTunerConstants_v7_t* constants) {
      rec.commId = commId;
      rec.nvl = nvl;
      rec.constants = constants;
      if (constants != nullptr) {
        rec.v7LlMaxBw31 = constants->llMaxBws[3][1];
        rec.v7LlMaxBw41 = constants->llMaxBws[4][1];
        if (rec.v7WriteLlMaxBw00 != 0) constants->llMaxBws[0][0] = rec.v7WriteLlMaxBw00;
      }
      return recordInit(7, nRanks, nNodes, log, ctx);
    },
    [](void* ctx, ncclFunc_t coll, size_t nBytes, int numPipeOps, float** table, int numAlgo, int numProto,
       int regBuff, int* nChannels) {
      rec.regBuff = regBuff;
      return recordColl(7, ctx, coll, nBytes, numPipeOps, table, numAlgo, numProto, nChannels);
    },
    [](void* ctx) { return recordFinalize(7, ctx); },
    [](void*, ncclFunc_t coll, size_t nBytes, int algo, int proto, int nChannels, size_t* chunkSize) {
      return recordChunk(7, coll, nBytes, algo, proto, nChannels, chunkSize);
    }};
}
#endif

#ifdef FAKE_TUNER_V6
extern "C" {
FAKE_EXPORT ncclTuner_v6_t ncclTunerPlugin_v6 = {
    "fake-v6",
    [](void** ctx, uint64_t commId, size_t nRanks, size_t nNodes, ncclDebugLogger_t log, ncclNvlDomainInfo_v6_t* nvl,
       ncclTunerConstants_v6_t* constants) {
      rec.commId = commId;
      rec.nvl = nvl;
      rec.constants = constants;
      return recordInit(6, nRanks, nNodes, log, ctx);
    },
    [](void* ctx, ncclFunc_t coll, size_t nBytes, int numPipeOps, float** table, int numAlgo, int numProto,
       int regBuff, int* nChannels) {
      rec.regBuff = regBuff;
      return recordColl(6, ctx, coll, nBytes, numPipeOps, table, numAlgo, numProto, nChannels);
    },
    [](void* ctx) { return recordFinalize(6, ctx); },
    [](void*, ncclFunc_t coll, size_t nBytes, int algo, int proto, int nChannels, size_t* chunkSize) {
      return recordChunk(6, coll, nBytes, algo, proto, nChannels, chunkSize);
    }};
}
#endif

#ifdef FAKE_TUNER_V5
extern "C" {
FAKE_EXPORT ncclTuner_v5_t ncclTunerPlugin_v5 = {
    "fake-v5",
    [](void** ctx, uint64_t commId, size_t nRanks, size_t nNodes, ncclDebugLogger_t log, ncclNvlDomainInfo_v5_t* nvl,
       ncclTunerConstants_v5_t* constants) {
      rec.commId = commId;
      rec.nvl = nvl;
      rec.constants = constants;
      return recordInit(5, nRanks, nNodes, log, ctx);
    },
    [](void* ctx, ncclFunc_t coll, size_t nBytes, int numPipeOps, float** table, int numAlgo, int numProto,
       int regBuff, int* nChannels) {
      rec.regBuff = regBuff;
      return recordColl(5, ctx, coll, nBytes, numPipeOps, table, numAlgo, numProto, nChannels);
    },
    [](void* ctx) { return recordFinalize(5, ctx); }};
}
#endif

#ifdef FAKE_TUNER_V4
extern "C" {
FAKE_EXPORT ncclTuner_v4_t ncclTunerPlugin_v4 = {
    "fake-v4",
    [](size_t nRanks, size_t nNodes, ncclDebugLogger_t log, void** ctx) {
      return recordInit(4, nRanks, nNodes, log, ctx);
    },
    [](void* ctx, ncclFunc_t coll, size_t nBytes, int numPipeOps, float** table, int numAlgo, int numProto,
       int regBuff, int* nChannels) {
      rec.regBuff = regBuff;
      return recordColl(4, ctx, coll, nBytes, numPipeOps, table, numAlgo, numProto, nChannels);
    },
    [](void* ctx) { return recordFinalize(4, ctx); }};
}
#endif

#ifdef FAKE_TUNER_V3
extern "C" {
FAKE_EXPORT ncclTuner_v3_t ncclTunerPlugin_v3 = {
    "fake-v3",
    [](size_t nRanks, size_t nNodes, ncclDebugLogger_t log, void** ctx) {
      return recordInit(3, nRanks, nNodes, log, ctx);
    },
    [](void* ctx, ncclFunc_t coll, size_t nBytes, int numPipeOps, float** table, int numAlgo, int numProto,
       int* nChannels) { return recordColl(3, ctx, coll, nBytes, numPipeOps, table, numAlgo, numProto, nChannels); },
    [](void* ctx) { return recordFinalize(3, ctx); }};
}
#endif

#ifdef FAKE_TUNER_V2
extern "C" {
FAKE_EXPORT ncclTuner_v2_t ncclTunerPlugin_v2 = {
    "fake-v2",
    [](size_t nRanks, size_t nNodes, ncclDebugLogger_t log, void** ctx) {
      return recordInit(2, nRanks, nNodes, log, ctx);
    },
    [](void* ctx, ncclFunc_t coll, size_t nBytes, int collNetSupport, int nvlsSupport, int numPipeOps, int* algorithm,
       int* protocol, int* nChannels) {
      ++rec.collCalls;
      rec.lastEntryVersion = 2;
      rec.collCtx = ctx;
      rec.coll = coll;
      rec.nBytes = nBytes;
      rec.numPipeOps = numPipeOps;
      rec.collNetSupport = collNetSupport;
      rec.nvlsSupport = nvlsSupport;
      rec.nChannelsOnEntry = *nChannels;
      *algorithm = rec.replyAlgo;
      *protocol = rec.replyProto;
      *nChannels = rec.replyChannels;
      return rec.collResult;
    },
    [](void* ctx) { return recordFinalize(2, ctx); }};
}
#endif
