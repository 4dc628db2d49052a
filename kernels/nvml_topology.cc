#include "kernels/nvml_topology.h"

#include <dlfcn.h>

#include <cstddef>
#include <cstdio>
#include <cstdlib>

#include "telemetry/collectors/nvml_api.h"

namespace wirewise::probe {
namespace {

namespace nvml = collectors::nvml;

// nvmlPciInfo_t (nvml.h, API 12/13), read by nvmlDeviceGetPciInfo_v3.
struct PciInfo {
  char busIdLegacy[16];
  unsigned domain, bus, device, pciDeviceId, pciSubSystemId;
  char busId[32];
};
// nvml.h (checked against NVIDIA's published header): 16-byte legacy id, five unsigned ints, 32-byte id.
static_assert(sizeof(PciInfo) == 68 && offsetof(PciInfo, domain) == 16 && offsetof(PciInfo, busId) == 36,
              "nvmlPciInfo_t layout");

using GetPciInfoFn = nvml::Return (*)(nvml::Device, PciInfo*);
using GetUintFn = nvml::Return (*)(nvml::Device, unsigned*);
using GetNameFn = nvml::Return (*)(nvml::Device, char*, unsigned);

// "0000:19:00.0" and "00000000:19:00.0" name the same device: compare the numbers.
bool parseBusId(const std::string& s, unsigned* domain, unsigned* bus, unsigned* dev, unsigned* fn) {
  return std::sscanf(s.c_str(), "%x:%x:%x.%x", domain, bus, dev, fn) == 4;
}

bool sameBus(const std::string& a, const std::string& b) {
  unsigned d1, b1, v1, f1, d2, b2, v2, f2;
  return parseBusId(a, &d1, &b1, &v1, &f1) && parseBusId(b, &d2, &b2, &v2, &f2) && d1 == d2 && b1 == b2 && v1 == v2 &&
         f1 == f2;
}

template <typename Fn>
Fn sym(void* lib, const char* name) {
  return reinterpret_cast<Fn>(::dlsym(lib, name));
}

}  // namespace

void addNvmlTopology(const std::string& library, wiring::WiringMap* map) {
  void* lib = ::dlopen(library.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!lib) {
    map->notes.push_back("NVML unavailable (" + library +
                         "): link types come from CUDA's peer attributes, NVLink counts and PCIe widths are unknown");
    return;
  }
  auto init = sym<nvml::InitFn>(lib, "nvmlInit_v2");
  auto count = sym<nvml::GetCountFn>(lib, "nvmlDeviceGetCount_v2");
  auto handle = sym<nvml::GetHandleByIndexFn>(lib, "nvmlDeviceGetHandleByIndex_v2");
  auto pciInfo = sym<GetPciInfoFn>(lib, "nvmlDeviceGetPciInfo_v3");
  auto linkState = sym<nvml::GetNvLinkStateFn>(lib, "nvmlDeviceGetNvLinkState");
  auto fields = sym<nvml::GetFieldValuesFn>(lib, "nvmlDeviceGetFieldValues");
  auto curGen = sym<GetUintFn>(lib, "nvmlDeviceGetCurrPcieLinkGeneration");
  auto curWidth = sym<GetUintFn>(lib, "nvmlDeviceGetCurrPcieLinkWidth");
  auto maxGen = sym<GetUintFn>(lib, "nvmlDeviceGetMaxPcieLinkGeneration");
  auto maxWidth = sym<GetUintFn>(lib, "nvmlDeviceGetMaxPcieLinkWidth");
  auto name = sym<GetNameFn>(lib, "nvmlDeviceGetName");
  auto shutdown = sym<nvml::ShutdownFn>(lib, "nvmlShutdown");
  if (!init || !count || !handle || !pciInfo || init() != nvml::kSuccess) {
    map->notes.push_back("NVML present but not usable (" + library + "): NVLink counts and PCIe widths are unknown");
    return;  // never dlclose NVML (as NCCL)
  }
  unsigned n = 0;
  if (count(&n) != nvml::kSuccess) n = 0;
  const bool allVisible = std::getenv("CUDA_VISIBLE_DEVICES") == nullptr;
  int nextMissing = 1000;  // indices for GPUs CUDA does not see: beyond any CUDA ordinal
  for (unsigned i = 0; i < n; ++i) {
    nvml::Device dev = nullptr;
    PciInfo pci{};
    if (handle(i, &dev) != nvml::kSuccess || pciInfo(dev, &pci) != nvml::kSuccess) continue;
    wiring::GpuInfo* g = nullptr;
    for (auto& cand : map->gpus) {
      if (sameBus(cand.pciBusId, pci.busId)) g = &cand;
    }
    if (!g) {
      if (!allVisible) continue;
      wiring::GpuInfo missing;
      missing.index = nextMissing++;
      missing.pciBusId = pci.busId;
      missing.present = false;
      char buf[96] = {0};
      if (name && name(dev, buf, sizeof buf) == nvml::kSuccess) missing.name = buf;
      missing.error = "NVML lists it (index " + std::to_string(i) + "), CUDA does not";
      map->gpus.push_back(std::move(missing));
      continue;
    }
    if (linkState && fields) {
      nvml::FieldValue lc{};
      lc.fieldId = nvml::kFiNvlinkLinkCount;
      unsigned links = nvml::kMaxNvlinks;
      if (fields(dev, 1, &lc) == nvml::kSuccess && lc.nvmlReturn == nvml::kSuccess) {
        links = static_cast<unsigned>(nvml::asU64(lc));
        if (links > nvml::kMaxNvlinks) links = nvml::kMaxNvlinks;
      }
      int up = 0;
      double speed = -1;
      for (unsigned l = 0; l < links; ++l) {
        nvml::EnableState st = 0;
        nvml::Return r = linkState(dev, l, &st);
        if (r != nvml::kSuccess) break;  // beyond the device's links
        if (st != 1) continue;
        ++up;
        nvml::FieldValue sp{};
        sp.fieldId = nvml::kFiNvlinkGetSpeed;
        sp.scopeId = l;
        if (speed < 0 && fields(dev, 1, &sp) == nvml::kSuccess && sp.nvmlReturn == nvml::kSuccess && nvml::asU64(sp) > 0) {
          speed = static_cast<double>(nvml::asU64(sp)) / 1000.0;  // MBps -> GB/s
        }
      }
      g->nvlinksUp = up;
      if (speed > 0) g->nvlinkGbpsPerLink = speed;
    }
    unsigned v = 0;
    if (curGen && curGen(dev, &v) == nvml::kSuccess) g->pcie.gen = static_cast<int>(v);
    if (curWidth && curWidth(dev, &v) == nvml::kSuccess) g->pcie.width = static_cast<int>(v);
    if (maxGen && maxGen(dev, &v) == nvml::kSuccess) g->pcie.maxGen = static_cast<int>(v);
    if (maxWidth && maxWidth(dev, &v) == nvml::kSuccess) g->pcie.maxWidth = static_cast<int>(v);
  }
  for (auto& p : map->pairs) {
    const wiring::GpuInfo* a = map->gpu(p.src);
    const wiring::GpuInfo* b = map->gpu(p.dst);
    if (!a || !b || a->nvlinksUp < 0 || b->nvlinksUp < 0) continue;
    // Both GPUs with active NVLinks: NVLink, unless CUDA saw no native peer atomics for this very pair
    // (NVLink-bridged pairs in a PCIe box: the others reach each other over PCIe).
    const bool cudaSaysPcie = p.linkSource == "cuda-p2p-attributes" && p.link == wiring::LinkType::kPcie;
    if (a->nvlinksUp > 0 && b->nvlinksUp > 0 && cudaSaysPcie) continue;
    p.link = a->nvlinksUp > 0 && b->nvlinksUp > 0 ? wiring::LinkType::kNvlink : wiring::LinkType::kPcie;
    p.linkSource = "nvml";
  }
  if (shutdown) shutdown();
}

}  // namespace wirewise::probe
