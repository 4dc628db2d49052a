#include "bench/plugin_session.h"

#include <dlfcn.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>

#include "adaptive/buckets.h"
#include "common/settings.h"

namespace wirewise::bench {
namespace {

constexpr const char* kColls[] = {"broadcast", "reduce", "allgather", "reducescatter", "allreduce"};
constexpr const char* kDecisions[] = {
    R"("algo": "ring", "proto": "simple")", R"("algo": "ring", "proto": "ll128", "channels": 8)",
    R"("proto": "ll")", R"("algo": "ring", "proto": "ll")", R"("channels": 4)"};

// Edges grow by ~1.37x from 700 B: never on a quarter-octave bucket edge, so most buckets are cut.
std::vector<uint64_t> ruleEdges() {
  std::vector<uint64_t> edges;
  double e = 700;
  while (e < 4e10) {
    edges.push_back(static_cast<uint64_t>(e));
    e *= 1.37;
  }
  return edges;
}

// Nine rules in the example tuner's CSV: all five collectives, full (algorithm, protocol) choices with and
// without a channel count, a protocol-only and an algorithm-only rule, a channels-only one, and inclusive
// maximums one byte past a power of two as users copy them from the example (so two buckets are cut).
constexpr const char* kNineRules =
    "allreduce,0,65536,tree,ll,-1,-1,-1\n"
    "allreduce,65537,4194303,ring,ll128,8,-1,-1\n"
    "allreduce,4194304,-1,ring,simple,16,2,-1\n"
    "broadcast,0,32767,tree,simple,-1,-1,-1\n"
    "broadcast,32768,-1,-1,-1,4,-1,-1\n"
    "allgather,0,-1,ring,ll128,-1,-1,16\n"
    "reducescatter,0,131072,-1,ll,-1,-1,-1\n"
    "reducescatter,131073,-1,ring,simple,-1,-1,-1\n"
    "reduce,0,-1,tree,-1,-1,-1,-1\n";

std::string writeConfig(BenchTable kind, size_t* rules) {
  char path[] = "/tmp/ww_bench_table_XXXXXX";
  int fd = mkstemp(path);
  if (fd < 0) return "";
  close(fd);
  std::ofstream out(path);
  if (kind == BenchTable::NineRuleCsv) {
    out << kNineRules;
    *rules = 9;
    return out.good() ? path : "";
  }
  out << "{\"version\": 1, \"rules\": [\n";
  std::vector<uint64_t> edges = ruleEdges();
  *rules = 0;
  for (int c = 0; c < 5; ++c) {
    uint64_t lo = 0;
    for (size_t i = 0; i < edges.size(); ++i) {
      out << (*rules ? ",\n" : "") << "{\"coll\": \"" << kColls[c] << "\", \"min_bytes\": " << lo
          << ", \"max_bytes\": " << edges[i] - 1 << ", " << kDecisions[(i + c) % 5] << "}";
      lo = edges[i];
      ++*rules;
    }
  }
  out << "\n]}\n";
  return out.good() ? path : "";
}

// NCCL always passes its logger; this one stays silent.
void quietLogger(ncclDebugLogLevel, unsigned long, const char*, int, const char*, ...) {}

// True when a rule edge falls strictly inside the size bucket of nBytes (the table keeps sub-ranges there).
bool inCutBucket(uint64_t nBytes, const std::vector<uint64_t>& edges) {
  int b = SizeBuckets::index(nBytes);
  for (uint64_t e : edges)
    if (e > SizeBuckets::lowerEdge(b) && e < SizeBuckets::upperEdge(b)) return true;
  return false;
}

}  // namespace

PluginSession openSession(const std::string& libraryPath, BenchTable kind) {
  PluginSession s;
  for (auto& row : s.costs)
    for (float& v : row) v = -1.0f;
  for (int p = 0; p < NCCL_NUM_PROTOCOLS; ++p) {
    s.costs[NCCL_ALGO_TREE][p] = 10.0f + p;
    s.costs[NCCL_ALGO_RING][p] = 12.0f + p;
    s.costs[NCCL_ALGO_PAT][p] = 30.0f + p;
  }
  // Where a rule starts (or ends, plus one): a bucket holding one strictly inside is cut.
  std::vector<uint64_t> edges = ruleEdges();
  const std::vector<uint64_t> nineRuleEdges = {32768, 65537, 131073, 4194304};
  const std::vector<uint64_t>& tableEdges = kind == BenchTable::NineRuleCsv ? nineRuleEdges : edges;
  const std::pair<ncclFunc_t, uint64_t> candidates[] = {
      {ncclFuncAllReduce, 4096},          {ncclFuncAllReduce, 65536},      {ncclFuncAllReduce, edges[12]},
      {ncclFuncAllGather, edges[20] - 1}, {ncclFuncReduceScatter, 1 << 20}, {ncclFuncAllReduce, uint64_t{64} << 20},
      {ncclFuncBroadcast, edges[30]},     {ncclFuncReduce, 300}};
  for (auto [coll, bytes] : candidates)
    s.probes.push_back({coll, static_cast<size_t>(bytes), inCutBucket(bytes, tableEdges) ? "split" : "bucket"});
  // Plus the first two whole (uncut) buckets from 8 KiB and from 16 MiB, so both lookup paths are measured.
  for (uint64_t from : {uint64_t{8} << 10, uint64_t{16} << 20}) {
    for (int b = SizeBuckets::index(from); b < SizeBuckets::kCount - 1; ++b) {
      if (inCutBucket(SizeBuckets::lowerEdge(b), tableEdges)) continue;
      s.probes.push_back({ncclFuncAllReduce, static_cast<size_t>(SizeBuckets::lowerEdge(b)), "bucket"});
      break;
    }
  }

  s.configPath = writeConfig(kind, &s.rules);
  if (s.configPath.empty()) return s.error = "cannot write the generated config", s;
  setenv(settingName(&Settings::config), s.configPath.c_str(), 1);
  setenv(settingName(&Settings::logPath), "none", 1);
  setenv(settingName(&Settings::mode), "apply", 1);
  s.handle = dlopen(libraryPath.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (s.handle == nullptr) return s.error = std::string("dlopen: ") + dlerror(), s;
  s.tuner = static_cast<const ncclTuner_v5_t*>(dlsym(s.handle, "ncclTunerPlugin_v5"));
  if (s.tuner == nullptr) return s.error = "no ncclTunerPlugin_v5 in " + libraryPath, s;
  ncclNvlDomainInfo_v5_t nvl{2, 8, 8};
  ncclTunerConstants_v5_t constants{};
  if (s.tuner->init(&s.context, 0xbe4c4, 16, 2, quietLogger, &nvl, &constants) != ncclSuccess || s.context == nullptr)
    return s.error = "init failed or gave no context", s;
  return s;
}

void closeSession(PluginSession* s) {
  if (s->tuner != nullptr && s->context != nullptr) s->tuner->finalize(s->context);
  s->context = nullptr;
  if (!s->configPath.empty()) unlink(s->configPath.c_str());
}

}  // namespace wirewise::bench
