// The adaptive policy's parameters (docs/policy.md). Defaults are the documented ones; the runtime fills
// them from the settings registry (WIREWISE_EXPLORE_PCT, WIREWISE_SWITCH_GAIN_PCT, ...).
#pragma once

#include <cstdint>

#include "adaptive/detector.h"

namespace wirewise::adapt {

struct PolicyParams {
  DetectorParams detector;
  double exploreShare = 0.015;  // exploration may use at most this share of the comm's measured time
  double switchGain = 0.03;     // a candidate must beat the incumbent by this much to replace it
  double pruneFactor = 2.0;     // calibration tries only (algo, proto) NCCL predicts within this factor of its best
  double closeFactor = 1.25;    // a re-probe tries only candidates predicted within this factor of the incumbent
  int maxReprobes = 5;          // candidates measured per detection episode, before the channel refinement
  int minSamples = 3;           // merged collectives behind an estimate or a detector observation
  uint64_t probeSpacing = 8;    // length (collectives) of an interval that carries probes
  uint64_t spacing = 0;         // length of other intervals; 0: the agreement's own spacing
};

}  // namespace wirewise::adapt
