// Cost of one collector sampling pass (what the runtime's sampler thread pays every period) over a
// fake sysfs tree of realistic size: 8 IB ports (4 of them RoCE with congestion/loss hw_counters) and
// 16 network interfaces. The fake tree is plain files, so this measures our own cost (syscalls,
// parsing, model update); on real hardware each IB counters/* read is additionally a firmware MAD.
#include <benchmark/benchmark.h>

#include <chrono>

#include "telemetry/collectors/collector_set.h"
#include "tests/telemetry/collectors/fake_sysfs.h"

namespace wirewise::collectors {
namespace {

using testing::FakeSysfs;

const FakeSysfs& realisticTree() {
  static FakeSysfs tree;  // removed at exit
  static const bool filled = [] {
    FakeSysfs* t = &tree;
    for (int d = 0; d < 8; ++d) {
      std::string dev = "mlx5_" + std::to_string(d);
      bool roce = d >= 4;
      t->ibPort(dev, 1, roce ? "Ethernet" : "InfiniBand", roce ? "200 Gb/sec (4X HDR)" : "400 Gb/sec (4X NDR)");
      std::string p = "class/infiniband/" + dev + "/ports/1/";
      for (const char* c : {"port_xmit_packets", "port_rcv_packets", "local_link_integrity_errors",
                            "excessive_buffer_overrun_errors", "port_rcv_remote_physical_errors", "VL15_dropped"}) {
        t->write(p + "counters/" + c, 12345ull);
      }
      if (roce) {
        for (const char* c : {"np_cnp_sent", "rp_cnp_handled", "np_ecn_marked_roce_packets", "rp_cnp_ignored",
                              "local_ack_timeout_err", "packet_seq_err", "out_of_sequence", "rnr_nak_retry_err",
                              "implied_nak_seq_err", "duplicate_request", "rx_write_requests", "out_of_buffer"}) {
          t->write(p + "hw_counters/" + c, 777ull);
        }
      }
    }
    for (int i = 0; i < 16; ++i) t->netdev("eth" + std::to_string(i), "100000");
    return true;
  }();
  (void)filled;
  return tree;
}

CollectorConfig benchConfig(bool ib, bool netdev) {
  CollectorConfig cfg;
  cfg.sysfsRoot = realisticTree().root();
  cfg.ib = ib;
  cfg.netdev = netdev;
  cfg.nvml = false;
  cfg.rediscoverEveryPasses = 0;
  return cfg;
}

void runPasses(benchmark::State& state, const CollectorConfig& cfg) {
  auto set = CollectorSet::create(cfg, nullptr);
  auto t = Clock::now();
  for (auto _ : state) {
    t += std::chrono::seconds(1);
    set->sample(t);
  }
  state.counters["links"] = static_cast<double>(set->snapshot().links.size());
}

void BM_SamplePassAll(benchmark::State& state) { runPasses(state, benchConfig(true, true)); }
void BM_SamplePassIbOnly(benchmark::State& state) { runPasses(state, benchConfig(true, false)); }
void BM_SamplePassNetdevOnly(benchmark::State& state) { runPasses(state, benchConfig(false, true)); }

// The machine's own /sys/class/net (whatever interfaces exist here), for a real-kernel figure.
void BM_SamplePassRealNetdev(benchmark::State& state) {
  CollectorConfig cfg;
  cfg.ib = false;
  cfg.nvml = false;
  cfg.rediscoverEveryPasses = 0;
  runPasses(state, cfg);
}

void BM_LinkHealthJson(benchmark::State& state) {
  auto set = CollectorSet::create(benchConfig(true, true), nullptr);
  set->sample(Clock::now());
  set->sample(Clock::now() + std::chrono::seconds(1));
  for (auto _ : state) {
    std::string line = toJson(set->snapshot()).dump();
    benchmark::DoNotOptimize(line);
  }
}

BENCHMARK(BM_SamplePassAll)->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_SamplePassIbOnly)->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_SamplePassNetdevOnly)->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_SamplePassRealNetdev)->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_LinkHealthJson)->Unit(benchmark::kMicrosecond);

}  // namespace
}  // namespace wirewise::collectors

BENCHMARK_MAIN();
