// Table, JSON and SVG of an AdviseResult; see report.h.
#include "advise/report.h"

#include <algorithm>
#include <cmath>

#include <fmt/core.h>

namespace wirewise::advise {
namespace {

std::string strategyLabel(const Strategy& s) { return fmt::format("{} tp{}", strategyName(s.kind), s.tp); }

double ms(double us) { return us / 1e3; }

const WhatIf* findWhatIf(const StrategyResult& s, const std::string& name) {
  for (const WhatIf& w : s.whatIf) {
    if (w.name == name) return &w;
  }
  return nullptr;
}

std::string escapeXml(const std::string& s) {
  std::string out;
  for (char c : s) {
    if (c == '<') out += "&lt;";
    else if (c == '>') out += "&gt;";
    else if (c == '&') out += "&amp;";
    else out += c;
  }
  return out;
}

}  // namespace

std::string knobText(const Strategy& s) {
  switch (s.kind) {
    case StrategyKind::Ddp:
    case StrategyKind::Zero1:
    case StrategyKind::Zero2: return fmt::format("bucket {:g} MB", s.bucketCapMb);
    case StrategyKind::Hsdp: return fmt::format("shard {} GPUs", s.shardGroup * s.tp);
    default: return "";
  }
}

std::string formatTable(const AdviseResult& r) {
  const sim::ClusterSpec& c = r.cluster;
  std::string out = fmt::format(
      "model: {} ({:.2f}B params, {} layers, hidden {}), {}, {}, global batch {} x {} tokens, micro batch {}, "
      "checkpointing {}\n",
      r.model.name, r.params / 1e9, r.model.layers, r.model.hidden, precisionName(r.training.precision),
      optimizerName(r.training.optimizer), r.training.globalBatch, r.model.seqLen, r.training.microBatch,
      r.training.checkpointing ? "on" : "off");
  out += fmt::format("cluster: {} x {} {}, NVLink {:g} GB/s, {} NICs x {:g} GB/s per node\n", c.nodes, c.gpusPerNode,
                     sim::gpuKindName(c.gpu), c.nvlinkGbps, c.nicsPerNode, c.nicGbps);
  out += fmt::format("compute: {:g} TFLOP/s peak x MFU {:.2f}; memory: {:g} GB per GPU, {:.1f} GB usable\n\n",
                     r.peakTflops, r.mfu, r.gpuMemoryGb, r.usableGb);

  std::vector<std::string> faultCols;
  if (!r.ranked.empty()) {
    for (const WhatIf& w : r.ranked.front().whatIf) faultCols.push_back(w.name);
  }
  out += fmt::format("{:>3}  {:<17}{:<14}{:>6}{:>10}{:>10}{:>10}{:>9}  {:<5}", "#", "strategy", "knob", "accum",
                     "step ms", "wirewise", "exposed", "mem GB", "fits");
  for (const std::string& f : faultCols) out += fmt::format("{:>11}", f);
  out += "\n";
  for (size_t i = 0; i < r.ranked.size(); ++i) {
    const StrategyResult& s = r.ranked[i];
    out += fmt::format("{:>3}  {:<17}{:<14}{:>6}{:>10.1f}{:>10.1f}{:>10.1f}{:>9.1f}  {:<5}", i + 1,
                       strategyLabel(s.strategy), knobText(s.strategy), s.microBatches, ms(s.nccl.stepUs),
                       ms(s.wirewise.stepUs), ms(s.nccl.exposedUs), s.memory.total(), s.fits ? "yes" : "no");
    for (const std::string& f : faultCols) {
      const WhatIf* w = findWhatIf(s, f);
      out += w ? fmt::format("{:>11.1f}", w->ncclMs) : fmt::format("{:>11}", "-");
    }
    out += "\n";
  }
  out +=
      "\nstep ms, exposed: NCCL 2.28's default choices, timed by the simulator's truth model on healthy links\n"
      "wirewise: best enabled choice, simulated upper bound\n";
  if (!faultCols.empty()) {
    out += "what-if columns, step ms with NCCL's default choices:\n";
    for (const WhatIf& w : r.ranked.front().whatIf) out += fmt::format("  {:<10} {}\n", w.name, w.label);
  }
  if (r.recommended < 0) {
    out +=
        "recommended: none fits in the usable memory; see the memory column (activation checkpointing, a smaller "
        "micro batch or more GPUs)\n";
    return out;
  }
  const StrategyResult& best = r.ranked[static_cast<size_t>(r.recommended)];
  const Strategy& s = best.strategy;
  out += fmt::format("recommended: {}, tensor parallel {}, data parallel {}", strategyName(s.kind), s.tp, s.dp);
  if (s.kind == StrategyKind::Ddp || s.kind == StrategyKind::Zero1 || s.kind == StrategyKind::Zero2) {
    out += fmt::format(", bucket_cap_mb={:g}", s.bucketCapMb);
  }
  if (s.kind == StrategyKind::Hsdp) {
    out += fmt::format(", HSDP shard group {} GPUs ({} node(s))", s.shardGroup * s.tp,
                       s.shardGroup * s.tp / std::max(1, c.gpusPerNode));
  }
  out += fmt::format(": {:.1f} ms/step ({:.1f} with wirewise), {:.1f} GB per GPU\n", ms(best.nccl.stepUs),
                     ms(best.wirewise.stepUs), best.memory.total());
  return out;
}

nlohmann::json toJson(const AdviseResult& r) {
  using nlohmann::json;
  json strategies = json::array();
  for (size_t i = 0; i < r.ranked.size(); ++i) {
    const StrategyResult& s = r.ranked[i];
    json knobs = json::object();
    if (s.strategy.kind == StrategyKind::Ddp || s.strategy.kind == StrategyKind::Zero1 ||
        s.strategy.kind == StrategyKind::Zero2) {
      knobs["bucket_cap_mb"] = s.strategy.bucketCapMb;
    }
    if (s.strategy.kind == StrategyKind::Hsdp) knobs["hsdp_group"] = s.strategy.shardGroup * s.strategy.tp;
    json whatIf = json::object();
    for (const WhatIf& w : s.whatIf) {
      whatIf[w.name] = {{"label", w.label}, {"step_time_ms", w.ncclMs}, {"wirewise_step_time_ms", w.wirewiseMs}};
    }
    strategies.push_back(
        {{"rank", i + 1},
         {"name", strategyName(s.strategy.kind)},
         {"tp", s.strategy.tp},
         {"dp", s.strategy.dp},
         {"knobs", knobs},
         {"micro_batches", s.microBatches},
         {"step_time_ms", ms(s.nccl.stepUs)},
         {"exposed_comm_ms", ms(s.nccl.exposedUs)},
         {"compute_ms", ms(s.nccl.computeUs)},
         {"wirewise", {{"step_time_ms", ms(s.wirewise.stepUs)}, {"exposed_comm_ms", ms(s.wirewise.exposedUs)}}},
         {"memory_gb",
          {{"params", s.memory.params},
           {"grads", s.memory.grads},
           {"optimizer", s.memory.optimizer},
           {"activations", s.memory.activations},
           {"total", s.memory.total()}}},
         {"fits", s.fits},
         {"what_if", whatIf}});
  }
  const sim::ClusterSpec& c = r.cluster;
  json out = {{"model",
               {{"name", r.model.name},
                {"params", r.params},
                {"layers", r.model.layers},
                {"hidden", r.model.hidden},
                {"heads", r.model.heads},
                {"vocab", r.model.vocab},
                {"seq_len", r.model.seqLen}}},
              {"training",
               {{"precision", precisionName(r.training.precision)},
                {"optimizer", optimizerName(r.training.optimizer)},
                {"global_batch", r.training.globalBatch},
                {"micro_batch", r.training.microBatch},
                {"checkpointing", r.training.checkpointing},
                {"flash_attention", r.training.flashAttention}}},
              {"cluster",
               {{"gpu", sim::gpuKindName(c.gpu)},
                {"nodes", c.nodes},
                {"gpus_per_node", c.gpusPerNode},
                {"nvlink_gbps", c.nvlinkGbps},
                {"nics_per_node", c.nicsPerNode},
                {"nic_gbps", c.nicGbps}}},
              {"assumptions",
               {{"peak_tflops", r.peakTflops},
                {"mfu", r.mfu},
                {"gpu_memory_gb", r.gpuMemoryGb},
                {"usable_memory_gb", r.usableGb},
                {"wirewise", "best enabled choice, simulated upper bound"}}},
              {"strategies", strategies},
              {"recommended", r.recommended >= 0 ? json(r.recommended + 1) : json(nullptr)}};
  return out;
}

std::string chartSvg(const AdviseResult& r) {
  const int rowH = 22, left = 190, width = 900, top = 40;
  const int height = top + rowH * static_cast<int>(r.ranked.size()) + 50;
  double maxMs = 1;
  for (const StrategyResult& s : r.ranked) {
    maxMs = std::max(maxMs, ms(s.nccl.stepUs));
    for (const WhatIf& w : s.whatIf) maxMs = std::max(maxMs, w.ncclMs);
  }
  const double scale = (width - left - 30) / maxMs;
  std::string out = fmt::format(
      "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{}\" height=\"{}\" font-family=\"sans-serif\" "
      "font-size=\"12\">\n<rect width=\"100%\" height=\"100%\" fill=\"white\"/>\n"
      "<text x=\"10\" y=\"20\" font-size=\"14\">{}: step time per strategy on {} x {} {} (compute, exposed "
      "communication; | wirewise; x worst fault)</text>\n",
      width, height, escapeXml(r.model.name), r.cluster.nodes, r.cluster.gpusPerNode, sim::gpuKindName(r.cluster.gpu));
  for (size_t i = 0; i < r.ranked.size(); ++i) {
    const StrategyResult& s = r.ranked[i];
    const int y = top + rowH * static_cast<int>(i);
    const double cw = ms(s.nccl.computeUs) * scale, ew = ms(s.nccl.exposedUs) * scale;
    const char* opacity = s.fits ? "1" : "0.3";
    out += fmt::format("<text x=\"10\" y=\"{}\">{} {}{}</text>\n", y + 15, escapeXml(strategyLabel(s.strategy)),
                       escapeXml(knobText(s.strategy)), s.fits ? "" : " (does not fit)");
    out += fmt::format("<rect x=\"{}\" y=\"{}\" width=\"{:.1f}\" height=\"16\" fill=\"#8fa8c8\" opacity=\"{}\"/>\n",
                       left, y + 2, cw, opacity);
    out += fmt::format("<rect x=\"{:.1f}\" y=\"{}\" width=\"{:.1f}\" height=\"16\" fill=\"#e8833a\" opacity=\"{}\"/>\n",
                       left + cw, y + 2, ew, opacity);
    const double wx = left + ms(s.wirewise.stepUs) * scale;
    out +=
        fmt::format("<line x1=\"{:.1f}\" y1=\"{}\" x2=\"{:.1f}\" y2=\"{}\" stroke=\"#2a7a2a\" stroke-width=\"2\"/>\n",
                    wx, y, wx, y + 20);
    double worst = 0;
    for (const WhatIf& w : s.whatIf) worst = std::max(worst, w.ncclMs);
    if (worst > 0) {
      out += fmt::format("<text x=\"{:.1f}\" y=\"{}\" fill=\"#b00\" text-anchor=\"middle\">x</text>\n",
                         left + worst * scale, y + 15);
    }
  }
  const int axisY = top + rowH * static_cast<int>(r.ranked.size()) + 10;
  out +=
      fmt::format("<line x1=\"{}\" y1=\"{}\" x2=\"{}\" y2=\"{}\" stroke=\"black\"/>\n", left, axisY, width - 30, axisY);
  for (int k = 0; k <= 4; ++k) {
    const double v = maxMs * k / 4;
    out += fmt::format("<text x=\"{:.1f}\" y=\"{}\" text-anchor=\"middle\">{:.0f} ms</text>\n", left + v * scale,
                       axisY + 16, v);
  }
  out += "</svg>\n";
  return out;
}

}  // namespace wirewise::advise
