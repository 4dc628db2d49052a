#include "telemetry/wiring/wiring_map.h"

#include <algorithm>

namespace wirewise::wiring {

const char* linkTypeName(LinkType t) {
  switch (t) {
    case LinkType::kUnknown: return "unknown";
    case LinkType::kNvlink: return "nvlink";
    case LinkType::kPcie: return "pcie";
  }
  return "unknown";
}

bool parseLinkType(const std::string& s, LinkType* out) {
  if (s == "unknown") *out = LinkType::kUnknown;
  else if (s == "nvlink") *out = LinkType::kNvlink;
  else if (s == "pcie") *out = LinkType::kPcie;
  else return false;
  return true;
}

double PairResult::bestUniGbps() const { return std::max({ceGbps, smWriteGbps, smReadGbps}); }

const GpuInfo* WiringMap::gpu(int index) const {
  for (const GpuInfo& g : gpus) {
    if (g.index == index) return &g;
  }
  return nullptr;
}

const PairResult* WiringMap::pair(int src, int dst) const {
  for (const PairResult& p : pairs) {
    if (p.src == src && p.dst == dst) return &p;
  }
  return nullptr;
}

}  // namespace wirewise::wiring
