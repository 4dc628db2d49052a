// The fixed message-size grid decisions are made on: 4 buckets per power of two from 1 KiB to 16 GiB,
// plus one bucket below 1 KiB and one at or above 16 GiB. Identical on every rank by construction.
#pragma once

#include <cstddef>
#include <cstdint>

namespace wirewise {

struct SizeBuckets {
  static constexpr int kPerOctave = 4;
  static constexpr int kMinLog2 = 10;  // 1 KiB
  static constexpr int kMaxLog2 = 34;  // 16 GiB
  // bucket 0: [0, 1 KiB); buckets 1..96: quarter-octaves; bucket 97: [16 GiB, inf)
  static constexpr int kCount = (kMaxLog2 - kMinLog2) * kPerOctave + 2;

  // O(1): a count-leading-zeros and two shifts. No tables, no branches on data beyond clamping.
  static int index(uint64_t nBytes) noexcept;
  // Smallest size in bucket i (0 for bucket 0). upperEdge(i) == lowerEdge(i + 1) (exclusive); the last
  // bucket has no representable exclusive end, so upperEdge(kCount - 1) == UINT64_MAX (inclusive there).
  // i is clamped to [0, kCount - 1].
  static uint64_t lowerEdge(int i) noexcept;
  static uint64_t upperEdge(int i) noexcept;
};

}  // namespace wirewise
