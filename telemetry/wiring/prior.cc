#include "telemetry/wiring/prior.h"

#include <exception>

#include "telemetry/wiring/wiring_json.h"

namespace wirewise::wiring {

std::vector<collectors::LinkHealth> priorLinks(const WiringMap& map, const Analysis& analysis, int64_t nowNs) {
  std::vector<collectors::LinkHealth> out;
  for (const GpuInfo& g : map.gpus) {
    if (g.present) continue;
    collectors::LinkHealth l;
    l.kind = collectors::LinkKind::kPcie;
    l.id = "gpu" + std::to_string(g.index) + ":wiring";
    l.present = false;
    l.up = false;
    collectors::refreshState(l, nowNs);
    out.push_back(std::move(l));
  }
  for (const PairResult& p : map.pairs) {
    const GpuInfo* a = map.gpu(p.src);
    const GpuInfo* b = map.gpu(p.dst);
    const PairVerdict* v = analysis.pair(p.src, p.dst);
    if (!a || !b || !v) continue;
    collectors::LinkHealth l;
    l.kind = p.link == LinkType::kNvlink ? collectors::LinkKind::kNvlink : collectors::LinkKind::kPcie;
    const char* suffix = p.link == LinkType::kNvlink ? "nvlink" : p.link == LinkType::kPcie ? "pcie" : "p2p";
    l.id = "gpu" + std::to_string(p.src) + "->gpu" + std::to_string(p.dst) + ":" + suffix;
    l.present = a->present && b->present;
    const double measured = p.bestUniGbps();
    // Copies work without peer access over PCIe (staged through the host); over NVLink the link is unusable.
    l.up = l.present && measured > 0 && (p.peerAccess || p.link != LinkType::kNvlink);
    // The reference the analysis used for this pair: the flag's, else the nominal, else the measurement.
    // Without peer access the copies are staged through the host: what they reach is the pair's capacity.
    double reference = v->nominal.known() && p.peerAccess ? v->nominal.gbps : measured;
    bool degraded = false;
    for (const Flag& f : analysis.flags) {
      if (f.src != p.src || f.dst != p.dst || f.src == f.dst) continue;
      if (f.kind == FlagKind::kUnidirectional || f.kind == FlagKind::kBelowPeers || f.kind == FlagKind::kVerifyFailed) {
        degraded = true;
        if (f.referenceGbps > 0) reference = f.referenceGbps;
      }
    }
    if (reference > 0) {
      l.bestNominalBps = reference * 1e9;
      l.nominalBps = degraded && measured > 0 ? measured * 1e9 : reference * 1e9;
    }
    collectors::refreshState(l, nowNs);
    // refreshState only sees capacity; a pair whose data did not verify is degraded at any speed.
    if (degraded && l.state == collectors::LinkState::kUp) l.state = collectors::LinkState::kDegraded;
    out.push_back(std::move(l));
  }
  return out;
}

bool loadWiringPrior(const std::string& path, int64_t nowNs, WiringPrior* out, std::string* error) {
  try {
    WiringMap map;
    if (!readMapFile(path, &map, error)) return false;
    Analysis analysis = analyze(map);
    out->source = path;
    out->host = map.host;
    out->links = priorLinks(map, analysis, nowNs);
    out->flags.clear();
    for (const Flag& f : analysis.flags) out->flags.push_back(f.text);
    return true;
  } catch (const std::exception& e) {  // allocation failure; nothing else throws here
    *error = path + ": " + e.what();
    return false;
  }
}

}  // namespace wirewise::wiring
