#include "telemetry/wiring/analysis.h"

#include <algorithm>
#include <cstdio>
#include <map>

#include "telemetry/wiring/text_util.h"

namespace wirewise::wiring {
namespace {

std::string pairName(int src, int dst) { return "gpu" + std::to_string(src) + "->gpu" + std::to_string(dst); }

// "<who> <what>: <measured> GB/s is <ratio> of <against> <reference> GB/s (<basis>)"
Flag ratioFlag(FlagKind kind, int src, int dst, double measured, double reference, const std::string& what,
               const std::string& against, const std::string& basis = "") {
  Flag f;
  f.kind = kind;
  f.src = src;
  f.dst = dst;
  f.measuredGbps = measured;
  f.referenceGbps = reference;
  f.ratio = measured / reference;
  const std::string who = src == dst ? "gpu" + std::to_string(src) : pairName(src, dst);
  f.text = who + " " + what + ": " + fixed(measured, 1) + " GB/s is " + fixed(f.ratio, 2) + " of " + against +
           " " + fixed(reference, 1) + " GB/s" + (basis.empty() ? "" : " (" + basis + ")");
  return f;
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  const size_t n = v.size();
  return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

}  // namespace

const char* flagKindName(FlagKind k) {
  switch (k) {
    case FlagKind::kMissingGpu: return "missing_gpu";
    case FlagKind::kNoPeerAccess: return "no_peer_access";
    case FlagKind::kNotMeasured: return "not_measured";
    case FlagKind::kUnidirectional: return "unidirectional";
    case FlagKind::kBidirectional: return "bidirectional";
    case FlagKind::kBelowPeers: return "below_peers";
    case FlagKind::kSelfCopy: return "self_copy";
    case FlagKind::kPcieTrainedDown: return "pcie_trained_down";
    case FlagKind::kVerifyFailed: return "verify_failed";
  }
  return "unknown";
}

const PairVerdict* Analysis::pair(int src, int dst) const {
  for (const PairVerdict& p : pairs) {
    if (p.src == src && p.dst == dst) return &p;
  }
  return nullptr;
}

const GpuVerdict* Analysis::gpu(int index) const {
  for (const GpuVerdict& g : gpus) {
    if (g.index == index) return &g;
  }
  return nullptr;
}

Analysis analyze(const WiringMap& map, const AnalysisOptions& options) {
  Analysis a;
  a.options = options;

  // GPU level: presence, PCIe training, self copy against memory bandwidth.
  for (const GpuInfo& g : map.gpus) {
    GpuVerdict v;
    v.index = g.index;
    v.memory = memoryNominal(g);
    const std::string name = "gpu" + std::to_string(g.index);
    if (!g.present) {
      Flag f;
      f.kind = FlagKind::kMissingGpu;
      f.src = f.dst = g.index;
      f.text = name + (g.pciBusId.empty() ? "" : " (" + g.pciBusId + ")") +
               " is listed but CUDA does not see it: its pairs were not measured" +
               (g.error.empty() ? "" : " (" + g.error + ")");
      a.flags.push_back(std::move(f));
      v.flagged = true;
      a.gpus.push_back(std::move(v));
      continue;
    }
    const PcieLink& p = g.pcie;
    if (p.gen > 0 && p.width > 0 && p.maxGen > 0 && p.maxWidth > 0 && (p.gen < p.maxGen || p.width < p.maxWidth)) {
      const double now = p.width * pcieLaneGbps(p.gen), best = p.maxWidth * pcieLaneGbps(p.maxGen);
      if (now > 0 && best > 0) {
        Flag f = ratioFlag(FlagKind::kPcieTrainedDown, g.index, g.index, now, best,
                           "PCIe trained at Gen" + std::to_string(p.gen) + " x" + std::to_string(p.width),
                           "Gen" + std::to_string(p.maxGen) + " x" + std::to_string(p.maxWidth));
        a.flags.push_back(std::move(f));
        v.flagged = true;
      }
    }
    if (g.selfCopyGbps > 0 && v.memory.known()) {
      v.selfCopyRatio = g.selfCopyGbps / v.memory.gbps;
      if (v.selfCopyRatio < options.flagBelow) {
        a.flags.push_back(ratioFlag(FlagKind::kSelfCopy, g.index, g.index, g.selfCopyGbps, v.memory.gbps, "self copy",
                                    "memory bandwidth", v.memory.basis));
        v.flagged = true;
      }
    }
    a.gpus.push_back(std::move(v));
  }

  // Medians of the best unidirectional figure per link type, for the relative check.
  std::map<LinkType, std::vector<double>> byType;
  for (const PairResult& p : map.pairs) {
    if (p.peerAccess && p.bestUniGbps() > 0) byType[p.link].push_back(p.bestUniGbps());
  }
  std::map<LinkType, double> typeMedian;
  for (auto& [type, v] : byType) {
    if (v.size() >= 3) typeMedian[type] = median(v);
  }

  for (const PairResult& p : map.pairs) {
    PairVerdict v;
    v.src = p.src;
    v.dst = p.dst;
    v.nominal = pairNominal(map, p);
    const GpuInfo* a1 = map.gpu(p.src);
    const GpuInfo* b1 = map.gpu(p.dst);
    const bool bothPresent = a1 && b1 && a1->present && b1->present;
    auto add = [&](Flag f) {
      a.flags.push_back(std::move(f));
      v.flagged = true;
    };
    const double uni = p.bestUniGbps();
    if (v.nominal.known() && uni > 0) v.uniRatio = uni / v.nominal.gbps;
    if (v.nominal.known() && p.bidirGbps > 0) v.bidirRatio = p.bidirGbps / (2 * v.nominal.gbps);
    if (!bothPresent) {
      a.pairs.push_back(std::move(v));
      continue;  // the missing GPU's own flag says it
    }
    if (!p.peerAccess) {
      Flag f;
      f.kind = FlagKind::kNoPeerAccess;
      f.src = p.src;
      f.dst = p.dst;
      f.measuredGbps = uni;
      f.text = pairName(p.src, p.dst) + ": no peer access" +
               std::string(p.link == LinkType::kNvlink ? " although NVLink connects them" : "") +
               "; copies are staged through host memory, SM kernels and latency not measured";
      if (uni > 0 && v.nominal.known()) {
        f.referenceGbps = v.nominal.gbps;
        f.ratio = v.uniRatio;
        f.text += " (copy engine " + fixed(uni, 1) + " GB/s, " + fixed(v.uniRatio, 2) + " of nominal)";
      }
      add(std::move(f));
    }
    if (uni <= 0) {
      if (p.peerAccess) {  // without peer access the flag above already says why
        Flag f;
        f.kind = FlagKind::kNotMeasured;
        f.src = p.src;
        f.dst = p.dst;
        f.text = pairName(p.src, p.dst) + ": not measured" + (p.error.empty() ? "" : " (" + p.error + ")");
        add(std::move(f));
      }
      a.pairs.push_back(std::move(v));
      continue;
    }
    if (p.verify == "failed") {
      Flag f;
      f.kind = FlagKind::kVerifyFailed;
      f.src = p.src;
      f.dst = p.dst;
      f.text = pairName(p.src, p.dst) + ": the copied data did not verify" + (p.error.empty() ? "" : " (" + p.error + ")");
      add(std::move(f));
    }
    if (v.uniRatio >= 0 && v.uniRatio < options.flagBelow && p.peerAccess) {
      add(ratioFlag(FlagKind::kUnidirectional, p.src, p.dst, uni, v.nominal.gbps, "unidirectional",
                    "nominal", v.nominal.basis));
    } else if (auto it = typeMedian.find(p.link);
               p.peerAccess && it != typeMedian.end() && uni < options.peerBelow * it->second) {
      add(ratioFlag(FlagKind::kBelowPeers, p.src, p.dst, uni, it->second, "unidirectional",
                    std::string("the median of ") + linkTypeName(p.link) + " pairs"));
    }
    a.pairs.push_back(std::move(v));
  }

  // Bidirectional, once per unordered pair, and only where neither direction is already flagged: a
  // weak direction explains a weak sum.
  for (const PairResult& p : map.pairs) {
    const PairResult* back = map.pair(p.dst, p.src);
    if (back && p.src > p.dst) continue;
    const PairVerdict* v = a.pair(p.src, p.dst);
    const PairVerdict* bv = back ? a.pair(p.dst, p.src) : nullptr;
    if (!v || v->flagged || (bv && bv->flagged) || !p.peerAccess) continue;
    if (v->bidirRatio >= 0 && v->bidirRatio < options.flagBelow) {
      a.flags.push_back(ratioFlag(FlagKind::kBidirectional, p.src, p.dst, p.bidirGbps, 2 * v->nominal.gbps,
                                  "bidirectional", "twice nominal", v->nominal.basis));
      for (PairVerdict& pv : a.pairs) {
        if ((pv.src == p.src && pv.dst == p.dst) || (pv.src == p.dst && pv.dst == p.src)) pv.flagged = true;
      }
    }
  }
  return a;
}

}  // namespace wirewise::wiring
