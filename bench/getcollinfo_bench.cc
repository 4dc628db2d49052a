// getCollInfo on the shipped library, called through the ncclTuner_v5_t function pointer exactly as NCCL
// does, with a fresh cost table per call (copied from a template; BM_TableCopy measures that copy alone
// so it can be subtracted). allocs_per_call counts heap allocations made by the calling thread.
#include <benchmark/benchmark.h>

#include <cstdio>
#include <cstring>
#include <string>

#include "bench/alloc_counter.h"
#include "bench/plugin_session.h"

namespace wirewise::bench {
namespace {

PluginSession* gSession = nullptr;

void reportAllocs(benchmark::State& state, uint64_t allocs) {
  state.counters["allocs_per_call"] =
      benchmark::Counter(static_cast<double>(allocs) / static_cast<double>(state.iterations()));
}

void BM_TableCopy(benchmark::State& state) {
  CostTable table;
  startCountingAllocs();
  for (auto _ : state) {
    std::memcpy(table, gSession->costs, sizeof table);
    benchmark::DoNotOptimize(&table[0][0]);
    benchmark::ClobberMemory();
  }
  reportAllocs(state, stopCountingAllocs());
}

void BM_GetCollInfo(benchmark::State& state, size_t probe) {
  const Probe& p = gSession->probes[probe];
  const ncclTuner_v5_t* t = gSession->tuner;
  void* ctx = gSession->context;
  CostTable table;
  int nChannels = 0;
  startCountingAllocs();
  for (auto _ : state) {
    std::memcpy(table, gSession->costs, sizeof table);
    nChannels = 0;
    t->getCollInfo(ctx, p.coll, p.nBytes, 1, reinterpret_cast<float**>(&table[0][0]), NCCL_NUM_ALGORITHMS,
                   NCCL_NUM_PROTOCOLS, 0, &nChannels);
    benchmark::DoNotOptimize(nChannels);
    benchmark::ClobberMemory();
  }
  reportAllocs(state, stopCountingAllocs());
  state.SetLabel(std::string(p.what) + " " + std::to_string(p.nBytes) + " B coll " + std::to_string(p.coll));
}

// The counter must see what it claims to count: one operator new, and one malloc made inside libc.
void BM_AllocSanityNew(benchmark::State& state) {
  startCountingAllocs();
  for (auto _ : state) {
    int* p = new int(1);
    benchmark::DoNotOptimize(p);
    delete p;
  }
  reportAllocs(state, stopCountingAllocs());
}

void BM_AllocSanityLibc(benchmark::State& state) {
  const char* src = "wirewise";
  benchmark::DoNotOptimize(src);
  startCountingAllocs();
  for (auto _ : state) {
    char* p = strdup(src);
    benchmark::DoNotOptimize(p);
    free(p);
  }
  reportAllocs(state, stopCountingAllocs());
}

}  // namespace
}  // namespace wirewise::bench

int main(int argc, char** argv) {
  using namespace wirewise::bench;
  std::string lib = WW_PLUGIN_SO;
  if (const char* env = std::getenv("WW_BENCH_PLUGIN")) lib = env;
  PluginSession session = openSession(lib);
  if (!session.error.empty()) {
    std::fprintf(stderr, "ww_bench_getcollinfo: %s\n", session.error.c_str());
    return 1;
  }
  gSession = &session;
  benchmark::AddCustomContext("plugin", lib);
  benchmark::AddCustomContext("rules", std::to_string(session.rules));
  benchmark::RegisterBenchmark("BM_TableCopy", BM_TableCopy);
  for (size_t i = 0; i < session.probes.size(); ++i) {
    const Probe& p = session.probes[i];
    std::string name = "BM_GetCollInfo/" + std::string(p.what) + "/coll" + std::to_string(p.coll) + "/" +
                       std::to_string(p.nBytes);
    benchmark::RegisterBenchmark(name.c_str(), BM_GetCollInfo, i);
  }
  benchmark::RegisterBenchmark("BM_AllocSanityNew", BM_AllocSanityNew);
  benchmark::RegisterBenchmark("BM_AllocSanityLibc", BM_AllocSanityLibc);
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  closeSession(&session);
  return 0;
}
