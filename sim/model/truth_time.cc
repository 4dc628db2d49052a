// Flow-level truth model; see truth.h for the shape and docs/simulator-model.md for calibration sources.
#include <algorithm>
#include <cmath>
#include <array>
#include <limits>

#include "sim/model/truth.h"

namespace wirewise::sim {
namespace {

// Per-preset calibration (fit to model.md §8; the fit is documented in docs/simulator-model.md).
struct Calib {
  double nvlinkEff;     // usable fraction of the NVLink bundle (I1: ~370 ring busbw on H100; I2: ~231 on A100)
  double pcieEff;       // usable fraction of PCIe for GPU peer traffic without NVLink (I9: host-bound, ~28)
  double ctaCap[3];     // per-channel (one CTA) payload GB/s by protocol (S10 protocol sweep; LL: S6 64 KB point)
  double baseLat[3];    // µs, fixed cost by protocol
  double hopIntra[3];   // µs per intra-node hop (S6 8 B point: 14 hops ~ 13.7 µs with base)
  double hopNet[3];     // µs per network hop before net_latency_us (I11: 128 GPUs, 8 B ~ 62-72 µs)
  double nvlsBase;      // µs, NVLS fixed cost (S7 1b: ~25 µs at 1 KB; 1c: 1 MB at ~35 µs)
  double tau[3];        // ramp time constant (µs) for ring/tree/PAT by protocol
  double tauNvls;       // ramp time constant (µs) for NVLS/NVLSTree
};

constexpr Calib kHopper = {0.99, 0.6, {7.5, 13.5, 36}, {6.0, 12, 9}, {0.55, 1.5, 2.5}, {4.6, 6, 8}, 22,
                           {0.3, 7.3, 7.3}, 34};
constexpr Calib kAmpere = {0.965, 0.6, {2.4, 9, 24}, {6.5, 12, 9}, {0.55, 1.5, 2.5}, {4.6, 6, 8}, 24,
                           {1, 55, 16}, 34};
constexpr Calib kPcie = {0.965, 0.6, {3, 8, 20}, {6.5, 12, 9}, {2.4, 3.5, 5}, {4.6, 6, 8}, 24, {1, 20, 20}, 34};

const Calib& calibFor(GpuKind g) {
  switch (g) {
    case GpuKind::H100Sxm:
    case GpuKind::H200Sxm: return kHopper;
    case GpuKind::Pcie: return kPcie;
    case GpuKind::A100Sxm:
    case GpuKind::Generic: break;
  }
  return kAmpere;
}

// Payload share of the bytes a protocol puts on a link (model.md §3, device.h line formats). Across the network the
// proxy moves whole LL/LL128 buffers, so the line format is the whole cost.
constexpr double kProtoEff[3] = {0.5, 120.0 / 128.0, 1.0};
// On intra-node peer links (NVLink, or PCIe without it) the SMs store the lines straight into the peer's buffer, and
// LL's 16-byte stores use the link worse than its line format says. S10 (row 1f): ring LL 147 busbw at 256 MB on
// 4xH100 against Simple's 340, i.e. 0.40 of the 367 GB/s usable bundle, not 0.5; NCCL's own single-node LL caps agree
// (llMaxBw 141 on Hopper, 87.7 on Ampere: 0.39 and 0.37 of the ring Simple bus bandwidth, model.md §3).
constexpr double kIntraProtoEff[3] = {0.40, 120.0 / 128.0, 1.0};
constexpr double kTreeEff = 0.9;      // S10 1f: tree ~0.70 of ring on 4 GPUs, 0.75 of that is the 2S vs 1.5S load
constexpr double kNvlsEff = 0.742;    // S6: NVLS algbw 274 on a 370.8 bundle
constexpr double kNvlsTreeEff = 0.66;  // I10: NVLSTree ~340 busbw peak on 2 x 8 NVLink4 + 8 NDR (no H100 sweep)
constexpr double kPatEff = 0.9;
constexpr double kRampExp = 0.4;      // ramp = tau^(1-e) * T_bw^e, fit to the 16 MB / 256 MB / 1 GB points
constexpr double kIbEff = 0.95;       // I3: 46-48 GB/s per 400G NIC
constexpr double kSocketEff = 0.45;   // I8: 4-6 GB/s on 100 GbE
constexpr double kSocketHopUs = 15;   // I14: sockets ~40 µs small-message latency on 2 ranks
constexpr double kQueueUsPerHop = 2;  // model.md §10: +1-5 µs per network hop under contention

int ceilLog2(int n) {
  int l = 0;
  while ((1 << l) < n) ++l;
  return l;
}

struct Link {
  double cap;    // GB/s
  int foreign;   // greedy competing flows
};
struct FlowUse {
  int link;
  double load;  // bytes on this link per channel byte
};

// Max-min fair progressive filling over our channel flows and the links' greedy foreign flows. A foreign flow
// weighs as much as the heaviest of our flows on its link, i.e. it competes for bytes as an equal (§10:
// share = cap x k_nccl / (k_nccl + k_foreign)).
std::vector<double> fairRates(const std::vector<Link>& links, const std::vector<std::vector<FlowUse>>& flows) {
  const size_t nf = flows.size(), nl = links.size();
  std::vector<std::vector<FlowUse>> onLink(nl);  // (flow, load) per link
  for (size_t f = 0; f < nf; ++f) {
    for (const auto& u : flows[f]) onLink[static_cast<size_t>(u.link)].push_back({static_cast<int>(f), u.load});
  }
  // onLink[l][i].link holds the flow index.
  std::vector<double> rate(nf, 0.0), used(nl, 0.0), foreignW(nl, 0.0);
  for (size_t l = 0; l < nl; ++l) {
    for (const auto& u : onLink[l]) foreignW[l] = std::max(foreignW[l], u.load);
  }
  std::vector<bool> frozen(nf, false), saturated(nl, false);
  size_t left = nf;
  while (left > 0) {
    double best = std::numeric_limits<double>::infinity();
    size_t bestLink = nl;
    for (size_t l = 0; l < nl; ++l) {
      if (saturated[l]) continue;
      double w = 0;
      for (const auto& u : onLink[l]) w += frozen[static_cast<size_t>(u.link)] ? 0 : u.load;
      if (w <= 0) continue;
      double t = std::max(0.0, links[l].cap - used[l]) / (w + links[l].foreign * foreignW[l]);
      if (t < best) {
        best = t;
        bestLink = l;
      }
    }
    if (bestLink == nl) break;
    saturated[bestLink] = true;
    for (const auto& u : onLink[bestLink]) {
      size_t f = static_cast<size_t>(u.link);
      if (frozen[f]) continue;
      frozen[f] = true;
      rate[f] = best;
      --left;
      for (const auto& v : flows[f]) used[static_cast<size_t>(v.link)] += v.load * best;
    }
  }
  return rate;
}

// Builds the links of one query lazily: one id per (node, kind, index) actually crossed.
class LinkTable {
 public:
  LinkTable(const ClusterSpec& c, const LinkState& s) : c_(c), s_(s) {}
  int nvlink(int node, int gpu, double eff) { return get(node, 0, gpu, c_.nvlinkGbps * eff); }
  int pcie(int node, int gpu, double eff) { return get(node, 1, gpu, c_.pcieGbps * eff); }
  int nic(int node, int idx, double eff) { return get(node, 2, idx, c_.nicGbps * eff); }
  int cta(double cap) {
    links_.push_back({cap, 0});
    return static_cast<int>(links_.size()) - 1;
  }
  const std::vector<Link>& links() const { return links_; }

