// `wirewise advise`: ranks DDP, FSDP/HSDP, ZeRO-1/2/3 and tensor-parallel degrees for a model on a cluster
// (a scenario, this host's wiring map, or the embedded default), with what-if faults. docs/advise.md.
#include <chrono>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <memory>
#include <optional>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

#include <fmt/core.h>

#include "advise/advise.h"
#include "advise/cluster_source.h"
#include "advise/report.h"
#include "sim/driver/driver.h"
#include "sim/model/scenario.h"
#include "telemetry/wiring/wiring_json.h"
#include "tools/commands.h"

namespace wirewise::tools {
namespace {

struct AdviseArgs {
  std::string model, params, dtype = "bf16", optimizer = "adam";
  int layers = 0, hidden = 0, heads = 0, vocab = 0, seq = 0;
  int globalBatch = 256, microBatch = 1;
  bool checkpointing = false, noFlash = false;
  std::string scenario, wiring, log, svg;
  int nodes = 1, nicsPerNode = 0, logNode = 0;
  double nicGbps = 0;
  double peakTflops = 0, mfu = 0.4, gpuMemGb = 0;
  std::vector<int> tp;
  std::vector<double> buckets;
  std::vector<std::string> strategies;
  bool json = false;
};

std::string readFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw std::runtime_error("cannot read " + path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// "7.5e9", "7.5B", "1300M", "70b".
double parseCount(const std::string& s) {
  size_t used = 0;
  double v = std::stod(s, &used);
  const std::string unit = s.substr(used);
  if (unit == "B" || unit == "b") v *= 1e9;
  else if (unit == "M" || unit == "m") v *= 1e6;
  else if (unit == "T" || unit == "t") v *= 1e12;
  else if (!unit.empty()) throw std::runtime_error("--params: cannot read '" + s + "' (e.g. 7.5e9, 7.5B, 1300M)");
  if (!(v > 0)) throw std::runtime_error("--params must be positive");
  return v;
}

advise::ModelSpec modelFrom(const AdviseArgs& a) {
  advise::ModelSpec m;
  if (!a.model.empty()) {
    auto p = advise::modelPreset(a.model);
    if (!p) {
      std::string names;
      for (const auto& n : advise::modelPresetNames()) names += (names.empty() ? "" : ", ") + n;
      throw std::runtime_error("unknown --model " + a.model + " (presets: " + names + ")");
    }
    m = *p;
  } else if (!a.params.empty()) {
    m = advise::shapeForParams(parseCount(a.params), 32000, 2048);
    m.name = "params-" + a.params;
  } else if (a.layers > 0 && a.hidden > 0) {
    m.name = "custom";
  } else {
    throw std::runtime_error("give --model NAME, --params N, or --layers and --hidden");
  }
  if (a.layers > 0) m.layers = a.layers;
  if (a.hidden > 0) m.hidden = a.hidden;
  if (a.heads > 0) m.heads = a.heads;
  if (m.heads <= 0) m.heads = std::max(1, m.hidden / 128);
  if (a.seq > 0) m.seqLen = a.seq;
  if (m.seqLen <= 0) m.seqLen = 2048;
  if (a.vocab > 0) m.vocab = a.vocab;
  if (m.vocab <= 0) m.vocab = 32000;
  return m;
}

int runAdvise(const AdviseArgs& a) {
  const auto start = std::chrono::steady_clock::now();
  advise::AdviseOptions o;
  o.model = modelFrom(a);
  const auto precision = advise::parsePrecision(a.dtype);
  const auto optimizer = advise::parseOptimizer(a.optimizer);
  if (!precision) throw std::runtime_error("--dtype must be bf16, fp16 or fp32");
  if (!optimizer) throw std::runtime_error("--optimizer must be adam or sgd");
  o.training.precision = *precision;
  o.training.optimizer = *optimizer;
  o.training.globalBatch = a.globalBatch;
  o.training.microBatch = a.microBatch;
  o.training.checkpointing = a.checkpointing;
  o.training.flashAttention = !a.noFlash;
  o.peakTflops = a.peakTflops;
  o.mfu = a.mfu;
  o.gpuMemoryGb = a.gpuMemGb;
  o.tpDegrees = a.tp;
  if (!a.buckets.empty()) o.bucketCapsMb = a.buckets;
  for (const std::string& s : a.strategies) {
    auto k = advise::parseStrategy(s);
    if (!k) throw std::runtime_error("unknown strategy " + s + " (ddp, fsdp_full, fsdp_grad_op, hsdp, zero1-3)");
    o.strategies.push_back(*k);
  }

  // The cluster: a scenario, a wiring map, or the embedded default scenario.
  sim::ClusterSpec cluster;
  std::vector<sim::LinkState> recorded;
  std::string recordedLabel;
  if (!a.wiring.empty()) {
    wiring::WiringMap map;
    std::string error;
    if (!wiring::readMapFile(a.wiring, &map, &error)) throw std::runtime_error(a.wiring + ": " + error);
    advise::WiringCluster wc = advise::clusterFromWiring(map, a.nodes, a.nicGbps, a.nicsPerNode);
    cluster = wc.cluster;
    recorded = wc.measured;
    if (!recorded.empty()) recordedLabel = "the slow NVLink the wiring map measured";
    if (!a.json) std::printf("wiring: %s\n", wc.note.c_str());
  } else {
    std::string error;
    std::optional<sim::Scenario> sc = a.scenario.empty() ? sim::parseScenario(sim::defaultScenarioJson(), &error)
                                                         : sim::loadScenarioFile(a.scenario, &error);
    if (!sc)
      throw std::runtime_error((a.scenario.empty() ? std::string("default scenario") : a.scenario) + ": " + error);
    cluster = sc->cluster;
    recorded = advise::scheduledLinkStates(*sc);
    if (!recorded.empty()) recordedLabel = "the worst of the scenario's scheduled faults";
    if (!a.json) std::printf("scenario: %s\n", sc->name.c_str());
  }
  if (!a.log.empty()) {
    advise::LogFaults lf = advise::faultsFromLog(readFile(a.log), cluster, a.logNode);
    if (lf.linkHealthEvents == 0) {
      std::fprintf(stderr, "wirewise advise: %s: no link_health events; no recorded faults from it\n", a.log.c_str());
    }
    recorded = lf.states;  // the log's measured health replaces the scenario's schedule
    recordedLabel = lf.states.empty() ? "" : "the log's link health: " + lf.label;
  }

  const advise::AdviseResult r = advise::advise(cluster, recorded, recordedLabel, o);
  if (!a.svg.empty()) {
    std::ofstream out(a.svg, std::ios::binary | std::ios::trunc);
    out << advise::chartSvg(r);
    if (!out) throw std::runtime_error("cannot write " + a.svg);
  }
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  if (a.json) {
    nlohmann::json j = advise::toJson(r);
    j["run_time_s"] = seconds;
    std::printf("%s\n", j.dump(2).c_str());
  } else {
    std::fputs(advise::formatTable(r).c_str(), stdout);
    std::printf("run time %.2f s\n", seconds);
  }
  return 0;
}

}  // namespace

void addAdviseCommand(CLI::App& app) {
  auto a = std::make_shared<AdviseArgs>();
  auto* cmd = app.add_subcommand(
      "advise",
      "Rank DDP, FSDP/HSDP, ZeRO-1/2/3 and tensor-parallel degrees for a model on this wiring: simulated "
      "step time, memory per GPU, and what a degraded link would cost each");
  auto* model = cmd->add_option("--model", a->model, "Preset: gpt-1.3b, llama-7b, llama-13b, llama-70b");
  cmd->add_option("--params", a->params, "Parameter count instead of a preset (7.5e9, 7.5B, 1300M)")->excludes(model);
  cmd->add_option("--layers", a->layers, "Transformer layers (overrides the preset)")->check(CLI::PositiveNumber);
  cmd->add_option("--hidden", a->hidden, "Hidden size")->check(CLI::PositiveNumber);
  cmd->add_option("--heads", a->heads, "Attention heads")->check(CLI::PositiveNumber);
  cmd->add_option("--vocab", a->vocab, "Vocabulary (default: the preset's, else 32000)")->check(CLI::PositiveNumber);
  cmd->add_option("--seq", a->seq, "Sequence length (default: the preset's, else 2048)")->check(CLI::PositiveNumber);
  cmd->add_option("--dtype", a->dtype, "bf16 (default), fp16 (mixed precision) or fp32");
  cmd->add_option("--optimizer", a->optimizer, "adam (default; mixed precision K = 12) or sgd (momentum)");
  cmd->add_option("--global-batch", a->globalBatch, "Sequences per optimizer step (default 256)")
      ->check(CLI::PositiveNumber);
  cmd->add_option("--micro-batch", a->microBatch, "Sequences per GPU per forward/backward (default 1)")
      ->check(CLI::PositiveNumber);
  cmd->add_flag("--checkpointing", a->checkpointing, "Full activation checkpointing (recompute the forward)");
  cmd->add_flag("--no-flash-attention", a->noFlash, "Count the s x s attention scores in the activations");
  auto* scenario =
      cmd->add_option("--scenario", a->scenario, "Scenario JSON (default: the embedded 2x8-h100-nic-degrade)");
  cmd->add_option("--wiring", a->wiring, "This host's wiring map (wirewise probe) as one node's GPUs")
      ->excludes(scenario);
  cmd->add_option("--nodes", a->nodes, "Nodes, with --wiring (default 1)")->check(CLI::PositiveNumber);
  cmd->add_option("--nic-gbps", a->nicGbps, "GB/s per NIC, with --wiring (default 50)")->check(CLI::PositiveNumber);
  cmd->add_option("--nics-per-node", a->nicsPerNode, "NICs per node, with --wiring (default one per GPU)")
      ->check(CLI::PositiveNumber);
  cmd->add_option("--log", a->log, "Adaptation log: its link_health events become the recorded faults");
  cmd->add_option("--log-node", a->logNode, "The node the log's links belong to (default 0)")
      ->check(CLI::NonNegativeNumber);
  cmd->add_option("--peak-tflops", a->peakTflops, "Per-GPU peak TFLOP/s (default: the GPU's dense 16-bit figure)")
      ->check(CLI::PositiveNumber);
  cmd->add_option("--mfu", a->mfu, "Model FLOPs utilisation (default 0.4)")->check(CLI::Range(0.01, 1.0));
  cmd->add_option("--gpu-mem-gb", a->gpuMemGb, "HBM per GPU, GB (default: the GPU's)")->check(CLI::PositiveNumber);
  cmd->add_option("--tp", a->tp, "Tensor-parallel degrees to try (default 1,2,4,8 that divide a node)")->delimiter(',');
  cmd->add_option("--bucket-cap-mb", a->buckets, "DDP / ZeRO bucket sizes to try (default 10,25,100,250)")
      ->delimiter(',');
  cmd->add_option("--strategies", a->strategies, "Only these (ddp,fsdp_full,fsdp_grad_op,hsdp,zero1,zero2,zero3)")
      ->delimiter(',');
  cmd->add_flag("--json", a->json, "Print JSON instead of the table");
  cmd->add_option("--svg", a->svg, "Write a chart of the ranking here");
  cmd->callback([a] {
    int rc = 0;
    try {
      rc = runAdvise(*a);
    } catch (const std::exception& e) {
      std::fprintf(stderr, "wirewise advise: %s\n", e.what());
      rc = 2;
    }
    if (rc != 0) throw CLI::RuntimeError(rc);
  });
}

}  // namespace wirewise::tools
