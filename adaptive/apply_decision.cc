// Turning a decision into edits of NCCL's cost table. NCCL (topoGetAlgoInfo) walks the table in
// (algo, proto) order and keeps the first strictly smaller entry among those >= 0 and < 3.6e9, so an
// entry set to 0.0 wins only if no enabled entry before it is also <= 0.0: such ties are raised.
#include "adaptive/decision_table.h"

#include <bit>
#include <cstdint>

#if defined(__SSE2__)
#include <emmintrin.h>
#endif

namespace wirewise {
namespace {

// Any value > 0 keeps a tied entry enabled while making the forced 0.0 the strict minimum.
constexpr float kTieRaise = 1e-3f;

// NCCL's eligibility, v >= 0.0f && v < 3.6e9f, read off the bits: a positive float's bits grow with its
// value, so the test is "+0.0 up to 3.6e9 (NaN above it), or -0.0", and one integer compare on most calls.
bool eligible(float v) noexcept {
  constexpr uint32_t kExcludedBits = std::bit_cast<uint32_t>(CostTableView::kExcluded);
  const uint32_t b = std::bit_cast<uint32_t>(v);
  return b < kExcludedBits || b == 0x80000000u;
}

// Whether any of cells[0, n) is +0.0 or -0.0 (n < total, the table's cell count): the only eligible values
// that tie with a forced 0.0. NCCL's own costs are never zero, so this is the whole of the tie work on
// almost every call: with SSE2, four cells per compare and no loop up to n == 8 (the first four and the
// last four, overlapping), never a read outside the table; below four, the first four with a mask.
bool anyZero(const float* cells, int n, int64_t total) noexcept {
  if (n == 0) return false;
#if defined(__SSE2__)
  const __m128 zero = _mm_setzero_ps();
  if (n >= 4) {
    __m128 hit = _mm_or_ps(_mm_cmpeq_ps(_mm_loadu_ps(cells), zero), _mm_cmpeq_ps(_mm_loadu_ps(cells + n - 4), zero));
    for (int i = 4; i < n - 4; i += 4) hit = _mm_or_ps(hit, _mm_cmpeq_ps(_mm_loadu_ps(cells + i), zero));
    return _mm_movemask_ps(hit) != 0;
  }
  if (total >= 4) return (_mm_movemask_ps(_mm_cmpeq_ps(_mm_loadu_ps(cells), zero)) & ((1 << n) - 1)) != 0;
#endif
  (void)total;
  for (int i = 0; i < n; ++i)
    if (cells[i] == 0.0f) return true;
  return false;
}

// The cheapest eligible cell of n cells `stride` apart, by NCCL's own costs (first wins ties, as in
// NCCL's scan); -1 if none. Eligibility (< kExcluded) and "cheaper" are one test: the running minimum
// starts at the exclusion mark.
int cheapest(const float* v, int n, int stride) noexcept {
  int best = -1;
  float bestCost = CostTableView::kExcluded;
  for (int i = 0; i < n; ++i) {
    const float c = v[i * stride];
    if (c >= 0.0f && c < bestCost) {
      best = i;
      bestCost = c;
    }
  }
  return best;
}

// The cell a kAlgoRow or kProtoColumn action forces: the cheapest eligible one along it; -1 if none.
// a.algo / a.proto are >= 0, so a count of 0 or below fails the range test or runs no iteration.
int cheapestCell(CostAction a, const CostTableView& t) noexcept {
  const int np = t.numProto();
  if (a.kind == CostAction::kAlgoRow) {
    if (a.algo >= t.numAlgo()) return -1;
    const int p = cheapest(t.data() + a.algo * np, np, 1);
    return p < 0 ? -1 : a.algo * np + p;
  }
  if (a.proto >= np) return -1;
  const int best = cheapest(t.data() + a.proto, t.numAlgo(), np);
  return best < 0 ? -1 : best * np + a.proto;
}

}  // namespace

CostAction CostAction::of(const Decision& d) noexcept {
  CostAction a;
  if (d.keepsCostTable()) return a;
  a.algo = d.algo;
  a.proto = d.proto;
  a.nChannels = d.nChannels >= 1 && d.nChannels <= kMaxChannels ? static_cast<uint8_t>(d.nChannels) : 0;
  if (d.algo == kAny && d.proto == kAny)
    a.kind = kChannels;  // with nChannels 0 when the count was out of range: nothing applies
  else if ((d.algo != kAny && d.algo < 0) || (d.proto != kAny && d.proto < 0))
    a.kind = kRefuse;
  else if (d.algo != kAny && d.proto != kAny)
    a.kind = kEntry;
  else
    a.kind = d.algo != kAny ? kAlgoRow : kProtoColumn;
  return a;
}

bool applyAction(CostAction a, CostTableView table, int* nChannels) noexcept {
  float* cells = table.data();
  if (cells == nullptr) return false;
  const bool wantChannels = a.nChannels != 0 && nChannels != nullptr;
  int chosen;
  if (a.kind == CostAction::kEntry) [[likely]] {  // what tables mostly hold: tested first
    // a.algo, a.proto >= 0: these compares also reject a numAlgo or numProto of 0 or below.
    if (a.algo >= table.numAlgo() || a.proto >= table.numProto()) return false;
    chosen = a.algo * table.numProto() + a.proto;
    if (!eligible(cells[chosen])) return false;
  } else if (a.kind == CostAction::kAlgoRow || a.kind == CostAction::kProtoColumn) {
    chosen = cheapestCell(a, table);
    if (chosen < 0) return false;
  } else if (a.kind == CostAction::kChannels) {  // nChannels is 0 when the count was out of range
    if (!table.valid()) return false;
    if (wantChannels) *nChannels = a.nChannels;
    return wantChannels;
  } else {  // kKeep, kRefuse
    return false;
  }
  // Only entries scanned before the chosen one can tie with it (NCCL keeps the first strictly smaller),
  // and among eligible entries only an exact 0.0 (or -0.0) ties.
  if (anyZero(cells, chosen, int64_t{table.numAlgo()} * table.numProto())) [[unlikely]] {
    for (int i = 0; i < chosen; ++i)
      if (cells[i] == 0.0f) cells[i] = kTieRaise;
  }
  cells[chosen] = 0.0f;
  if (wantChannels) *nChannels = a.nChannels;
  return true;
}

bool applyDecision(const Decision& d, CostTableView table, int* nChannels) noexcept {
  return applyAction(CostAction::of(d), table, nChannels);
}

}  // namespace wirewise
