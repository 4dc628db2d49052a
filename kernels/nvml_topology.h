// What NVML says about the GPUs the probe measured: active NVLinks and their speed, PCIe generation and
// width (current and maximum), and GPUs NVML lists that CUDA does not see. NVML is opened with dlopen, as
// the collectors do (nvml_api.h); without it the map keeps CUDA's link classification and a note says so.
#pragma once

#include <string>

#include "telemetry/wiring/wiring_map.h"

namespace wirewise::probe {

// Fills nvlinksUp / nvlinkGbpsPerLink / pcie for the map's GPUs (matched by PCI bus id), sets each pair's
// link to nvlink when both GPUs have active NVLinks (NVSwitch systems; "nvml" as link_source) unless CUDA
// found no native peer atomics for that pair, or to pcie when
// either has none, and adds NVML's GPUs unknown to CUDA as present = false (only when
// CUDA_VISIBLE_DEVICES is unset, since otherwise hiding GPUs is intended). Appends a note on any problem.
void addNvmlTopology(const std::string& library, wiring::WiringMap* map);

}  // namespace wirewise::probe
