// Judges a wiring map: each pair's measured bandwidth against its nominal figure and against the median
// of the pairs of its link type, each GPU's self copy against its memory bandwidth, and the structural
// failures (missing GPU, no peer access, a PCIe link trained below what it supports, data that did not
// verify). Every flag carries its ratio, so "degraded" always comes with "how much".
#pragma once

#include <string>
#include <vector>

#include "telemetry/wiring/nominal.h"
#include "telemetry/wiring/wiring_map.h"

namespace wirewise::wiring {

struct AnalysisOptions {
  // A pair whose best unidirectional figure is below flagBelow x nominal is flagged. Healthy links reach
  // 0.75-0.9 of their line rate with large copies (docs/wiring.md), so 0.6 flags real losses (a lane or
  // half the NVLinks gone) without flagging protocol overhead.
  double flagBelow = 0.6;
  // Flagged too: below peerBelow x the median of the pairs with the same link type (needs 3 or more such
  // pairs); catches a weak pair where the nominal figure is unknown.
  double peerBelow = 0.75;
};

enum class FlagKind : uint8_t {
  kMissingGpu,       // listed (NVML, earlier map) but not visible to CUDA
  kNoPeerAccess,     // both GPUs present, no peer access
  kNotMeasured,      // both present, nothing measured (error says why)
  kUnidirectional,   // best unidirectional below flagBelow x nominal
  kBidirectional,    // bidirectional below flagBelow x 2 x nominal (only when neither direction is flagged)
  kBelowPeers,       // below peerBelow x median of its link type
  kSelfCopy,         // self copy below flagBelow x memory bandwidth
  kPcieTrainedDown,  // PCIe generation or width below the maximum
  kVerifyFailed,     // the copied data were wrong
};
const char* flagKindName(FlagKind k);  // "missing_gpu", "no_peer_access", "not_measured", "unidirectional", ...

struct Flag {
  FlagKind kind = FlagKind::kUnidirectional;
  int src = -1, dst = -1;     // dst == src for GPU-level flags
  double measuredGbps = -1;   // -1 when not applicable
  double referenceGbps = -1;  // the nominal (or the peers' median) it was compared with
  double ratio = -1;          // measured / reference
  std::string text;           // one line, e.g. "gpu0->gpu2: 152.0 GB/s is 0.40 of nominal 380.0 GB/s (...)"
};

struct PairVerdict {
  int src = 0, dst = 0;
  Nominal nominal;          // per direction
  double uniRatio = -1;     // bestUniGbps / nominal
  double bidirRatio = -1;   // bidirGbps / (2 x nominal)
  bool flagged = false;
};

struct GpuVerdict {
  int index = 0;
  Nominal memory;
  double selfCopyRatio = -1;
  bool flagged = false;
};

struct Analysis {
  AnalysisOptions options;
  std::vector<PairVerdict> pairs;  // in the map's pair order
  std::vector<GpuVerdict> gpus;    // in the map's GPU order
  std::vector<Flag> flags;         // GPU-level first, then pairs in map order

  const PairVerdict* pair(int src, int dst) const;
  const GpuVerdict* gpu(int index) const;
};

Analysis analyze(const WiringMap& map, const AnalysisOptions& options = {});

}  // namespace wirewise::wiring
