// Calls the plugin's getCollInfo N times for callgrind: instructions per call = (Ir(N2) - Ir(N1)) / (N2 - N1),
// so setup, dlopen and init cancel out. Mode "call" copies a fresh cost table and calls getCollInfo; mode
// "nothing" does the same loop through a do-nothing getCollInfo (the baseline: a tuner that leaves
// every choice to NCCL), so the copy and the call itself are subtracted; mode "copy" only copies. TABLE
// picks the static table (bench/plugin_session.h): "nine" (a nine-rule CSV, the default) or "cut".
//   ww_callgrind_driver LIBRARY call|nothing|copy N [nine|cut]
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

#include "bench/plugin_session.h"

namespace {

__attribute__((noinline)) ncclResult_t nothingGetCollInfo(void*, ncclFunc_t, size_t, int, float**, int, int, int,
                                                          int*) {
  return ncclSuccess;
}

}  // namespace

int main(int argc, char** argv) {
  using namespace wirewise::bench;
  const bool tableOk = argc == 4 || (argc == 5 && (std::strcmp(argv[4], "nine") == 0 || std::strcmp(argv[4], "cut") == 0));
  const bool known = tableOk && (std::strcmp(argv[2], "call") == 0 || std::strcmp(argv[2], "nothing") == 0 ||
                                   std::strcmp(argv[2], "copy") == 0);
  if (!known) {
    std::fprintf(stderr, "usage: %s LIBRARY call|nothing|copy N [nine|cut]\n", argv[0]);
    return 2;
  }
  const bool call = std::strcmp(argv[2], "copy") != 0;
  const long n = std::strtol(argv[3], nullptr, 10);
  const BenchTable kind = argc == 5 && std::strcmp(argv[4], "cut") == 0 ? BenchTable::CutBuckets : BenchTable::NineRuleCsv;
  PluginSession s = openSession(argv[1], kind);
  if (!s.error.empty()) {
    std::fprintf(stderr, "ww_callgrind_driver: %s\n", s.error.c_str());
    return 1;
  }
  auto getCollInfo = std::strcmp(argv[2], "call") == 0 ? s.tuner->getCollInfo : nothingGetCollInfo;
  asm volatile("" : "+r"(getCollInfo));  // an indirect call in both modes, as NCCL makes it
  const size_t probes = s.probes.size();
  CostTable table;
  long sink = 0;
  for (long i = 0; i < n; ++i) {
    const Probe& p = s.probes[static_cast<size_t>(i) % probes];
    std::memcpy(table, s.costs, sizeof table);
    int nChannels = 0;
    if (call)
      getCollInfo(s.context, p.coll, p.nBytes, 1, reinterpret_cast<float**>(&table[0][0]),
                           NCCL_NUM_ALGORITHMS, NCCL_NUM_PROTOCOLS, 0, &nChannels);
    // Keep the copy and the result observable so neither loop is optimised away.
    sink += nChannels + static_cast<long>(table[i % NCCL_NUM_ALGORITHMS][i % NCCL_NUM_PROTOCOLS]);
    asm volatile("" : : "r"(&table[0][0]) : "memory");
  }
  closeSession(&s);
  std::printf("%ld\n", sink);
  return 0;
}
