// The fixed message-size grid decisions are made on: 4 buckets per power of two from 1 KiB to 16 GiB,
// plus one bucket below 1 KiB and one at or above 16 GiB. Identical on every rank by construction.
#pragma once

#include <algorithm>
#include <bit>
#include <cstddef>
#include <cstdint>
#include <limits>

namespace wirewise {

struct SizeBuckets {
  static constexpr int kPerOctave = 4;
  static constexpr int kMinLog2 = 10;  // 1 KiB
  static constexpr int kMaxLog2 = 34;  // 16 GiB
  // bucket 0: [0, 1 KiB); buckets 1..96: quarter-octaves; bucket 97: [16 GiB, inf)
  static constexpr int kCount = (kMaxLog2 - kMinLog2) * kPerOctave + 2;

  // O(1), branch-free and inline (getCollInfo's hot path): a double's exponent and its top two mantissa
  // bits are floor(log2 n) and the quarter-octave, so the bucket is the double's bits shifted down, less a
  // bias, clamped. Exact below 2^53, where the conversion is exact; rounding above it cannot leave
  // bucket kCount - 1. Sizes of 2^63 and above convert as negative numbers: the sign bit lands above
  // any bucket and the clamp takes them to kCount - 1 too.
  static int index(uint64_t nBytes) noexcept {
    static_assert(std::numeric_limits<double>::is_iec559 && kPerOctave == 4);
    const auto bits = std::bit_cast<uint64_t>(static_cast<double>(static_cast<int64_t>(nBytes)));
    // (exponent << 2 | two mantissa bits) of 1 KiB is (1023 + kMinLog2) << 2, which must give bucket 1.
    const int64_t i = static_cast<int64_t>(bits >> 50) - (((1023 + kMinLog2) << 2) - 1);
    return static_cast<int>(std::clamp<int64_t>(i, 0, kCount - 1));
  }
  // Smallest size in bucket i (0 for bucket 0). upperEdge(i) == lowerEdge(i + 1) (exclusive); the last
  // bucket has no representable exclusive end, so upperEdge(kCount - 1) == UINT64_MAX (inclusive there).
  // i is clamped to [0, kCount - 1].
  static uint64_t lowerEdge(int i) noexcept;
  static uint64_t upperEdge(int i) noexcept;
};

// The flat index of (collective, bucket) in a table laid out [collective][bucket], for the hot path's
// tables that are indexed by both (the decision table's cells, the cost-table sights): computed once.
inline int collBucket(int collType, int bucket) noexcept { return collType * SizeBuckets::kCount + bucket; }

}  // namespace wirewise
