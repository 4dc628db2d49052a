#include "adaptive/buckets.h"

namespace wirewise {

static_assert(SizeBuckets::kPerOctave == 4, "index() takes exactly two fractional bits");
static_assert(SizeBuckets::kCount == 98);

uint64_t SizeBuckets::lowerEdge(int i) noexcept {
  if (i <= 0) return 0;
  if (i >= kCount - 1) return uint64_t{1} << kMaxLog2;
  int j = i - 1;
  int log2 = kMinLog2 + j / kPerOctave;
  return static_cast<uint64_t>(kPerOctave + j % kPerOctave) << (log2 - 2);
}

uint64_t SizeBuckets::upperEdge(int i) noexcept {
  if (i >= kCount - 1) return UINT64_MAX;
  if (i < 0) i = 0;
  return lowerEdge(i + 1);
}

}  // namespace wirewise
