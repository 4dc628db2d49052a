// SHA-256 (FIPS 180-4) and HMAC-SHA-256 (RFC 2104), written from the specifications so that the plugin
// authenticates control-plane messages without linking a crypto library.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <span>
#include <string_view>

namespace wirewise::control {

using Digest = std::array<uint8_t, 32>;

class Sha256 {
 public:
  Sha256();
  void update(std::span<const uint8_t> data);
  void update(std::string_view s) { update({reinterpret_cast<const uint8_t*>(s.data()), s.size()}); }
  Digest finish();

 private:
  void block(const uint8_t* p);
  uint32_t h_[8];
  uint8_t buf_[64];
  size_t bufLen_ = 0;
  uint64_t total_ = 0;
};

Digest sha256(std::span<const uint8_t> data);

// HMAC over the concatenation of parts (no copy of the message is made).
Digest hmacSha256(std::span<const uint8_t> key, std::initializer_list<std::span<const uint8_t>> parts);

// A key with its padded inner and outer blocks already compressed: each MAC then costs two compressions
// fewer (a control-plane frame of ~100 bytes: 3 instead of 5).
class HmacSha256Key {
 public:
  explicit HmacSha256Key(std::span<const uint8_t> key);
  Digest mac(std::initializer_list<std::span<const uint8_t>> parts) const;

 private:
  Sha256 inner_, outer_;
};

namespace detail {
// One compression of `block` (64 bytes) into `state`. sha256Block uses the x86 SHA extensions where the CPU
// has them (checked once with cpuid), else sha256BlockPortable; tests compare the two.
void sha256Block(uint32_t* state, const uint8_t* block);
void sha256BlockPortable(uint32_t* state, const uint8_t* block);
bool sha256Accelerated();
}  // namespace detail

// Constant-time comparison: a forger learns nothing from how long a rejection took.
bool digestsEqual(std::span<const uint8_t> a, std::span<const uint8_t> b);

}  // namespace wirewise::control
