// Turning a decision into edits of NCCL's cost table. NCCL (topoGetAlgoInfo) walks the table in
// (algo, proto) order and keeps the first strictly smaller entry among those >= 0 and < 3.6e9, so an
// entry set to 0.0 wins only if no enabled entry before it is also <= 0.0: such ties are raised.
#include "adaptive/decision_table.h"

namespace wirewise {
namespace {

// Any value > 0 keeps a tied entry enabled while making the forced 0.0 the strict minimum.
constexpr float kTieRaise = 1e-3f;

bool pickEntry(const Decision& d, const CostTableView& t, int* algo, int* proto) {
  const float* cells = t.data();
  const int np = t.numProto();
  if (d.algo != kAny && d.proto != kAny) {
    if (!t.enabled(d.algo, d.proto)) return false;
    *algo = d.algo;
    *proto = d.proto;
    return true;
  }
  // One dimension fixed: the cheapest enabled entry along the other, by NCCL's own costs (first wins
  // ties, as in NCCL's own scan).
  const bool fixAlgo = d.algo != kAny;
  const int fixed = fixAlgo ? d.algo : d.proto;
  if (fixed < 0 || fixed >= (fixAlgo ? t.numAlgo() : np)) return false;
  const int n = fixAlgo ? np : t.numAlgo();
  const int stride = fixAlgo ? 1 : np;
  const float* v = fixAlgo ? cells + fixed * np : cells + fixed;
  // NCCL's eligibility (>= 0, < kExcluded) and "cheaper" in one test: the running minimum starts at the
  // exclusion mark.
  int best = -1;
  float bestCost = CostTableView::kExcluded;
  for (int i = 0; i < n; ++i) {
    const float c = v[i * stride];
    if (c >= 0.0f && c < bestCost) {
      best = i;
      bestCost = c;
    }
  }
  if (best < 0) return false;
  *algo = fixAlgo ? fixed : best;
  *proto = fixAlgo ? best : fixed;
  return true;
}

}  // namespace

bool applyDecision(const Decision& d, CostTableView table, int* nChannels) noexcept {
  if (!table.valid()) return false;
  bool wantChannels = d.nChannels >= 1 && d.nChannels <= kMaxChannels && nChannels != nullptr;
  if (d.algo == kAny && d.proto == kAny) {
    if (wantChannels) *nChannels = d.nChannels;
    return wantChannels;
  }
  int algo = -1, proto = -1;
  if (!pickEntry(d, table, &algo, &proto)) return false;
  // Only entries scanned before the chosen one can tie with it (NCCL keeps the first strictly smaller),
  // and among enabled entries only an exact 0.0 (or -0.0) ties.
  float* cells = table.data();
  const int chosen = algo * table.numProto() + proto;
  for (int i = 0; i < chosen; ++i) {
    if (cells[i] == 0.0f) cells[i] = kTieRaise;
  }
  cells[chosen] = 0.0f;
  if (wantChannels) *nChannels = d.nChannels;
  return true;
}

}  // namespace wirewise
