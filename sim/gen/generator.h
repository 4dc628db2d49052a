// Generated scenarios for the simulator's corpus: `wirewise scenario generate` writes gen-<s>.json for a range of
// seeds. Scenario s is a pure function of s, the same bytes on every compiler and platform: one std::mt19937_64
// (its output is fixed by the standard) and integer draws written out here, no standard distributions and no
// libm. The space it covers (every dimension and its distribution) is documented in docs/simulator.md.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

namespace wirewise::sim::gen {

// The training pattern a scenario's workload imitates.
enum class Shape : uint8_t { Ddp, Fsdp, TensorParallel, Pipeline, Latency, Mix };
std::string_view shapeName(Shape shape);  // "ddp", "fsdp", "tp", "pipeline", "latency", "mix"

struct Generated {
  std::string name;  // "gen-<seed>"
  Shape shape = Shape::Ddp;
  std::string json;  // the file's text: 2-space indented, ending in a newline
};

Generated generateScenario(uint64_t seed);

// The simulator's work grows with ranks x collectives; the generator scales each entry's repeat down until
// steps x sum over entries (repeat x the entry's participating ranks) is at most this (no repeat below 1).
inline constexpr int64_t kRankCollectiveBudget = 1'500'000;

}  // namespace wirewise::sim::gen
