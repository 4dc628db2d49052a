// Deterministic noise for the simulator. Every draw is a pure function of the seed and the draw's position,
// on every platform: std::mt19937_64's output is fixed by the standard, and the distributions are written
// out here (std::normal_distribution and friends are implementation-defined).
#pragma once

#include <cstdint>
#include <random>

#include "sim/model/scenario.h"

namespace wirewise::sim {

class Rng {
 public:
  explicit Rng(uint64_t seed) : gen_(seed) {}
  uint64_t next() { return gen_(); }
  // Uniform in [0, 1) with 53 random bits.
  double uniform();
  // Standard normal by Box-Muller; both values of a pair are used, in order.
  double normal();
  // Uniform integer in [0, n), n > 0 (Lemire's multiply-shift; the tiny bias is irrelevant here).
  int below(int n);

 private:
  std::mt19937_64 gen_;
  bool haveSpare_ = false;
  double spare_ = 0;
};

// The noise applied to one collective instance, identical for every mode.
struct NoiseDraw {
  double multiplier = 1.0;  // on the collective's true time (lognormal, mean 1, relative sd = jitter)
  int lateMember = -1;      // index into the communicator's rank list of the late rank, -1 for none
  double lateUs = 0;        // how late that rank arrives
};

// One stream per run. Each draw consumes exactly the same number of random values whatever the outcome, so
// the k-th draw depends only on the seed and k, never on the scenario's noise settings.
class NoiseSource {
 public:
  NoiseSource(const Noise& noise, uint64_t seed);
  NoiseDraw draw(int commSize);

 private:
  Noise noise_;
  double sigma_;  // of log(multiplier)
  Rng rng_;
};

}  // namespace wirewise::sim