 private:
  int get(int node, int kind, int idx, double nominal) {
    for (size_t i = 0; i < keys_.size(); ++i) {
      if (keys_[i][0] == node && keys_[i][1] == kind && keys_[i][2] == idx) return static_cast<int>(i);
    }
    const NodeLinkState& n = s_.nodes[static_cast<size_t>(node)];
    const size_t i = static_cast<size_t>(idx);
    double mult = kind == 0 ? n.nvlinkMult[i] : kind == 1 ? n.pcieMult[i] : n.nicMult[i];
    int flows = kind == 0 ? n.nvlinkFlows[i] : kind == 1 ? n.pcieFlows[i] : n.nicFlows[i];
    // Keys and links stay index-aligned because CTA links are only added after every shared link.
    keys_.push_back({node, kind, idx});
    links_.push_back(Link{nominal * mult, flows});
    return static_cast<int>(keys_.size()) - 1;
  }
  const ClusterSpec& c_;
  const LinkState& s_;
  std::vector<std::array<int, 3>> keys_;
  std::vector<Link> links_;
};

}  // namespace

TruthBreakdown truthBreakdown(const ClusterSpec& c, const CommLayout& l, const LinkState& links,
                              const TruthQuery& q) {
  TruthBreakdown out;
  if (l.nRanks <= 1) {
    out.totalUs = q.algo == kAlgoRing && q.proto == kProtoSimple ? 0.0 : -1.0;
    return out;
  }
  if (!truthSupports(c, l, q.coll, q.algo, q.proto)) return out;
  const Calib& k = calibFor(c.gpu);
  const int p = q.proto, n = l.nRanks, nNodes = l.nNodes;
  const int nCh = std::clamp(q.nChannels, 1, kMaxChannels);
  const bool nvl = c.nvlinkGbps > 0;
  const bool ar = q.coll == CollType::AllReduce;
  const bool agrs = q.coll == CollType::AllGather || q.coll == CollType::ReduceScatter;
  const double ringF = ar ? 2.0 * (n - 1) / n : agrs ? static_cast<double>(n - 1) / n : 1.0;
  const double pe = kProtoEff[p], peIntra = kIntraProtoEff[p];
  const double treeInter = nNodes == 2 ? 1.0 : 2.0;  // I5 on two nodes; interior+leaf average beyond

  // Per-link loads (bytes on the link per channel byte) and the CTA's payload factor, by algorithm.
  double intraLoad = 0, interLoad = 0, ctaLoad = 0;
  switch (q.algo) {
    case kAlgoRing:
      intraLoad = ringF / peIntra;
      interLoad = ringF / pe;
      ctaLoad = ringF;
      break;
    case kAlgoTree:
      intraLoad = 2 / (peIntra * kTreeEff);
      interLoad = treeInter / (pe * kTreeEff);
      ctaLoad = 2;
      break;
    case kAlgoNvls: intraLoad = (ar ? 1.0 : ringF) / kNvlsEff; ctaLoad = ar ? 1.0 : ringF; break;
    case kAlgoNvlsTree:
      intraLoad = 1 / (kNvlsEff * kNvlsTreeEff);
      interLoad = treeInter / kNvlsTreeEff;
      ctaLoad = 1;
      break;
    default: intraLoad = interLoad = ringF / kPatEff; ctaLoad = ringF; break;  // PAT
  }

  LinkTable table(c, links);
  std::vector<std::vector<FlowUse>> flows(static_cast<size_t>(nCh));
  std::vector<int> nicOf(static_cast<size_t>(nCh));
  for (int ch = 0; ch < nCh; ++ch) {
    auto& f = flows[static_cast<size_t>(ch)];
    const int nicIdx = ch % c.nicsPerNode;  // rail-aligned channel -> NIC mapping (truth.h)
    nicOf[static_cast<size_t>(ch)] = nicIdx;
    int railGpu = 0;
    while (railGpu + 1 < c.gpusPerNode && c.nicOfGpu(railGpu) < nicIdx) ++railGpu;
    for (size_t j = 0; j < l.nodes.size(); ++j) {
      const int node = l.nodes[j];
      const auto& gpus = l.localGpus[j];
      if (gpus.size() >= 2) {
        for (int g : gpus) {
          f.push_back({nvl ? table.nvlink(node, g, k.nvlinkEff) : table.pcie(node, g, k.pcieEff), intraLoad});
        }
      }
      if (nNodes > 1) {
        f.push_back({table.nic(node, nicIdx, c.transport == Transport::Ib ? kIbEff : kSocketEff), interLoad});
        f.push_back({table.pcie(node, railGpu, nvl ? 1.0 : k.pcieEff), interLoad});
      }
    }
  }
  for (auto& f : flows) f.push_back({table.cta(k.ctaCap[p]), ctaLoad});
  std::vector<double> rate = fairRates(table.links(), flows);

  const double chBytes = static_cast<double>(q.nBytes) / nCh;
  out.channelGBps = rate;
  for (int ch = 0; ch < nCh; ++ch) {
    double r = rate[static_cast<size_t>(ch)];
    double t = r > 0 ? chBytes / (r * 1e3) : std::numeric_limits<double>::infinity();
    if (t > out.bandwidthUs || out.slowestChannel < 0) {
      out.bandwidthUs = t;
      out.slowestChannel = ch;
    }
  }
  const double tau = q.algo == kAlgoNvls || q.algo == kAlgoNvlsTree ? k.tauNvls : k.tau[p];
  out.rampUs = std::pow(tau, 1 - kRampExp) * std::pow(out.bandwidthUs, kRampExp);

  // Latency: per hop, by algorithm; the slowest channel's hops count.
  double addIntra = 0;
  for (size_t j = 0; j < l.nodes.size(); ++j) {
    const NodeLinkState& ns = links.nodes[static_cast<size_t>(l.nodes[j])];
    for (int g : l.localGpus[j]) {
      const size_t gi = static_cast<size_t>(g);
      addIntra = std::max(addIntra, nvl ? ns.nvlinkAddUs[gi] : ns.pcieAddUs[gi]);
    }
  }
  const double intraHop = k.hopIntra[p] + addIntra;
  const int ppnMax = l.maxLocalRanks;
  for (int ch = 0; ch < nCh; ++ch) {
    const size_t nic = static_cast<size_t>(nicOf[static_cast<size_t>(ch)]);
    double addNet = 0, queue = 0;
    for (int node : l.nodes) {
      const NodeLinkState& ns = links.nodes[static_cast<size_t>(node)];
      addNet = std::max(addNet, ns.nicAddUs[nic]);
      if (ns.nicFlows[nic] > 0) queue = kQueueUsPerHop;
    }
    const double socketUs = c.transport == Transport::Socket ? kSocketHopUs : 0;
    const double netHop = k.hopNet[p] + c.netLatencyUs + socketUs + addNet + queue;
    double lat = 0;
    switch (q.algo) {
      case kAlgoRing: {
        int nsteps = ar ? 2 * (n - 1) : n - 1;
        int nInter = nNodes == 1 ? 0 : ar ? 2 * (nNodes - 1) : nNodes - 1;
        lat = k.baseLat[p] + (nsteps - nInter) * intraHop + nInter * netHop;
        break;
      }
      case kAlgoTree: lat = k.baseLat[p] + 2 * ((ppnMax - 1) * intraHop + ceilLog2(nNodes) * netHop); break;
      case kAlgoNvls: lat = k.nvlsBase + 2 * addIntra; break;
      case kAlgoNvlsTree: lat = k.nvlsBase + 2 * addIntra + 2 * ceilLog2(nNodes) * netHop; break;
      default: lat = k.baseLat[p] + ceilLog2(nNodes) * netHop + 0.5 * n; break;  // PAT
    }
    out.latencyUs = std::max(out.latencyUs, lat);
  }
  out.totalUs = out.latencyUs + out.bandwidthUs + out.rampUs;
  return out;
}

}  // namespace wirewise::sim
