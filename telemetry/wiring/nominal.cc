#include "telemetry/wiring/nominal.h"

#include <algorithm>
#include <cstdio>

#include "telemetry/wiring/text_util.h"

namespace wirewise::wiring {
namespace {

const char* nvlinkGeneration(int ccMajor) {
  switch (ccMajor) {
    case 8: return "NVLink3";
    case 9: return "NVLink4";
    case 10: return "NVLink5";
    default: return "NVLink";
  }
}

}  // namespace

double pcieLaneGbps(int gen) {
  switch (gen) {
    case 1: return 0.25;   // 2.5 GT/s, 8b/10b
    case 2: return 0.5;    // 5 GT/s, 8b/10b
    case 3: return 0.985;  // 8 GT/s, 128b/130b
    case 4: return 1.969;  // 16 GT/s
    case 5: return 3.938;  // 32 GT/s
    case 6: return 7.563;  // 64 GT/s PAM4, FLIT mode (242/256)
    default: return -1;
  }
}

// Datasheets: A100 600 GB/s over 12 NVLink3 links, H100/H200 900 GB/s over 18 NVLink4 links, B200
// 1.8 TB/s over 18 NVLink5 links; all bidirectional totals, so per link and direction 25 / 25 / 50 GB/s.
double nvlinkLinkGbps(int ccMajor) {
  switch (ccMajor) {
    case 8: return 25.0;
    case 9: return 25.0;
    case 10: return 50.0;
    default: return -1;
  }
}

int nvlinkDefaultLinks(int ccMajor) {
  switch (ccMajor) {
    case 8: return 12;
    case 9: return 18;
    case 10: return 18;
    default: return 0;
  }
}

Nominal pairNominal(const WiringMap& map, const PairResult& pair) {
  const GpuInfo* a = map.gpu(pair.src);
  const GpuInfo* b = map.gpu(pair.dst);
  Nominal n;
  if (!a || !b) return n;
  if (pair.link == LinkType::kNvlink) {
    const int cc = std::max(a->ccMajor, b->ccMajor);
    double perLink = -1;
    std::string perLinkBasis;
    if (a->nvlinkGbpsPerLink > 0 && b->nvlinkGbpsPerLink > 0) {
      perLink = std::min(a->nvlinkGbpsPerLink, b->nvlinkGbpsPerLink);
      perLinkBasis = "NVML";
    } else if (nvlinkLinkGbps(cc) > 0) {
      perLink = nvlinkLinkGbps(cc);
      perLinkBasis = nvlinkGeneration(cc);
    }
    int links = -1;
    std::string linkBasis;
    if (pair.nvlinks >= 0) {
      links = pair.nvlinks;
      linkBasis = "between the pair";
    } else if (a->nvlinksUp >= 0 && b->nvlinksUp >= 0) {
      links = std::min(a->nvlinksUp, b->nvlinksUp);
      linkBasis = "active per NVML, the fewer of the two GPUs'";
    } else if (nvlinkDefaultLinks(cc) > 0) {
      links = nvlinkDefaultLinks(cc);
      linkBasis = "SXM default";
    }
    if (perLink > 0 && links > 0) {
      n.gbps = links * perLink;
      n.basis = std::to_string(links) + " NVLink(s) x " + fixed(perLink, 1) + " GB/s; links: " + linkBasis +
                "; speed: " + perLinkBasis;
    }
    return n;
  }
  if (pair.link == LinkType::kPcie) {
    int gen = std::min(a->pcie.gen, b->pcie.gen);
    int width = std::min(a->pcie.width, b->pcie.width);
    if (gen > 0 && width > 0 && pcieLaneGbps(gen) > 0) {
      n.gbps = width * pcieLaneGbps(gen);
      n.basis = "PCIe Gen" + std::to_string(gen) + " x" + std::to_string(width) + " (" + fixed(pcieLaneGbps(gen), 3) +
                " GB/s per lane)";
    }
  }
  return n;
}

Nominal memoryNominal(const GpuInfo& gpu) {
  // Datasheet HBM bandwidths (read + write traffic). Order matters: the first match wins, so the more
  // specific names come first.
  struct Entry {
    const char* nameContains;
    double gbps;
    const char* basis;
  };
  static const Entry kTable[] = {
      {"GB200", 8000, "GB200 datasheet: 8 TB/s HBM3e per GPU"},
      {"B200", 8000, "B200 datasheet: 8 TB/s HBM3e"},
      {"H200", 4800, "H200 datasheet: 4.8 TB/s HBM3e"},
      {"H100 PCIe", 2000, "H100 PCIe datasheet: 2.0 TB/s HBM2e"},
      {"H100 NVL", 3900, "H100 NVL datasheet: 3.9 TB/s HBM3"},
      {"H100", 3350, "H100 SXM datasheet: 3.35 TB/s HBM3"},
      {"H800", 3350, "H800 SXM: 3.35 TB/s HBM3"},
      {"A100-SXM4-80GB", 2039, "A100 80GB SXM datasheet: 2039 GB/s HBM2e"},
      {"A100 80GB PCIe", 1935, "A100 80GB PCIe datasheet: 1935 GB/s HBM2e"},
      {"A100", 1555, "A100 40GB datasheet: 1555 GB/s HBM2"},
  };
  Nominal n;
  for (const Entry& e : kTable) {
    if (gpu.name.find(e.nameContains) != std::string::npos) {
      n.gbps = e.gbps;
      n.basis = e.basis;
      break;
    }
  }
  return n;
}

}  // namespace wirewise::wiring
