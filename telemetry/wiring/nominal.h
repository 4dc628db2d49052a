// What the hardware claims: per-direction bandwidth of a link type, and each GPU's memory bandwidth, with
// the source of every figure (docs/wiring.md lists them). The probe measures; this says what it should
// have found, so the analysis can flag links well below their claim.
#pragma once

#include <string>

#include "telemetry/wiring/wiring_map.h"

namespace wirewise::wiring {

struct Nominal {
  double gbps = -1;   // per direction for links; read + write for memory; -1 = unknown
  std::string basis;  // how it was derived, e.g. "NVML: 18 NVLink(s) x 26.6 GB/s"
  bool known() const { return gbps > 0; }
};

// Per-lane, per-direction PCIe payload rate after line encoding (PCI-SIG: 2.5/5/8/16/32/64 GT/s with
// 8b/10b up to Gen2, 128b/130b for Gen3-5, FLIT for Gen6). -1 for an unknown generation.
double pcieLaneGbps(int gen);

// NVLink per-link, per-direction rate by the GPU's compute capability major version (NVLink3 on sm_80,
// NVLink4 on sm_90, NVLink5 on sm_100), and the link count the SXM parts ship with. -1 / 0 if unknown.
double nvlinkLinkGbps(int ccMajor);
int nvlinkDefaultLinks(int ccMajor);

// Per-direction nominal of the link src -> dst. NVLink: links x per-link speed, using NVML's count and
// speed when the map has them (the pair's own link count, else the smaller of the two GPUs' active links:
// the NVSwitch case), else the SXM defaults for the GPU generation. PCIe: the narrower of the two GPUs'
// trained generation x width. Unknown link type: unknown.
Nominal pairNominal(const WiringMap& map, const PairResult& pair);

// Memory bandwidth (read + write traffic) by product name: the datasheet HBM figure, unknown otherwise.
Nominal memoryNominal(const GpuInfo& gpu);

}  // namespace wirewise::wiring
