// What the hot-path benchmarks share: the real plugin library dlopened as NCCL does (RTLD_NOW |
// RTLD_LOCAL, ncclTunerPlugin_v5), one communicator initialised against a static table, and a cost-table
// template. Two tables: a nine-rule CSV shaped like NCCL's example tuner's (what a user writes: a few
// ranges per collective, inclusive edges that cut a bucket) and a generated one with rules for all five
// collectives and many ranges whose edges cut most size buckets (the slowest lookups).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "common/nccl/tuner.h"

namespace wirewise::bench {

using CostTable = float[NCCL_NUM_ALGORITHMS][NCCL_NUM_PROTOCOLS];

struct Probe {
  ncclFunc_t coll;
  size_t nBytes;
  const char* what;  // "bucket" (one decision) or "split" (a bucket cut by a rule edge)
};

enum class BenchTable { NineRuleCsv, CutBuckets };

struct PluginSession {
  void* handle = nullptr;
  const ncclTuner_v5_t* tuner = nullptr;
  void* context = nullptr;
  std::string configPath;
  size_t rules = 0;
  CostTable costs{};            // every non-NVLS/CollNet entry enabled
  std::vector<Probe> probes;    // sizes that hit plain buckets and split ones
  std::string error;            // non-empty when setup failed
};

// Writes the table to a temporary file, sets WIREWISE_CONFIG / WIREWISE_LOG=none, dlopens the library and
// inits one v5 communicator (16 ranks, 2 nodes). Never throws; check error.
PluginSession openSession(const std::string& libraryPath, BenchTable table = BenchTable::CutBuckets);
void closeSession(PluginSession* s);

}  // namespace wirewise::bench
