// Cluster and faults from a wiring map or an adaptation log; see cluster_source.h.
#include "advise/cluster_source.h"

#include <algorithm>
#include <map>
#include <set>

#include <fmt/core.h>
#include <nlohmann/json.hpp>

namespace wirewise::advise {
namespace {

sim::GpuKind kindFromName(const std::string& name) {
  if (name.find("H200") != std::string::npos) return sim::GpuKind::H200Sxm;
  if (name.find("H100") != std::string::npos) {
    return name.find("PCIe") != std::string::npos ? sim::GpuKind::Pcie : sim::GpuKind::H100Sxm;
  }
  if (name.find("A100") != std::string::npos) return sim::GpuKind::A100Sxm;
  return sim::GpuKind::Generic;
}

bool isNicKind(const std::string& k) { return k == "ib" || k == "roce" || k == "netdev" || k == "rail"; }

// "gpu3:nvlink2" -> 3; -1 if the id does not start with gpu<N>.
int gpuOfId(const std::string& id) {
  if (id.rfind("gpu", 0) != 0) return -1;
  int g = 0;
  size_t i = 3;
  if (i >= id.size() || id[i] < '0' || id[i] > '9') return -1;
  while (i < id.size() && id[i] >= '0' && id[i] <= '9') g = g * 10 + (id[i++] - '0');
  return g;
}

struct LinkSeen {
  std::string kind, state;
  double nominal = 0, rateRatio = 0;
};

}  // namespace

WiringCluster clusterFromWiring(const wiring::WiringMap& map, int nodes, double nicGbps, int nicsPerNode) {
  WiringCluster out;
  sim::ClusterSpec& c = out.cluster;
  const std::string name = map.gpus.empty() ? std::string("unknown GPU") : map.gpus.front().name;

  c.gpu = kindFromName(name);
  const sim::GpuPreset p = sim::gpuPreset(c.gpu);
  c.nodes = std::max(1, nodes);
  std::vector<const wiring::GpuInfo*> gpus;  // the GPUs CUDA sees, in the map's order
  for (const wiring::GpuInfo& g : map.gpus) {
    if (g.present) gpus.push_back(&g);
  }
  c.gpusPerNode = std::max(1, static_cast<int>(gpus.size()));
  c.pcieGbps = p.pcieGbps;
  c.computeCapability = map.gpus.empty() || map.gpus.front().ccMajor == 0
                            ? p.computeCapability
                            : map.gpus.front().ccMajor * 10 + map.gpus.front().ccMinor;
  c.nicsPerNode = nicsPerNode > 0 ? nicsPerNode : c.gpusPerNode;
  c.nicGbps = nicGbps > 0 ? nicGbps : 50;
  const bool nvlink = std::any_of(map.pairs.begin(), map.pairs.end(),
                                  [](const wiring::PairResult& r) { return r.link == wiring::LinkType::kNvlink; });
  double bundle = 0;
  int maxLinks = 0;
  for (const wiring::GpuInfo* g : gpus) {
    maxLinks = std::max(maxLinks, g->nvlinksUp);
    if (g->nvlinksUp > 0 && g->nvlinkGbpsPerLink > 0) bundle = std::max(bundle, g->nvlinksUp * g->nvlinkGbpsPerLink);
  }
  // NCCL's own figure for the kind (what its model and the truth model are calibrated to), else NVML's.
  c.nvlinkGbps = nvlink ? (p.nvlinkGbps > 0 ? p.nvlinkGbps : (bundle > 0 ? bundle : 200)) : 0;
  c.nvls = nvlink && p.nvls;

  // Each GPU's measured health: its worst pair's best figure against the host's best pair (the simulator has one
  // bundle per GPU, so a slow pair slows both ends), and its active NVLinks against the most any GPU has.
  double best = -1;
  for (const wiring::PairResult& r : map.pairs) best = std::max(best, r.bestUniGbps());
  std::vector<double> worst(gpus.size(), -1);
  for (size_t i = 0; i < gpus.size(); ++i) {
    for (const wiring::PairResult& r : map.pairs) {
      if ((r.src != gpus[i]->index && r.dst != gpus[i]->index) || r.bestUniGbps() <= 0) continue;
      worst[i] = worst[i] < 0 ? r.bestUniGbps() : std::min(worst[i], r.bestUniGbps());
    }
  }
  sim::LinkState measured = sim::healthyLinkState(c);
  bool degraded = false;
  for (size_t i = 0; i < gpus.size() && c.nvlinkGbps > 0; ++i) {
    double ratio = best > 0 && worst[i] > 0 ? worst[i] / best : 1.0;
    if (maxLinks > 0 && gpus[i]->nvlinksUp >= 0) ratio = std::min(ratio, double(gpus[i]->nvlinksUp) / maxLinks);
    if (ratio < 0.9) {
      measured.nodes[0].nvlinkMult[i] = std::max(0.01, ratio);
      degraded = true;
    }
  }
  if (degraded) out.measured.push_back(std::move(measured));
  out.note =
      fmt::format("{} x {} ({}), {}, {} node(s), {} NICs x {:g} GB/s", c.gpusPerNode, name, sim::gpuKindName(c.gpu),
                  c.nvlinkGbps > 0 ? fmt::format("NVLink {:g} GB/s per GPU", c.nvlinkGbps) : "no NVLink", c.nodes,
                  c.nicsPerNode, c.nicGbps);
  return out;
}

LogFaults faultsFromLog(std::string_view text, const sim::ClusterSpec& c, int node) {
  LogFaults out;
  std::vector<nlohmann::json> events;
  size_t pos = 0;
  while (pos < text.size()) {
    size_t end = text.find('\n', pos);
    if (end == std::string_view::npos) end = text.size();
    const std::string_view line = text.substr(pos, end - pos);
    pos = end + 1;
    if (line.find_first_not_of(" \t\r") == std::string_view::npos) continue;
    nlohmann::json j = nlohmann::json::parse(line, nullptr, false);
    if (j.is_discarded() || !j.is_object()) {
      ++out.skippedLines;
      continue;
    }
    if (j.value("event", "") == "link_health" && j.contains("links") && j["links"].is_array()) {
      events.push_back(std::move(j));
    }
  }
  out.linkHealthEvents = static_cast<int>(events.size());

  // NIC indices in the order of the ids, and the best nominal capacity per kind.
  std::set<std::string> nicIds;
  std::map<std::string, double> bestNominal;
  for (const auto& e : events) {
    for (const auto& l : e["links"]) {
      if (!l.is_object()) continue;
      const std::string kind = l.value("kind", ""), id = l.value("id", "");
      if (isNicKind(kind)) nicIds.insert(kind + "/" + id);
      bestNominal[kind] = std::max(bestNominal[kind], l.value("nominal_gbps", 0.0));
    }
  }
  auto nicIndex = [&](const std::string& key) {
    const auto it = nicIds.find(key);
    return static_cast<int>(std::distance(nicIds.begin(), it)) % std::max(1, c.nicsPerNode);
  };
  const int bundleLinks = std::max(1, static_cast<int>(std::lround(c.nvlinkGbps / 20.6)));
  const size_t n = static_cast<size_t>(std::clamp(node, 0, c.nodes - 1));
  const sim::LinkState healthy = sim::healthyLinkState(c);

  std::map<std::string, LinkSeen> current;
  std::set<std::string> labels;
  for (const auto& e : events) {
    for (const auto& l : e["links"]) {
      if (!l.is_object()) continue;
      LinkSeen s{l.value("kind", ""), l.value("state", "up"), l.value("nominal_gbps", 0.0), l.value("rate_ratio", 0.0)};
      current[s.kind + "/" + l.value("id", "")] = s;
    }
    sim::LinkState state = healthy;
    for (const auto& [key, s] : current) {
      if (s.state == "up") continue;
      const double best = bestNominal[s.kind];
      double factor = 0.5;
      if (s.kind == "rail" && s.rateRatio > 0 && s.rateRatio < 0.99) factor = s.rateRatio;
      else if (best > 0 && s.nominal > 0 && s.nominal < 0.99 * best) factor = s.nominal / best;
      if (s.state == "down") factor = 0.01;
      sim::NodeLinkState& ns = state.nodes[n];
      const std::string id = key.substr(key.find('/') + 1);
      if (isNicKind(s.kind)) {
        ns.nicMult[static_cast<size_t>(nicIndex(key))] *= factor;
      } else if ((s.kind == "nvlink" || s.kind == "pcie") && gpuOfId(id) >= 0 && gpuOfId(id) < c.gpusPerNode) {
        const size_t g = static_cast<size_t>(gpuOfId(id));
        if (s.kind == "pcie") ns.pcieMult[g] *= factor;
        else ns.nvlinkMult[g] *= (bundleLinks - 1 + factor) / bundleLinks;  // one link of the bundle
      } else {
        continue;
      }
      labels.insert(fmt::format("{} {} ({:.0f}%)", id, s.state, 100 * factor));
    }
    if (state != healthy && std::find(out.states.begin(), out.states.end(), state) == out.states.end()) {
      out.states.push_back(std::move(state));
    }
  }
  for (const std::string& l : labels) out.label += (out.label.empty() ? "" : ", ") + l;
  return out;
}

}  // namespace wirewise::advise
