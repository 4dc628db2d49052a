// The advisor's inputs that describe the training job, not the cluster: the model's shape (a preset or explicit
// figures), the precision, the optimizer, the batch and activation checkpointing, and the FLOP count they imply.
// Pure; formulas and sources in docs/advise.md §1 and §3.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace wirewise::advise {

// A decoder-only transformer. `params` is the total parameter count; when it is 0, paramCount() derives it from
// the shape. Explicit --params keep the given count and only use the shape for activations and FSDP units.
struct ModelSpec {
  std::string name = "custom";
  int layers = 0;
  int hidden = 0;
  int heads = 0;
  int kvHeads = 0;                // grouped-query attention; 0 = heads
  int ffn = 0;                    // MLP inner size; 0 = 4 x hidden
  bool gatedMlp = false;          // SwiGLU (three matrices) as in Llama; else two (GPT)
  bool tiedEmbeddings = false;    // output head shares the input embedding (GPT)
  bool learnedPositions = false;  // GPT's learned position table (seq x hidden)
  int vocab = 0;
  int seqLen = 0;
  double params = 0;
};

// gpt-1.3b (GPT-3 XL), llama-7b, llama-13b, llama-70b (Llama 2 shapes). nullopt for an unknown name.
std::optional<ModelSpec> modelPreset(std::string_view name);
std::vector<std::string> modelPresetNames();
// A GPT-shaped model of about `params` parameters (hidden = 128 x layers, Kaplan et al. 2020's aspect ratio),
// with `params` kept exactly.
ModelSpec shapeForParams(double params, int vocab, int seqLen);

// Parameters of one transformer layer, and the total (layers + embeddings + head + final norm).
double layerParamCount(const ModelSpec& m);
double paramCount(const ModelSpec& m);

enum class Precision : uint8_t { Bf16, Fp16, Fp32 };
enum class Optimizer : uint8_t { Adam, Sgd };
std::string_view precisionName(Precision p);
std::optional<Precision> parsePrecision(std::string_view s);
std::string_view optimizerName(Optimizer o);
std::optional<Optimizer> parseOptimizer(std::string_view s);

struct TrainingSpec {
  Precision precision = Precision::Bf16;  // mixed precision: 16-bit params/grads, fp32 master copy in the optimizer
  Optimizer optimizer = Optimizer::Adam;
  int globalBatch = 256;  // sequences per optimizer step
  int microBatch = 1;     // sequences per GPU per forward/backward
  bool checkpointing = false;
  bool flashAttention = true;  // no s x s attention-score activations (Dao et al. 2022)
};

// Bytes per parameter of the 16-bit (or fp32) weights and gradients, and the optimizer's K (ZeRO paper §3.1:
// mixed-precision Adam keeps an fp32 copy, momentum and variance, K = 12).
double weightBytes(const TrainingSpec& t);
double optimizerBytesPerParam(const TrainingSpec& t);

// FLOPs of one forward + backward over `tokens` tokens (PaLM, Chowdhery et al. 2022, App. B):
// (6 N + 12 L h s) per token, x 4/3 with activation checkpointing (the forward runs twice).
double trainingFlops(const ModelSpec& m, const TrainingSpec& t, double tokens);

}  // namespace wirewise::advise
