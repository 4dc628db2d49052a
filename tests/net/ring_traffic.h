// The message schedule and byte patterns of the namespace ring (ring_member.cc, netns_ring.sh). Every
// rank derives the same schedule from the seed, so a receiver knows each message's size, tag and, from
// (sender rank, message index), every byte, without being told. Patterns are generated a 64-bit word at a
// time so that a 1 GiB message costs well under a second to fill and to check.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <random>
#include <vector>

#include "tests/net/traffic.h"

namespace wirewise::net::testing {

struct RingMessage {
  size_t size;
  int tag;
};

// One irecv: `count` consecutive messages from `first`, posted as buffers for the tags in `tags` (a
// permutation of the messages' tags, so the plugin must match by tag), buffer k taking message `takes[k]`.
struct RingReceive {
  int first;
  int count;
  std::vector<int> tags;
  std::vector<int> takes;
};

struct RingSchedule {
  std::vector<RingMessage> messages;
  std::vector<RingReceive> receives;
};

// The plugin's rule for which buffer of a receive a message goes to: the k-th message with a tag (in
// sending order) takes the k-th buffer with that tag (in posting order).
inline std::vector<int> matchTags(const std::vector<RingMessage>& msgs, int first, const std::vector<int>& tags) {
  std::vector<int> takes(tags.size(), -1);
  std::vector<bool> used(tags.size(), false);
  for (size_t m = 0; m < tags.size(); ++m) {
    for (size_t k = 0; k < tags.size(); ++k) {
      if (!used[k] && tags[k] == msgs[static_cast<size_t>(first) + m].tag) {
        used[k] = true;
        takes[k] = first + static_cast<int>(m);
        break;
      }
    }
  }
  return takes;
}

// Sizes 0, 1, odd sizes and every power of two from 4 KiB to maxBytes, one message per receive; then
// `small` messages of 0..64 KiB in receives of 1..8 buffers (tags shuffled, a quarter of the receives
// with repeated tags); then one 1 GiB message when `gib` is set.
inline RingSchedule makeRingSchedule(uint64_t seed, size_t maxBytes, int small, bool gib) {
  RingSchedule s;
  std::mt19937_64 rng(seed);
  auto single = [&](size_t size) {
    int index = static_cast<int>(s.messages.size());
    int tag = static_cast<int>(rng() % 1000);
    s.messages.push_back({size, tag});
    s.receives.push_back({index, 1, {tag}, {index}});
  };
  for (size_t size : {size_t{0}, size_t{1}, size_t{2}, size_t{3}, size_t{7}, size_t{255}, size_t{4093}, size_t{65537},
                      size_t{1048573}, size_t{3 << 20} + 5})
    if (size <= maxBytes) single(size);
  for (size_t size = 4096; size <= maxBytes; size *= 2) single(size);
  if (maxBytes >= (32u << 20)) single((32u << 20) + 3);
  int left = small;
  while (left > 0) {
    int n = std::min(left, 1 + static_cast<int>(rng() % 8));
    int first = static_cast<int>(s.messages.size());
    bool repeat = rng() % 4 == 0;
    std::vector<int> tags;
    for (int k = 0; k < n; ++k) {
      int tag;
      do {
        tag = repeat ? static_cast<int>(rng() % 2) : static_cast<int>(rng() % 100000);
      } while (!repeat && std::find(tags.begin(), tags.end(), tag) != tags.end());
      tags.push_back(tag);
      size_t size = rng() % 16 == 0 ? 0 : 1 + rng() % 65536;
      s.messages.push_back({size, tag});
    }
    std::shuffle(tags.begin(), tags.end(), rng);
    std::vector<int> takes = matchTags(s.messages, first, tags);
    s.receives.push_back({first, n, tags, takes});
    left -= n;
  }
  if (gib) single(size_t{1} << 30);
  return s;
}

inline uint64_t patternKey(uint64_t seed, int sender, int index) {
  return mix(seed ^ (static_cast<uint64_t>(sender + 1) << 40) ^ static_cast<uint64_t>(index));
}

// Byte i of a message is byte (i % 8) of word i / 8; `invert` writes the complement (the receiver's
// poison, so that a byte the plugin never wrote cannot pass for a right one).
inline void fillPattern(char* buf, size_t size, uint64_t key, bool invert) {
  const uint64_t flip = invert ? ~uint64_t{0} : 0;
  size_t w = 0;
  for (; (w + 1) * 8 <= size; ++w) {
    uint64_t v = mix(key + w) ^ flip;
    std::memcpy(buf + w * 8, &v, 8);
  }
  if (w * 8 < size) {
    uint64_t v = mix(key + w) ^ flip;
    std::memcpy(buf + w * 8, &v, size - w * 8);
  }
}

// First byte in [from, to) that differs from the (inverted) pattern, or -1. `to` <= the buffer's size.
inline long patternMismatch(const char* buf, size_t from, size_t to, uint64_t key, bool invert) {
  const uint64_t flip = invert ? ~uint64_t{0} : 0;
  for (size_t w = from / 8; w * 8 < to; ++w) {
    uint64_t want = mix(key + w) ^ flip;
    char bytes[8];
    std::memcpy(bytes, &want, 8);
    if (w * 8 >= from && w * 8 + 8 <= to && std::memcmp(buf + w * 8, bytes, 8) == 0) continue;  // the fast path
    for (size_t b = std::max(w * 8, from); b < std::min(w * 8 + 8, to); ++b)
      if (buf[b] != bytes[b - w * 8]) return static_cast<long>(b);
  }
  return -1;
}

}  // namespace wirewise::net::testing
