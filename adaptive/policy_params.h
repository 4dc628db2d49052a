// The adaptive policy's parameters (docs/policy.md). The ones a user can set start from the settings'
// defaults (common/settings.h) and the runtime fills them from the settings in force; the rest are fixed.
#pragma once

#include <cstdint>

#include "adaptive/detector.h"
#include "common/settings.h"

namespace wirewise::adapt {

struct PolicyParams {
  DetectorParams detector;
  double exploreShare = defaults::kExploreShare;  // exploration may use at most this share of the comm's measured time
  double switchGain = defaults::kSwitchGain;      // a candidate must beat the incumbent by this much to replace it
  double pruneFactor = 2.0;     // calibration tries only (algo, proto) NCCL predicts within this factor of its best
  double closeFactor = 1.25;    // a re-probe tries only candidates predicted within this factor of the incumbent
  int maxReprobes = 5;          // candidates measured per detection episode, before the channel refinement
  int minSamples = 3;           // merged collectives behind an estimate or a detector observation
  uint64_t probeSpacing = defaults::kProbeSpacing;  // length (collectives) of an interval that carries probes
  uint64_t spacing = 0;         // length of other intervals; 0: the agreement's own spacing
};

}  // namespace wirewise::adapt
