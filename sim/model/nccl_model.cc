// NCCL 2.28's init-time model, written from model.md and NCCL v2.28.9's documented behaviour (no NCCL code).
// Section numbers refer to shared/research/model.md.
#include "sim/model/nccl_model.h"

#include <algorithm>
#include <cmath>
#include <limits>

namespace wirewise::sim {
namespace {

constexpr int kMaxSearchChannels = 32;   // MAXCHANNELS / 2 (§2.2)
constexpr int kNvlsChannelsSm90 = 16;    // NVLS_NCHANNELS_SM90 (§2.3)
constexpr int kNvlsChannelsSm100 = 32;
constexpr int kMaxNvlsArity = 32;

// §2.2 speed ladders (GB/s per channel).
const std::vector<double> kSm90Intra = {60, 50, 40, 30, 24, 20, 15, 12, 11, 6, 3};
const std::vector<double> kSm100Intra = {90, 80, 70, 60, 50, 40, 30, 24, 20, 19, 18};
const std::vector<double> kOlderIntra = {40, 30, 20, 18, 15, 12, 10, 9, 7, 6, 5, 4, 3};
const std::vector<double> kSm90Inter = {48, 45, 42, 40, 30, 24, 22, 20, 17.5, 15, 12, 6, 3, 2.4, 1.2, 0.24, 0.12};
const std::vector<double> kSm100Inter = {96, 48, 45.1, 42, 40, 30, 24, 22, 20, 17.5, 15, 12, 6, 3, 2.4, 1.2, 0.24,
                                          0.12};
const std::vector<double> kOlderInter = {48, 30, 28, 24, 20, 18, 15, 12, 10, 9, 7, 6, 5, 4, 3, 2.4, 1.2, 0.24, 0.12};

// Channels one speed fits, given how many channels each constrained resource can carry at that speed.
int fit(double cap, double speed) { return static_cast<int>(std::floor(cap / speed + 1e-9)); }

// §2.2 pass 1 + pass 2 (ring), simplified to "how many channels of speed s fit on the tightest resource".
// capacityAt(s) returns the channel count at speed s; the search keeps the best nCh x s (first wins ties), stops
// early once that reaches totalBw, and stops lowering the speed once next / best <= 0.49.
template <typename F>
GraphResult searchRing(const std::vector<double>& speeds, double totalBw, F capacityAt) {
  GraphResult best;
  for (double s : speeds) {
    if (best.nChannels > 0 && s / best.bwIntra <= 0.49) break;
    int n = std::min(kMaxSearchChannels, capacityAt(s));
    if (n <= 0) continue;
    if (n * s > best.nChannels * best.bwIntra + 1e-9) {
      best.nChannels = n;
      best.bwIntra = best.bwInter = s;
    }
    if (best.nChannels * best.bwIntra >= totalBw - 1e-9) break;
  }
  // Pass 2 for rings: raise the speed while the same channel count still fits.
  for (double s : speeds) {
    if (s <= best.bwIntra) break;
    if (capacityAt(s) >= best.nChannels) {
      best.bwIntra = best.bwInter = s;
      break;
    }
  }
  return best;
}

}  // namespace

CommLayout makeCommLayout(const ClusterSpec& cluster, const std::vector<int>& ranks) {
  CommLayout l;
  l.ranks = ranks;
  l.nRanks = static_cast<int>(ranks.size());
  for (int r : ranks) {
    int node = cluster.nodeOf(r);
    auto it = std::lower_bound(l.nodes.begin(), l.nodes.end(), node);
    size_t pos = static_cast<size_t>(it - l.nodes.begin());
    if (it == l.nodes.end() || *it != node) {
      l.nodes.insert(it, node);
      l.localGpus.insert(l.localGpus.begin() + static_cast<std::ptrdiff_t>(pos), std::vector<int>{});
    }
    auto& g = l.localGpus[pos];
    g.insert(std::lower_bound(g.begin(), g.end(), cluster.gpuOf(r)), cluster.gpuOf(r));
  }
  l.nNodes = static_cast<int>(l.nodes.size());
  l.maxLocalRanks = 0;
  l.minLocalRanks = l.nRanks;
  for (const auto& g : l.localGpus) {
    l.maxLocalRanks = std::max(l.maxLocalRanks, static_cast<int>(g.size()));
    l.minLocalRanks = std::min(l.minLocalRanks, static_cast<int>(g.size()));
  }
  return l;
}

NcclModel::NcclModel(const ClusterSpec& cluster, const CommLayout& layout) : layout_(layout) {
  cc_ = cluster.computeCapability;
  search(cluster);
  tune();
}

void NcclModel::search(const ClusterSpec& c) {
  const int local = layout_.maxLocalRanks;
  const bool multiNode = layout_.nNodes > 1;
  const bool nvl = c.nvlinkGbps > 0;
  // Per-GPU intra-node capacity as NCCL's topology sees it (§2.1): the NVSwitch bundle, or the PCIe link.
  const double intraCap = nvl ? c.nvlinkGbps : c.pcieGbps;
  const double nicCap = std::min(c.nicGbps, c.pcieGbps);  // a channel's NIC path: GPU -PCIe-> NIC
  const auto& intra = cc_ >= 100 ? kSm100Intra : cc_ >= 90 ? kSm90Intra : kOlderIntra;
  const auto& inter = cc_ >= 100 ? kSm100Inter : cc_ >= 90 ? kSm90Inter : kOlderInter;

  GraphResult ring;
  if (!multiNode) {
    ring = searchRing(intra, intraCap, [&](double s) { return local >= 2 ? fit(intraCap, s) : kMaxSearchChannels; });
  } else {
    // Each channel enters and leaves a node through one NIC (§2.2: one 48 GB/s channel per 50 GB/s NIC), and
    // passes every local GPU's link once; with one GPU per node all channels share that GPU's PCIe link.
    ring = searchRing(inter, c.nicsPerNode * nicCap, [&](double s) {
      int n = c.nicsPerNode * fit(nicCap, s);
      // Each channel leaves the node from one GPU (to its NIC), so a GPU's link carries (local-1)/local of them.
      int perGpu = local >= 2 ? fit(intraCap, s) * local / (local - 1) : fit(c.pcieGbps, s);
      n = std::min(n, perGpu);
      return n;
    });
  }
  ring.nvlIntra = nvl && local >= 2;
  // §5: LL128 needs typeInter <= PXN (SM90+) / PXB; RDMA NICs sit next to the GPUs (PXB), sockets go through
  // the host (PHB), which is beyond both limits.
  ring.ll128Inter = !multiNode || c.transport == Transport::Ib;
  // §2.2 ncclTopoDupChannels.
  if (ring.bwIntra >= 25 && !(cc_ > 80 && ring.bwIntra < 50 && ring.nChannels > 4)) {
    ring.nChannels = std::min(kMaxSearchChannels, ring.nChannels * 2);
    ring.bwIntra /= 2;
    ring.bwInter /= 2;
  }
  graphs_[kAlgoRing] = ring;
  graphs_[kAlgoTree] = ring;  // §2.2: tree forced to ring's channel count; same links on these boxes [derived]
  graphs_[kAlgoPat] = ring;
  graphs_[kAlgoCollNetDirect] = graphs_[kAlgoCollNetChain] = GraphResult{};

  // §2.3: comm channels = min(ring, tree) x 2, x2 again for SM90 multi-node rings above 45 GB/s.
  commChannels_ = std::min(kMaxChannels, ring.nChannels * 2);
  if (cc_ >= 90 && multiNode && ring.bwIntra > 45.0 && commChannels_ < 16) commChannels_ *= 2;
  commChannels_ = std::max(1, commChannels_);

  // §2.2 NVLS search: one head per local GPU; each head costs its speed on every GPU's switch link, x2 on its
  // own, so (heads + 1) x bwIntra must fit the bundle. bwInter is then lifted towards 2 x bwIntra (pass 2),
  // bounded by the NIC path on multi-node.
  GraphResult nvls;
  if (c.nvls && nvl && cc_ >= 90 && local >= 2) {
    nvls.nChannels = std::min(kMaxNvlsArity, local);
    const auto& ladder = multiNode ? inter : intra;
    for (double s : ladder) {
      if ((nvls.nChannels + 1) * s <= c.nvlinkGbps + 1e-9) {
        nvls.bwIntra = s;
        break;
      }
    }
    double interCap = multiNode ? nicCap : 2 * nvls.bwIntra;
    for (double s : ladder) {
      if (s <= interCap + 1e-9 && s <= 2 * nvls.bwIntra + 1e-9) {
        nvls.bwInter = s;
        break;
      }
    }
    nvls.nvlIntra = true;
    nvls.ll128Inter = ring.ll128Inter;
    if (nvls.bwIntra <= 0 || nvls.bwInter <= 0) nvls = GraphResult{};
  }
  graphs_[kAlgoNvls] = graphs_[kAlgoNvlsTree] = nvls;
  nvlsSupport_ = nvls.nChannels >= 2;
  nvlsChannels_ = nvlsSupport_ ? (cc_ >= 100 ? kNvlsChannelsSm100 : kNvlsChannelsSm90) : 0;
  // §5: PAT needs SM60+, exactly one GPU per node, host network device.
  patSupport_ = cc_ >= 60 && layout_.nNodes == layout_.nRanks && multiNode;
}

}  // namespace wirewise::sim
