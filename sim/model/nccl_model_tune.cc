// NcclModel's bandwidth/latency tables (model.md §3, §4), enable rules (§5), cost table and default choice
// (§1, §6).
#include <algorithm>
#include <cmath>
#include <limits>

#include "sim/model/nccl_model.h"

namespace wirewise::sim {
namespace {

constexpr int kHwNvlink = 0, kHwPci = 1, kHwNet = 2;
constexpr int kMaxDevWorkBatchColls = 16;  // 1024 / sizeof(ncclDevWorkColl) (§1)

constexpr double kBaseLat[kNumAlgos][kNumProtos] = {{6.8, 14.0, 8.4}, {6.6, 14.0, 8.4}, {0, 0, 0}, {0, 0, 0},
                                                    {0, 0, 0},        {0, 0, 0},        {8.0, 8.0, 8.0}};
constexpr double kHwLat[3][kNumAlgos][kNumProtos] = {
    {{.6, 1.25, 4.0}, {.6, 1.9, 3.4}, {0, 0, 3.7}, {0, 0, 2.8}, {0, 0, 25}, {0, 0, 25}, {0, 0, 4.0}},
    {{1.0, 1.9, 4.0}, {1.0, 2.5, 5.7}, {0, 0, 3.7}, {0, 0, 2.8}, {0, 0, 0}, {0, 0, 0}, {0, 0, 4.0}},
    {{5.0, 8.5, 14}, {2.7, 4.0, 14.0}, {0, 0, 31}, {0, 0, 30}, {0, 0, 18}, {0, 0, 20.9}, {0, 0, 14}}};
constexpr double kLlMaxBw[4][3] = {{39.0, 39.0, 20.4}, {87.7, 22.5, 19.0}, {141.0, 45.0, 35.0}, {282, 90, 70}};
constexpr double kPerChRingLL128[4][3] = {{20, 20, 20}, {20, 20, 20}, {36.7, 36.7, 36.7}, {73.4, 34.6, 73.4}};
constexpr double kPerChTreeLL128[4][3] = {{20, 20, 20}, {20, 20, 20}, {36.7, 36.7, 29.0}, {55.6, 31.67, 20.0}};
constexpr double kPerChTree[4][3] = {{26.5, 18.5, 10.0}, {24.0, 23.6, 17.8}, {38.7, 41.4, 36.0}, {70.0, 42.8, 24.0}};
constexpr double kPerChNvlsTree[4][3] = {{26.5, 18.5, 10.0}, {24.0, 23.6, 17.8}, {0, 57.7, 45.5}, {0, 96.0, 43.8}};
constexpr double kNvlsEfficiency[4] = {0, 0, 0.85, 0.74};  // §9 (2.28+)
constexpr double kTreeCorrection[kNumProtos][23] = {
    {1.0, 1.0, 1.0, 1.0, .9, .8, .7, .7, .7, .7, .6, .5, .4, .4, .5, .6, .7, .8, .9, 1.0, 1.0, 1.0, 1.0},
    {1.0, 1.0, 1.0, 1.0, 1.0, .9, .8, .8, .8, .7, .6, .6, .6, .6, .6, .6, .8, .9, .9, .9, .9, 1.0, 1.0},
    {.9, .9, .9, .9, .9, .9, .9, .8, .7, .6, .6, .5, .5, .5, .5, .6, .7, .8, .7, .7, .8, .9, .9}};

int log2i(size_t x) {
  int n = 0;
  while (x >>= 1) ++n;
  return n;
}
int archIndex(int cc) { return cc >= 100 ? 3 : cc >= 90 ? 2 : cc >= 80 ? 1 : 0; }
bool isAgRs(int coll) {
  return coll == static_cast<int>(CollType::AllGather) || coll == static_cast<int>(CollType::ReduceScatter);
}

// Which (coll, algo, proto) cells ncclTopoTuneModel computes at all (§5 table).
bool computed(int coll, int a, int p) {
  const bool ar = coll == static_cast<int>(CollType::AllReduce);
  if (!ar && !isAgRs(coll) && a != kAlgoRing) return false;  // broadcast, reduce: ring only
  if (isAgRs(coll) && a != kAlgoPat && a != kAlgoRing && a != kAlgoNvls && a != kAlgoCollNetDirect) return false;
  if (ar && a == kAlgoPat) return false;
  if ((a == kAlgoNvls || a == kAlgoNvlsTree || a == kAlgoPat) && p != kProtoSimple) return false;
  return true;
}

}  // namespace

void NcclModel::tune() {
  const int nRanks = layout_.nRanks, nNodes = layout_.nNodes;
  const GraphResult& ringG = graphs_[kAlgoRing];
  // §6 maxThreads.
  for (auto& row : maxThreads_) std::fill(std::begin(row), std::end(row), 640);
  maxThreads_[kAlgoRing][kProtoSimple] = ringG.bwIntra * ringG.nChannels <= 12 ? 256 : 512;
  maxThreads_[kAlgoTree][kProtoSimple] = 512;
  maxThreads_[kAlgoRing][kProtoLL] = maxThreads_[kAlgoTree][kProtoLL] = 512;
  if (nRanks <= 1) return;

  const int arch = archIndex(cc_);
  const int i2 = nNodes <= 2 ? nNodes - 1 : 2;
  const int i1 = nNodes == 1 ? arch : 0;  // multi-node rows are indexed by CPU vendor; we assume Intel (§3.4)
  const double llMaxBw = kLlMaxBw[i1][i2];
  const double ppn = static_cast<double>(nRanks) / nNodes;
  const int ppnInt = nRanks / nNodes;
  const double netOverheadBase = 1.0;  // x86 Intel (§4)
  const double latencyInter = 0.0;     // IB and Socket plugins report 0 (§2.1)

  for (int coll = 0; coll < kNumCollTypes; ++coll) {
    const bool ar = coll == static_cast<int>(CollType::AllReduce);
    const int nsteps = ar ? 2 * (nRanks - 1) : isAgRs(coll) ? nRanks - 1 : nRanks;
    for (int a = 0; a < kNumAlgos; ++a) {
      const GraphResult& g = graphs_[a];
      const bool collnet = a == kAlgoCollNetDirect || a == kAlgoCollNetChain;
      for (int p = 0; p < kNumProtos; ++p) {
        if (!computed(coll, a, p) || g.nChannels == 0) continue;
        if (a == kAlgoPat && !patSupport_) continue;
        // §3.1 per-channel bandwidth.
        double bw = nNodes <= 2 || collnet ? g.bwIntra : g.bwInter;
        if (a == kAlgoNvls || a == kAlgoNvlsTree) {
          if (g.nChannels < 2) continue;
          double intraBw = g.bwIntra * kNvlsEfficiency[arch] * (g.nChannels - 1) / g.nChannels;
          intraBw *= ar ? 2.0 : (ppn - 1) / ppn;
          double interBw = g.bwInter * (nNodes <= 2 && a == kAlgoNvlsTree ? 2 : 1);
          bw = std::min(intraBw, interBw);
          if (a == kAlgoNvlsTree) bw = std::min(bw, kPerChNvlsTree[arch][i2]);
        }
        double busBw = g.nChannels * bw;
        // §3.2 refinements.
        if (a == kAlgoRing && p == kProtoLL) busBw = std::min(llMaxBw, busBw * 0.5);
        if (a == kAlgoRing && p == kProtoLL128) {
          busBw = std::min(busBw * 0.92, g.nChannels * kPerChRingLL128[arch][i2]);
        }
        if (a == kAlgoTree && ar) busBw = std::min(busBw * 0.92, g.nChannels * kPerChTree[arch][i2]);
        if (a == kAlgoTree && p == kProtoLL) busBw = std::min(busBw / 3.8, llMaxBw);
        if (a == kAlgoTree && p == kProtoLL128) {
          busBw = std::min(busBw * (nNodes == 1 ? 7.0 / 9.0 : 120.0 / 128.0), g.nChannels * kPerChTreeLL128[arch][i2]);
        }
        // Tree pattern is BALANCED_TREE on these topologies, so the 0.85 TREE-pattern penalty never applies.
        if (a == kAlgoPat) busBw *= 0.75;
        // NVLS AG/RS across nodes needs CollNet, which the simulated clusters do not have.
        if (a == kAlgoNvls && isAgRs(coll) && nNodes > 1) busBw = 0;
        // §3.3 bus -> algorithm bandwidth.
        if (!(a != kAlgoRing && isAgRs(coll))) {
          const bool ringLike = a == kAlgoRing || a == kAlgoNvls || a == kAlgoNvlsTree;
          busBw *= ringLike ? static_cast<double>(nRanks) / nsteps : 0.5;
        }
        bw_[coll][a][p] = busBw;

        // §4 latency.
        const int intraHw = g.nvlIntra ? kHwNvlink : kHwPci;
        const int hw = nNodes == 1 ? intraHw : kHwNet;
        double lat = kBaseLat[a][p];
        double intraLat = kHwLat[intraHw][a][p];
        double interLat = (ppn == 1 ? kHwLat[kHwNet][kAlgoTree][p] : kHwLat[kHwNet][a][p]) + latencyInter;
        if (p == kProtoSimple) interLat += latencyInter;
        if (a == kAlgoRing) {
          if (!ar && !isAgRs(coll)) {
            // Broadcast/Reduce: all channels follow the same order only on a single node [derived].
            const bool sameChannels = nNodes == 1;
            double hop = kHwLat[hw][kAlgoRing][p];
            if (sameChannels) {
              lat += hop;
            } else {
              if (p == kProtoSimple) hop = kHwLat[hw][kAlgoTree][p];
              lat += nsteps * hop;
            }
          } else {
            double netOverhead = nNodes > 1 ? netOverheadBase * (p == kProtoSimple ? 3 : 1) : 0;
            intraLat = std::max(intraLat, netOverhead);
            int nInter = nNodes == 1 ? 0 : ar ? 2 * (nNodes - 1) : nNodes - 1;
            lat += (nsteps - nInter) * intraLat + nInter * interLat;
          }
        } else if (a == kAlgoTree) {
          lat += 2 * ((ppnInt - 1) * intraLat + log2i(static_cast<size_t>(nNodes)) * interLat);
        } else if (a == kAlgoNvls) {
          lat = intraLat + (nNodes > 1 ? interLat : 0);
        } else if (a == kAlgoNvlsTree) {
          lat += intraLat + 2 * log2i(static_cast<size_t>(nNodes)) * interLat;
        } else if (a == kAlgoPat) {
          lat += log2i(static_cast<size_t>(nNodes)) * (interLat / 3.5) + nRanks * 2.8;
        }
        lat_[coll][a][p] = lat;
      }
    }
  }

  // §5 enable rules: no CollNet; NVLS needs one node (no CollNet); NVLSTree needs several nodes; LL128 needs
  // NVLink-class intra paths, a close NIC and SM70+.
  for (int coll = 0; coll < kNumCollTypes; ++coll) {
    for (int a = 0; a < kNumAlgos; ++a) {
      bool off = a == kAlgoCollNetDirect || a == kAlgoCollNetChain || (a == kAlgoNvls && nNodes > 1) ||
                 (a == kAlgoNvlsTree && nNodes == 1);
      for (int p = 0; p < kNumProtos; ++p) {
        bool protoOff = p == kProtoLL128 && !(graphs_[a].nvlIntra && graphs_[a].ll128Inter && cc_ >= 70);
        if (off || protoOff) bw_[coll][a][p] = 0;
      }
    }
  }
}

float NcclModel::costTableUs(CollType coll, size_t nBytes, float out[kNumAlgos][kNumProtos], DType dtype,
                             int numPipeOps) const {
  for (int a = 0; a < kNumAlgos; ++a) std::fill(out[a], out[a] + kNumProtos, -1.0f);
  if (layout_.nRanks <= 1) {
    out[kAlgoRing][kProtoSimple] = 0.0f;
    return 0.0f;
  }
  const int ci = idx(coll);
  float best = -1.0f;
  for (int a = 0; a < kNumAlgos; ++a) {
    // updateCollCostTable's skips (§1): CollNet without support, NVLS without NVLS support or across nodes.
    if (a == kAlgoCollNetDirect || a == kAlgoCollNetChain) continue;
    if ((a == kAlgoNvls || a == kAlgoNvlsTree) &&
        (!nvlsSupport_ || (coll != CollType::AllReduce && layout_.maxLocalRanks > 32))) {
      continue;
    }
    if (a == kAlgoNvls && layout_.nNodes > 1) continue;
    for (int p = 0; p < kNumProtos; ++p) {
      double bw = bw_[ci][a][p];
      double lat = lat_[ci][a][p];
      if (bw <= 0) continue;  // -1: disabled
      int logSize = log2i(nBytes >> 6);
      if (a == kAlgoTree && coll == CollType::AllReduce && logSize < 23) bw *= kTreeCorrection[p][logSize];
      if (a == kAlgoRing && p == kProtoSimple && layout_.nNodes > 1 && coll == CollType::AllReduce &&
          nBytes / static_cast<size_t>(commChannels_ * layout_.nRanks) >= 64) {
        lat *= cc_ < 80 ? 1.9 : 1.4;  // ring plateau (§4)
      }
      int latCount = a == kAlgoRing ? numPipeOps : (numPipeOps + kMaxDevWorkBatchColls - 1) / kMaxDevWorkBatchColls;
      double t = lat * latCount + static_cast<double>(nBytes) / (1000.0 * bw);
      // FP8 rings deeper than 8 ranks are relegated (§1).
      if (dtype == DType::F8 && a == kAlgoRing && layout_.nRanks > 8) t *= 1024.0;
      out[a][p] = static_cast<float>(t);
      if (best < 0 || out[a][p] < best) best = out[a][p];
    }
  }
  return best;
}

int NcclModel::defaultChannels(int algo, int proto, size_t nBytes) const {
  if (algo == kAlgoNvls) return layout_.nNodes > 1 ? std::min(nvlsChannels_, commChannels_) : nvlsChannels_;
  if (algo == kAlgoNvlsTree) return nvlsChannels_;
  // §6 ring/tree/PAT ladder: drop channels while each would get less than threads x threshold bytes.
  const size_t nt = static_cast<size_t>(maxThreads_[algo][proto]);
  size_t threshold = proto == kProtoLL ? 8 : proto == kProtoLL128 ? 8 : 64;
  if (algo == kAlgoRing && proto == kProtoLL) threshold *= static_cast<size_t>(layout_.nRanks);
  int nc = commChannels_;
  while (nBytes < static_cast<size_t>(nc) * nt * threshold && nc >= 2) --nc;
  return nc;
}

NcclChoice NcclModel::defaultChoice(CollType coll, size_t nBytes, DType dtype) const {
  float table[kNumAlgos][kNumProtos];
  costTableUs(coll, nBytes, table, dtype);
  NcclChoice choice;
  float minTime = 3.6e9f;
  for (int a = 0; a < kNumAlgos; ++a) {
    for (int p = 0; p < kNumProtos; ++p) {
      if (table[a][p] >= 0.0f && table[a][p] < minTime) {  // strict <: first cell wins ties (topoGetAlgoInfo)
        minTime = table[a][p];
        choice.algo = a;
        choice.proto = p;
      }
    }
  }
  if (choice.algo < 0) return choice;
  choice.timeUs = minTime;
  choice.nChannels = defaultChannels(choice.algo, choice.proto, nBytes);
  return choice;
}

}  // namespace wirewise::sim
