#include "sim/driver/noise.h"

#include <cmath>

namespace wirewise::sim {

double Rng::uniform() { return static_cast<double>(gen_() >> 11) * 0x1.0p-53; }

double Rng::normal() {
  if (haveSpare_) {
    haveSpare_ = false;
    return spare_;
  }
  // 1 - u lies in (0, 1], so the log is finite.
  const double u1 = 1.0 - uniform();
  const double u2 = uniform();
  const double r = std::sqrt(-2.0 * std::log(u1));
  const double theta = 2.0 * M_PI * u2;
  spare_ = r * std::sin(theta);
  haveSpare_ = true;
  return r * std::cos(theta);
}

int Rng::below(int n) {
  const uint64_t x = gen_() >> 32;
  return static_cast<int>((x * static_cast<uint64_t>(n)) >> 32);
}

NoiseSource::NoiseSource(const Noise& noise, uint64_t seed)
    : noise_(noise), sigma_(std::sqrt(std::log1p(noise.jitter * noise.jitter))), rng_(seed) {}

NoiseDraw NoiseSource::draw(int commSize) {
  // Always consume one normal, one uniform and one index so that streams stay aligned across settings.
  const double z = rng_.normal();
  const double u = rng_.uniform();
  const int who = rng_.below(commSize > 0 ? commSize : 1);
  NoiseDraw d;
  // Lognormal with E[m] = 1 and sd(m) = jitter: log m ~ N(-sigma^2 / 2, sigma^2), sigma^2 = log(1 + jitter^2).
  if (sigma_ > 0) d.multiplier = std::exp(sigma_ * z - 0.5 * sigma_ * sigma_);
  if (noise_.stragglerProb > 0 && noise_.stragglerUs > 0 && u < noise_.stragglerProb && commSize > 1) {
    d.lateMember = who;
    d.lateUs = noise_.stragglerUs;
  }
  return d;
}

}  // namespace wirewise::sim
