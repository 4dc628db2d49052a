// Human-readable forms of an analysed wiring map: text matrices for the terminal and an SVG heatmap
// (layout and colours in docs/wiring.md). Both are pure functions of the map and its analysis.
#pragma once

#include <string>

#include "telemetry/wiring/analysis.h"
#include "telemetry/wiring/wiring_map.h"

namespace wirewise::wiring {

// Header, then matrices (row = source, column = destination): unidirectional GB/s (best of copy engine,
// SM write, SM read; the diagonal is each GPU's self copy), fraction of nominal, bidirectional GB/s,
// one-way latency in µs; then the flags, one per line.
std::string matrixText(const WiringMap& map, const Analysis& analysis);

// Colour of a fraction of nominal: red at 0.3 and below, yellow at 0.6, green at 0.9 and above,
// interpolated between; "#rrggbb".
std::string ratioColour(double ratio);

// One cell per (source, destination) with class "cell" and data-src/data-dst/data-gbps/data-ratio
// attributes; flagged cells also carry class "flagged" and a red outline. Self-contained SVG 1.1.
std::string heatmapSvg(const WiringMap& map, const Analysis& analysis);

}  // namespace wirewise::wiring
