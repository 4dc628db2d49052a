// Turns CollSamples into periodic summaries per (collective, size bucket, algorithm, protocol,
// channels): count, p50/p99 time and nccl-tests bus bandwidth. Runs on the background thread only.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <tuple>
#include <vector>

#include "adaptive/types.h"  // busBandwidthGBs
#include "telemetry/coll_sample.h"

namespace wirewise {

struct SummaryRow {
  int coll = -1;
  int bucket = 0;
  int algo = -1, proto = -1, nChannels = 0;
  uint64_t count = 0;
  uint64_t bytesMin = 0, bytesMax = 0;
  double p50Us = 0, p99Us = 0;  // nearest-rank percentiles of the kept durations
  double busBwGBs = 0;  // at the median time and the mean size
};

class Aggregator {
 public:
  explicit Aggregator(int nRanks) : nRanks_(nRanks) {}
  void add(const CollSample& s);  // samples with coll outside 0..4 are ignored
  // Rows for everything added since the last call, sorted by (coll, bucket, algo, proto, channels);
  // then starts a new interval. Memory is bounded by the number of distinct keys x a sample cap.
  std::vector<SummaryRow> takeSummary();
  static constexpr size_t kMaxSamplesPerKey = 4096;

 private:
  using Key = std::tuple<int, int, int, int, int>;
  // Durations are kept for percentiles, capped at kMaxSamplesPerKey by deterministic decimation: when
  // the vector is full, every second kept sample is dropped and from then on only every stride-th
  // sample is kept (stride doubles each time). The kept samples stay evenly spread over the interval.
  // count, bytes and the min/max use every sample. Durations clamp at UINT32_MAX ns (4.29 s).
  struct Acc {
    std::vector<uint32_t> durationsNs;
    uint64_t stride = 1;
    uint64_t count = 0, bytesSum = 0, bytesMin = UINT64_MAX, bytesMax = 0;
  };
  int nRanks_;
  std::map<Key, Acc> acc_;
};

}  // namespace wirewise
