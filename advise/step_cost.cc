// Step costing; see step_cost.h and docs/advise.md §3, §5.
#include "advise/step_cost.h"

#include <algorithm>
#include <cmath>
#include <limits>

namespace wirewise::advise {

double peakTflops(sim::GpuKind gpu, Precision p) {
  double peak = 312;
  switch (gpu) {
    case sim::GpuKind::H100Sxm:
    case sim::GpuKind::H200Sxm: peak = 989; break;
    case sim::GpuKind::Pcie: peak = 756; break;
    case sim::GpuKind::A100Sxm:
    case sim::GpuKind::Generic: peak = 312; break;
  }
  return p == Precision::Fp32 ? peak / 2 : peak;
}

double gpuMemoryGb(sim::GpuKind gpu) { return gpu == sim::GpuKind::H200Sxm ? 141 : 80; }

double microComputeUs(const ModelSpec& m, const TrainingSpec& t, const Strategy& s, const ComputeSpec& c) {
  const double tokens = static_cast<double>(t.microBatch) * m.seqLen;
  const double flops = trainingFlops(m, t, tokens) / std::max(1, s.tp);
  return flops / (c.peakTflops * 1e12 * c.mfu) * 1e6;
}

std::vector<int> groupRanks(const sim::ClusterSpec& c, const Strategy& s, CommGroup g) {
  const int tp = std::max(1, s.tp);
  std::vector<int> out;
  if (g == CommGroup::Tp) {
    for (int l = 0; l < tp && l < c.gpusPerNode; ++l) out.push_back(l);
    return out;
  }
  std::vector<int> dp;
  for (int r = 0; r < c.nRanks(); ++r) {
    if (c.gpuOf(r) % tp == 0) dp.push_back(r);
  }
  if (g == CommGroup::Dp) return dp;
  const int n = static_cast<int>(dp.size());
  const int shard = std::clamp(s.shardGroup, 1, std::max(1, n));
  if (g == CommGroup::Shard) return {dp.begin(), dp.begin() + shard};
  for (int i = 0; i < n; i += shard) out.push_back(dp[static_cast<size_t>(i)]);
  return out;
}

double scheduleUs(const MicroPlan& plan, double computeUs, const std::vector<double>& opUs) {
  const size_t nc = plan.compute.size(), nm = plan.comms.size();
  std::vector<double> inlineUs(nc, 0.0), start(nc, 0.0), end(nc, 0.0), commEnd(nm, 0.0);
  for (size_t j = 0; j < nm; ++j) {
    const int w = plan.comms[j].inlineWith;
    if (w >= 0 && static_cast<size_t>(w) < nc) inlineUs[static_cast<size_t>(w)] += opUs[j];
  }
  size_t i = 0, j = 0;
  double computeFree = 0, commFree = 0;
  while (i < nc || j < nm) {
    bool progressed = false;
    if (j < nm && plan.comms[j].inlineWith >= 0) {  // not on the communication stream
      ++j;
      continue;
    }
    if (i < nc) {
      const int w = plan.compute[i].waitComm;
      if (w < 0 || static_cast<size_t>(w) < j) {
        start[i] = std::max(computeFree, w >= 0 ? commEnd[static_cast<size_t>(w)] : 0.0);
        end[i] = start[i] + plan.compute[i].share * computeUs + inlineUs[i];
        computeFree = end[i];
        ++i;
        progressed = true;
      }
    }
    if (j < nm) {
      const CommOp& op = plan.comms[j];
      const size_t d = static_cast<size_t>(op.afterCompute);
      if (op.afterCompute < 0 || d < i) {
        const double ready = op.afterCompute < 0 ? 0.0 : op.afterStart ? start[d] : end[d];
        commEnd[j] = std::max(commFree, ready) + opUs[j];
        commFree = commEnd[j];
        ++j;
        progressed = true;
      }
    }
    if (!progressed) return std::numeric_limits<double>::infinity();  // a plan that waits on itself
  }
  return std::max(computeFree, commFree);
}

ClusterCoster::ClusterCoster(const sim::ClusterSpec& cluster) : cluster_(cluster) {}

int ClusterCoster::addLinkState(const sim::LinkState& links) {
  links_.push_back(links);
  return static_cast<int>(links_.size()) - 1;
}

ClusterCoster::Comm& ClusterCoster::comm(const std::vector<int>& ranks) {
  auto it = comms_.find(ranks);
  if (it != comms_.end()) return it->second;
  Comm c;
  const sim::CommLayout layout = sim::makeCommLayout(cluster_, ranks);
  c.model = std::make_unique<sim::NcclModel>(cluster_, layout);
  // Groups that span nodes with fewer GPUs per node than the node has run side by side (one per tensor-parallel
  // index, or per local GPU for HSDP's replicas) and share the node's NICs.
  if (layout.nNodes > 1 && layout.maxLocalRanks > 0)
    c.concurrency = std::max(1, cluster_.gpusPerNode / layout.maxLocalRanks);
  return comms_.emplace(ranks, std::move(c)).first->second;
}

const sim::LinkState& ClusterCoster::scaledLinks(int linkState, int concurrency) {
  const sim::LinkState& base = links_[static_cast<size_t>(linkState)];
  if (concurrency <= 1) return base;
  auto key = std::make_pair(linkState, concurrency);
  auto it = scaled_.find(key);
  if (it != scaled_.end()) return it->second;
  sim::LinkState s = base;
  for (sim::NodeLinkState& n : s.nodes) {
    for (double& m : n.nicMult) m /= concurrency;
    for (double& m : n.pcieMult) m /= concurrency;
  }
  return scaled_.emplace(key, std::move(s)).first->second;
}

ClusterCoster::OpTime ClusterCoster::opTime(const std::vector<int>& ranks, CollType coll, size_t bytes,
                                            sim::DType dtype, int linkState) {
  if (ranks.size() <= 1 || bytes == 0) return {};
  Comm& c = comm(ranks);
  const auto key =
      std::make_tuple(static_cast<const Comm*>(&c), static_cast<int>(coll), bytes, static_cast<int>(dtype), linkState);
  auto it = times_.find(key);
  if (it != times_.end()) return it->second;

  const sim::LinkState& links = scaledLinks(linkState, c.concurrency);
  const sim::CommLayout& layout = c.model->layout();
  auto truth = [&](int algo, int proto, int channels) {
    return sim::truthTimeUs(cluster_, layout, links, sim::TruthQuery{coll, bytes, dtype, algo, proto, channels});
  };
  OpTime t;
  const sim::NcclChoice def = c.model->defaultChoice(coll, bytes, dtype);
  t.ncclUs = def.algo >= 0 ? truth(def.algo, def.proto, def.nChannels) : -1;
  float table[kNumAlgos][kNumProtos];
  c.model->costTableUs(coll, bytes, table, dtype);
  double best = std::numeric_limits<double>::infinity();
  for (int a = 0; a < kNumAlgos; ++a) {
    for (int p = 0; p < kNumProtos; ++p) {
      if (table[a][p] < 0) continue;
      const int d = c.model->defaultChannels(a, p, bytes);
      for (int ch : {d, std::max(1, d / 2), c.model->commChannels()}) {
        const double us = truth(a, p, ch);
        if (us >= 0) best = std::min(best, us);
      }
    }
  }
  t.wirewiseUs = std::isfinite(best) ? best : t.ncclUs;
  if (t.ncclUs < 0) t.ncclUs = t.wirewiseUs;
  times_.emplace(key, t);
  return t;
}

StepTime ClusterCoster::stepTime(const StepPlan& plan, const Strategy& s, sim::DType dtype, double microComputeUs,
                                 int linkState, bool wirewise) {
  const std::vector<int> groups[] = {groupRanks(cluster_, s, CommGroup::Dp), groupRanks(cluster_, s, CommGroup::Shard),
                                     groupRanks(cluster_, s, CommGroup::Replica),
                                     groupRanks(cluster_, s, CommGroup::Tp)};
  auto times = [&](const std::vector<CommOp>& ops) {
    std::vector<double> us;
    us.reserve(ops.size());
    for (const CommOp& op : ops) {
      const OpTime t = opTime(groups[static_cast<int>(op.group)], op.coll, op.bytes, dtype, linkState);
      us.push_back(wirewise ? t.wirewiseUs : t.ncclUs);
    }
    return us;
  };
  StepTime out;
  out.computeUs = plan.microBatches * microComputeUs;
  out.stepUs = scheduleUs(plan.last, microComputeUs, times(plan.last.comms));
  if (plan.microBatches > 1) {
    out.stepUs += (plan.microBatches - 1) * scheduleUs(plan.accumulate, microComputeUs, times(plan.accumulate.comms));
  }
  for (double us : times(plan.optimizer)) out.stepUs += us;
  out.exposedUs = std::max(0.0, out.stepUs - out.computeUs);
  return out;
}

}  // namespace wirewise::advise
