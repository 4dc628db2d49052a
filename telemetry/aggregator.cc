#include "telemetry/aggregator.h"

#include <algorithm>
#include <cmath>

#include "adaptive/buckets.h"
#include "adaptive/types.h"

namespace wirewise {

// nccl-tests doc/PERFORMANCE.md: algbw = bytes / time; busbw = algbw x factor. For AllGather and
// ReduceScatter nccl-tests' size is the whole (nRanks x per-rank) buffer, which is what `bytes` is here.

void Aggregator::add(const CollSample& s) {
  if (s.coll < 0 || s.coll >= kNumCollTypes) return;
  Key key{s.coll, SizeBuckets::index(s.bytes), s.algo, s.proto, s.nChannels};
  Acc& a = acc_[key];
  if (a.count % a.stride == 0) {
    if (a.durationsNs.size() >= kMaxSamplesPerKey) {
      size_t kept = 0;
      for (size_t i = 0; i < a.durationsNs.size(); i += 2) a.durationsNs[kept++] = a.durationsNs[i];
      a.durationsNs.resize(kept);
      a.stride *= 2;
    }
    if (a.count % a.stride == 0) {
      a.durationsNs.push_back(static_cast<uint32_t>(std::min<uint64_t>(s.durationNs, UINT32_MAX)));
    }
  }
  ++a.count;
  a.bytesSum += s.bytes;
  a.bytesMin = std::min(a.bytesMin, s.bytes);
  a.bytesMax = std::max(a.bytesMax, s.bytes);
}

namespace {

// Nearest-rank percentile: the smallest kept value with at least p of the values at or below it.
double percentileNs(std::vector<uint32_t>& v, double p) {
  if (v.empty()) return 0.0;
  size_t rank = static_cast<size_t>(std::ceil(p * static_cast<double>(v.size())));
  size_t idx = rank == 0 ? 0 : std::min(rank - 1, v.size() - 1);
  std::nth_element(v.begin(), v.begin() + static_cast<std::ptrdiff_t>(idx), v.end());
  return v[idx];
}

}  // namespace

std::vector<SummaryRow> Aggregator::takeSummary() {
  std::vector<SummaryRow> rows;
  rows.reserve(acc_.size());
  for (auto& [key, a] : acc_) {
    SummaryRow r;
    std::tie(r.coll, r.bucket, r.algo, r.proto, r.nChannels) = key;
    r.count = a.count;
    r.bytesMin = a.bytesMin;
    r.bytesMax = a.bytesMax;
    double p50 = percentileNs(a.durationsNs, 0.50);
    double p99 = percentileNs(a.durationsNs, 0.99);
    r.p50Us = p50 / 1e3;
    r.p99Us = p99 / 1e3;
    uint64_t meanBytes = a.count ? a.bytesSum / a.count : 0;
    r.busBwGBs = busBandwidthGBs(r.coll, meanBytes, static_cast<uint64_t>(p50), nRanks_);
    rows.push_back(r);
  }
  acc_.clear();
  return rows;
}

}  // namespace wirewise
