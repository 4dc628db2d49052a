// A deterministic message stream both ends can regenerate: sizes (with 0, 1 and multi-MiB edge cases),
// tags and byte contents all follow from (seed, index), so the receiver verifies every byte without
// being told what was sent.
#pragma once

#include <cstddef>
#include <cstdint>
#include <random>
#include <vector>

namespace wirewise::net::testing {

inline uint64_t mix(uint64_t x) {
  x += 0x9e3779b97f4a7c15ull;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}

struct Message {
  size_t size;
  int tag;
};

inline std::vector<Message> makeTraffic(uint64_t seed, int count, size_t maxSize) {
  std::mt19937_64 rng(seed);
  std::vector<Message> out;
  for (int i = 0; i < count; ++i) {
    size_t size;
    switch (i % 8) {
      case 0: size = 0; break;
      case 1: size = 1; break;
      case 2: size = maxSize; break;
      case 3: size = rng() % (maxSize + 1); break;
      default: size = rng() % 70000; break;
    }
    out.push_back({size, static_cast<int>(rng() % 1000)});
  }
  return out;
}

inline void fill(char* buf, size_t size, uint64_t seed, int index) {
  uint64_t word = mix(seed ^ (static_cast<uint64_t>(index) << 32));
  for (size_t i = 0; i < size; ++i) {
    if (i % 8 == 0) word = mix(word + i);
    buf[i] = static_cast<char>(word >> (8 * (i % 8)));
  }
}

// Index of the first wrong byte, or -1.
inline long firstMismatch(const char* buf, size_t size, uint64_t seed, int index) {
  std::vector<char> want(size);
  fill(want.data(), size, seed, index);
  for (size_t i = 0; i < size; ++i)
    if (buf[i] != want[i]) return static_cast<long>(i);
  return -1;
}

}  // namespace wirewise::net::testing
