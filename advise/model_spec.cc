// Model presets, parameter counts and FLOPs; see model_spec.h.
#include "advise/model_spec.h"

#include <algorithm>
#include <cmath>

namespace wirewise::advise {
namespace {

ModelSpec llama(std::string name, int layers, int hidden, int heads, int kvHeads, int ffn) {
  ModelSpec m;
  m.name = std::move(name);
  m.layers = layers;
  m.hidden = hidden;
  m.heads = heads;
  m.kvHeads = kvHeads;
  m.ffn = ffn;
  m.gatedMlp = true;
  m.vocab = 32000;
  m.seqLen = 4096;
  return m;
}

}  // namespace

std::optional<ModelSpec> modelPreset(std::string_view name) {
  if (name == "gpt-1.3b") {
    // GPT-3 XL (Brown et al. 2020, Table 2.1): 24 layers, d_model 2048, context 2048, heads of 128 (2048 / 128 = 16).
    ModelSpec m;
    m.name = "gpt-1.3b";
    m.layers = 24;
    m.hidden = 2048;
    m.heads = 16;
    m.vocab = 50257;
    m.seqLen = 2048;
    m.tiedEmbeddings = true;
    m.learnedPositions = true;
    return m;
  }
  // Llama 2 (Touvron et al. 2023, Table 1 and the released configs): 6.74B, 13.0B, 69.0B.
  if (name == "llama-7b") return llama("llama-7b", 32, 4096, 32, 32, 11008);
  if (name == "llama-13b") return llama("llama-13b", 40, 5120, 40, 40, 13824);
  if (name == "llama-70b") return llama("llama-70b", 80, 8192, 64, 8, 28672);
  return std::nullopt;
}

std::vector<std::string> modelPresetNames() { return {"gpt-1.3b", "llama-7b", "llama-13b", "llama-70b"}; }

ModelSpec shapeForParams(double params, int vocab, int seqLen) {
  // 12 L h^2 = params with L = h / 128: h = cbrt(128 params / 12), rounded to a multiple of 128.
  const double h = std::max(128.0, std::round(std::cbrt(params * 128.0 / 12.0) / 128.0) * 128.0);
  ModelSpec m;
  m.hidden = static_cast<int>(h);
  m.layers = std::max(1, static_cast<int>(std::lround(params / (12.0 * h * h))));
  m.heads = std::max(1, m.hidden / 128);
  m.vocab = vocab;
  m.seqLen = seqLen;
  m.params = params;
  return m;
}

double layerParamCount(const ModelSpec& m) {
  const double h = m.hidden;
  const double kv = m.kvHeads > 0 && m.heads > 0 ? h * m.kvHeads / m.heads : h;
  const double ffn = m.ffn > 0 ? m.ffn : 4.0 * h;
  const double attention = 2 * h * h + 2 * h * kv;  // q, o and k, v projections
  const double mlp = (m.gatedMlp ? 3.0 : 2.0) * h * ffn;
  const double norms = 2 * h;
  return attention + mlp + norms;
}

double paramCount(const ModelSpec& m) {
  if (m.params > 0) return m.params;
  const double h = m.hidden;
  double embeddings = static_cast<double>(m.vocab) * h * (m.tiedEmbeddings ? 1 : 2);
  if (m.learnedPositions) embeddings += static_cast<double>(m.seqLen) * h;
  return m.layers * layerParamCount(m) + embeddings + h;
}

std::string_view precisionName(Precision p) {
  switch (p) {
    case Precision::Bf16: return "bf16";
    case Precision::Fp16: return "fp16";
    case Precision::Fp32: return "fp32";
  }
  return "?";
}

std::optional<Precision> parsePrecision(std::string_view s) {
  if (s == "bf16") return Precision::Bf16;
  if (s == "fp16") return Precision::Fp16;
  if (s == "fp32") return Precision::Fp32;
  return std::nullopt;
}

std::string_view optimizerName(Optimizer o) { return o == Optimizer::Adam ? "adam" : "sgd"; }

std::optional<Optimizer> parseOptimizer(std::string_view s) {
  if (s == "adam" || s == "adamw") return Optimizer::Adam;
  if (s == "sgd") return Optimizer::Sgd;
  return std::nullopt;
}

double weightBytes(const TrainingSpec& t) { return t.precision == Precision::Fp32 ? 4.0 : 2.0; }

double optimizerBytesPerParam(const TrainingSpec& t) {
  // Adam: fp32 momentum + variance; SGD: fp32 momentum. Mixed precision adds the fp32 master weights.
  const double states = t.optimizer == Optimizer::Adam ? 8.0 : 4.0;
  return states + (t.precision == Precision::Fp32 ? 0.0 : 4.0);
}

double trainingFlops(const ModelSpec& m, const TrainingSpec& t, double tokens) {
  const double perToken = 6.0 * paramCount(m) + 12.0 * m.layers * static_cast<double>(m.hidden) * m.seqLen;
  return perToken * tokens * (t.checkpointing ? 4.0 / 3.0 : 1.0);
}

}  // namespace wirewise::advise
