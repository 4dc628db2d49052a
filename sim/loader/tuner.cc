// The tuner version shims of NCCL 2.28.9 (src/plugin/tuner/tuner_v{2,3,4,5}.cc) and the selection that
// follows getCollInfo (src/enqueue.cc getAlgoInfo/topoGetAlgoInfo, scheduleCollTasksToPlan). Facts: §3.1, §3.6.
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

}  // namespace

std::unique_ptr<Tuner> Tuner::load(void* handle, std::string* why) {
  static constexpr struct {
    const char* symbol;
    int version;
  } kOrder[] = {{"ncclTunerPlugin_v5", 5}, {"ncclTunerPlugin_v4", 4}, {"ncclTunerPlugin_v3", 3},
                {"ncclTunerPlugin_v2", 2}};
  if (handle != nullptr) {
    for (const auto& entry : kOrder) {
      if (const void* sym = dlsym(handle, entry.symbol)) return std::unique_ptr<Tuner>(new Tuner(entry.version, sym));
    }
  }
  if (why != nullptr) *why = "no ncclTunerPlugin_v5/v4/v3/v2 symbol: tuner plugin is unsupported";
  return nullptr;
}

std::unique_ptr<Tuner> Tuner::loadVersion(void* handle, int version, std::string* why) {
  // What an NCCL release that knows only this version would find: lets tests drive each exported struct.
  if (handle != nullptr && version >= 2 && version <= 5) {
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

ncclResult_t Tuner::finalize(void* context) const {
  switch (version_) {
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
