// The tuner version shims of NCCL 2.28.9 (src/plugin/tuner/tuner_v{2,3,4,5}.cc) and of 2.30/2.32 (v6, v7), the
// selection that follows getCollInfo (src/enqueue.cc getAlgoInfo/topoGetAlgoInfo, scheduleCollTasksToPlan) and
// 2.30's chunk-size step (calcCollChunking). Facts: §3.1, §3.6, §9.
#include <dlfcn.h>

#include <algorithm>
#include <cstring>

#include "sim/loader/nccl_loader.h"

namespace wirewise::loader {
namespace {

using Table = float[NCCL_NUM_ALGORITHMS][NCCL_NUM_PROTOCOLS];

// The plugin receives the address of the flat array, typed as float** (never an array of row pointers).
float** asPluginTable(Table table) { return reinterpret_cast<float**>(&table[0][0]); }

// NCCL's v2 shim: NVLS is "supported" when either NVLS or NVLS_TREE Simple has a cost.
int inferNvlsSupport(const Table t) {
  return (t[NCCL_ALGO_NVLS][NCCL_PROTO_SIMPLE] != NCCL_ALGO_PROTO_IGNORE ||
          t[NCCL_ALGO_NVLS_TREE][NCCL_PROTO_SIMPLE] != NCCL_ALGO_PROTO_IGNORE)
             ? 1
             : 0;
}

int inferCollNetSupport(const Table t) {
  return t[NCCL_ALGO_COLLNET_CHAIN][NCCL_PROTO_SIMPLE] == NCCL_ALGO_PROTO_IGNORE ? 0 : 1;
}

// comm.h stores nMaxChannels in `int32_t : 8`: keep the low byte, sign-extended.
int storeInSigned8(int v) { return static_cast<int>(static_cast<int8_t>(static_cast<uint8_t>(v & 0xff))); }

// NCCL's ncclProtoGrainSize (device.h), as NCCL's side of the harness states it.
size_t grainBytes(int proto) {
  switch (proto) {
    case NCCL_PROTO_LL:
      return 16;
    case NCCL_PROTO_LL128:
      return 32 * 8 / 16 * 15 * 8;  // warp x elements per thread / line elements x data elements x 8 bytes
    default:
      return 512;
  }
}

// 2.32 hands v7 plugins its own five-row constants; the harness holds v5's four rows.
void toV7(const ncclTunerConstants_v5_t& in, ncclTunerConstants_v7_t* out) {
  std::memcpy(out->baseLatencies, in.baseLatencies, sizeof in.baseLatencies);
  std::memcpy(out->hwLatencies, in.hwLatencies, sizeof in.hwLatencies);
  auto rows = [](const double (&from)[NCCL_NUM_COMPCAPS_V5][NCCL_NUM_TUNING_SCALES_V5],
                 double (&to)[NCCL_NUM_COMPCAPS_V7][NCCL_NUM_TUNING_SCALES_V5]) {
    std::memcpy(to, from, sizeof from);
    std::memcpy(to[NCCL_NUM_COMPCAPS_V5], from[NCCL_NUM_COMPCAPS_V5 - 1], sizeof from[0]);
  };
  rows(in.llMaxBws, out->llMaxBws);
  rows(in.perChMaxRingLL128Bws, out->perChMaxRingLL128Bws);
  rows(in.perChMaxTreeLL128Bws, out->perChMaxTreeLL128Bws);
  rows(in.perChMaxTreeBws, out->perChMaxTreeBws);
  rows(in.perChMaxNVLSTreeBws, out->perChMaxNVLSTreeBws);
}

void fromV7(const ncclTunerConstants_v7_t& in, ncclTunerConstants_v5_t* out) {
  std::memcpy(out->baseLatencies, in.baseLatencies, sizeof out->baseLatencies);
  std::memcpy(out->hwLatencies, in.hwLatencies, sizeof out->hwLatencies);
  std::memcpy(out->llMaxBws, in.llMaxBws, sizeof out->llMaxBws);
  std::memcpy(out->perChMaxRingLL128Bws, in.perChMaxRingLL128Bws, sizeof out->perChMaxRingLL128Bws);
  std::memcpy(out->perChMaxTreeLL128Bws, in.perChMaxTreeLL128Bws, sizeof out->perChMaxTreeLL128Bws);
  std::memcpy(out->perChMaxTreeBws, in.perChMaxTreeBws, sizeof out->perChMaxTreeBws);
  std::memcpy(out->perChMaxNVLSTreeBws, in.perChMaxNVLSTreeBws, sizeof out->perChMaxNVLSTreeBws);
}

}  // namespace

const char* releaseName(NcclRelease r) {
  switch (r) {
    case NcclRelease::V2_28:
      return "2.28";
    case NcclRelease::V2_29:
      return "2.29";
    case NcclRelease::V2_30:
      return "2.30";
    default:
      return "2.32";
  }
}

int newestTunerVersion(NcclRelease r) { return r == NcclRelease::V2_32 ? 7 : r == NcclRelease::V2_30 ? 6 : 5; }

std::unique_ptr<Tuner> Tuner::load(void* handle, std::string* why, NcclRelease release) {
  const int newest = newestTunerVersion(release);
  if (handle != nullptr) {
    for (int v = newest; v >= 2; --v) {
      const std::string symbol = "ncclTunerPlugin_v" + std::to_string(v);
      if (const void* sym = dlsym(handle, symbol.c_str())) return std::unique_ptr<Tuner>(new Tuner(v, sym));
    }
  }
  if (why != nullptr)
    *why = "no ncclTunerPlugin_v" + std::to_string(newest) + "..v2 symbol: tuner plugin is unsupported";
  return nullptr;
}

std::unique_ptr<Tuner> Tuner::loadVersion(void* handle, int version, std::string* why) {
  // What an NCCL release that knows only this version would find: lets tests drive each exported struct.
  if (handle != nullptr && version >= 2 && version <= 7) {
    std::string symbol = "ncclTunerPlugin_v" + std::to_string(version);
    if (const void* sym = dlsym(handle, symbol.c_str())) return std::unique_ptr<Tuner>(new Tuner(version, sym));
  }
  if (why != nullptr) *why = "no ncclTunerPlugin_v" + std::to_string(version) + " symbol";
  return nullptr;
}

const char* Tuner::name() const {
  // `name` is the first member of every version's struct.
  return *static_cast<const char* const*>(symbol_);
}

ncclResult_t Tuner::init(void** context, uint64_t commId, size_t nRanks, size_t nNodes, ncclDebugLogger_t log,
                         ncclNvlDomainInfo_v5_t* nvlDomainInfo, ncclTunerConstants_v5_t* constants) const {
  switch (version_) {
    case 7: {
      ncclTunerConstants_v7_t v7{};
      if (constants != nullptr) toV7(*constants, &v7);
      const ncclResult_t rc = static_cast<const ncclTuner_v7_t*>(symbol_)->init(
          context, commId, nRanks, nNodes, log, nvlDomainInfo, constants != nullptr ? &v7 : nullptr);
      if (constants != nullptr) fromV7(v7, constants);
      return rc;
    }
    case 6:
      return static_cast<const ncclTuner_v6_t*>(symbol_)->init(context, commId, nRanks, nNodes, log, nvlDomainInfo,
                                                                constants);
    case 5:
      return static_cast<const ncclTuner_v5_t*>(symbol_)->init(context, commId, nRanks, nNodes, log, nvlDomainInfo,
                                                                constants);
    case 4:
      return static_cast<const ncclTuner_v4_t*>(symbol_)->init(nRanks, nNodes, log, context);
    case 3:
      return static_cast<const ncclTuner_v3_t*>(symbol_)->init(nRanks, nNodes, log, context);
    default:
      return static_cast<const ncclTuner_v2_t*>(symbol_)->init(nRanks, nNodes, log, context);
  }
}

ncclResult_t Tuner::getCollInfo(void* context, ncclFunc_t coll, size_t nBytes, int numPipeOps, Table table,
                                int regBuff, int* nChannels) const {
  *nChannels = 0;
  switch (version_) {
    case 7:  // v5..v7 share getCollInfo's signature and place (offset 16)
    case 6:
    case 5:
      return static_cast<const ncclTuner_v5_t*>(symbol_)->getCollInfo(
          context, coll, nBytes, numPipeOps, asPluginTable(table), NCCL_NUM_ALGORITHMS, NCCL_NUM_PROTOCOLS, regBuff,
          nChannels);
    case 4:
      return static_cast<const ncclTuner_v4_t*>(symbol_)->getCollInfo(
          context, coll, nBytes, numPipeOps, asPluginTable(table), NCCL_NUM_ALGORITHMS, NCCL_NUM_PROTOCOLS, regBuff,
          nChannels);
    case 3:
      return static_cast<const ncclTuner_v3_t*>(symbol_)->getCollInfo(
          context, coll, nBytes, numPipeOps, asPluginTable(table), NCCL_NUM_ALGORITHMS, NCCL_NUM_PROTOCOLS, nChannels);
    default: {
      int algo = NCCL_ALGO_UNDEF;
      int proto = NCCL_PROTO_UNDEF;
      const ncclResult_t rc = static_cast<const ncclTuner_v2_t*>(symbol_)->getCollInfo(
          context, coll, nBytes, inferCollNetSupport(table), inferNvlsSupport(table), numPipeOps, &algo, &proto,
          nChannels);
      if (rc != ncclSuccess) return rc;
      // A zero cost makes NCCL's minimum search pick the plugin's choice, unless that choice is disabled.
      if (algo >= 0 && algo < NCCL_NUM_ALGORITHMS && proto >= 0 && proto < NCCL_NUM_PROTOCOLS &&
          table[algo][proto] != NCCL_ALGO_PROTO_IGNORE) {
        table[algo][proto] = 0.0f;
      }
      return ncclSuccess;
    }
  }
}

bool Tuner::hasChunkSize() const {
  // v6 and v7 place getChunkSize at the same offset.
  return version_ >= 6 && static_cast<const ncclTuner_v6_t*>(symbol_)->getChunkSize != nullptr;
}

ncclResult_t Tuner::chunkSize(void* context, ncclFunc_t coll, size_t nBytes, int algo, int proto, int nChannels,
                              size_t ncclChunk, size_t bufferMaxChunk, size_t* chunk) const {
  size_t answer = ncclChunk;
  if (hasChunkSize()) {
    const ncclResult_t rc =
        static_cast<const ncclTuner_v6_t*>(symbol_)->getChunkSize(context, coll, nBytes, algo, proto, nChannels, &answer);
    if (rc != ncclSuccess) return rc;  // NCCLCHECK: the collective fails
    answer = std::min(answer, bufferMaxChunk);
  }
  const size_t asInt = static_cast<size_t>(static_cast<int>(answer));  // NCCL keeps chunkSize in an int
  *chunk = asInt / grainBytes(proto) * grainBytes(proto);
  return ncclSuccess;
}

ncclResult_t Tuner::finalize(void* context) const {
  switch (version_) {
    case 7:
    case 6:
    case 5:
      return static_cast<const ncclTuner_v5_t*>(symbol_)->finalize(context);
    case 4:
      return static_cast<const ncclTuner_v4_t*>(symbol_)->destroy(context);
    case 3:
      return static_cast<const ncclTuner_v3_t*>(symbol_)->destroy(context);
    default:
      return static_cast<const ncclTuner_v2_t*>(symbol_)->destroy(context);
  }
}

Selection selectAlgo(const Table table, int pluginNChannels, int ncclDefaultChannels, const CommChannels& comm) {
  Selection s;
  float minTime = 3600000000.0f;  // entries at or above one hour never win
  for (int a = 0; a < NCCL_NUM_ALGORITHMS; ++a) {
    for (int p = 0; p < NCCL_NUM_PROTOCOLS; ++p) {
      const float v = table[a][p];
      if (v == NCCL_ALGO_PROTO_IGNORE) continue;
      if (v >= 0.0f && v < minTime) {  // strict: ties keep the earlier (a, p); NaN never qualifies
        s.algo = a;
        s.proto = p;
        minTime = v;
      }
    }
  }
  if (s.algo == NCCL_ALGO_UNDEF) return s;
  s.ok = true;
  s.cost = minTime;

  s.storedChannels = storeInSigned8(pluginNChannels == 0 ? ncclDefaultChannels : pluginNChannels);
  s.isNvls = s.algo == NCCL_ALGO_NVLS || s.algo == NCCL_ALGO_NVLS_TREE;
  s.isCollnet = s.algo == NCCL_ALGO_COLLNET_DIRECT || s.algo == NCCL_ALGO_COLLNET_CHAIN ||
                (s.algo == NCCL_ALGO_NVLS && comm.nNodes > 1);
  // CollNet-class tasks run on channels [0, nMaxChannels) as given; the rest are capped per scheduling class.
  if (s.isCollnet) {
    s.nChannels = s.storedChannels;
  } else {
    s.nChannels = std::min(s.storedChannels, s.isNvls ? comm.nvlsChannels : comm.nChannels);
  }
  return s;
}

}  // namespace wirewise::loader
