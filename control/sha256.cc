#include "control/sha256.h"

#include <atomic>
#include <cstring>

#if defined(__x86_64__)
#include <cpuid.h>
#include <immintrin.h>
#endif

namespace wirewise::control {
namespace {

constexpr uint32_t kK[64] = {
    0x428a2f98, 0x71374491, 0xb5c0fbcf, 0xe9b5dba5, 0x3956c25b, 0x59f111f1, 0x923f82a4, 0xab1c5ed5,
    0xd807aa98, 0x12835b01, 0x243185be, 0x550c7dc3, 0x72be5d74, 0x80deb1fe, 0x9bdc06a7, 0xc19bf174,
    0xe49b69c1, 0xefbe4786, 0x0fc19dc6, 0x240ca1cc, 0x2de92c6f, 0x4a7484aa, 0x5cb0a9dc, 0x76f988da,
    0x983e5152, 0xa831c66d, 0xb00327c8, 0xbf597fc7, 0xc6e00bf3, 0xd5a79147, 0x06ca6351, 0x14292967,
    0x27b70a85, 0x2e1b2138, 0x4d2c6dfc, 0x53380d13, 0x650a7354, 0x766a0abb, 0x81c2c92e, 0x92722c85,
    0xa2bfe8a1, 0xa81a664b, 0xc24b8b70, 0xc76c51a3, 0xd192e819, 0xd6990624, 0xf40e3585, 0x106aa070,
    0x19a4c116, 0x1e376c08, 0x2748774c, 0x34b0bcb5, 0x391c0cb3, 0x4ed8aa4a, 0x5b9cca4f, 0x682e6ff3,
    0x748f82ee, 0x78a5636f, 0x84c87814, 0x8cc70208, 0x90befffa, 0xa4506ceb, 0xbef9a3f7, 0xc67178f2};

inline uint32_t rotr(uint32_t x, int n) { return (x >> n) | (x << (32 - n)); }

}  // namespace

namespace detail {

void sha256BlockPortable(uint32_t* h_, const uint8_t* p) {  // FIPS 180-4 §6.2.2
  uint32_t w[64];
  for (int i = 0; i < 16; ++i)
    w[i] = (uint32_t{p[4 * i]} << 24) | (uint32_t{p[4 * i + 1]} << 16) | (uint32_t{p[4 * i + 2]} << 8) | p[4 * i + 3];
  for (int i = 16; i < 64; ++i) {
    uint32_t s0 = rotr(w[i - 15], 7) ^ rotr(w[i - 15], 18) ^ (w[i - 15] >> 3);
    uint32_t s1 = rotr(w[i - 2], 17) ^ rotr(w[i - 2], 19) ^ (w[i - 2] >> 10);
    w[i] = w[i - 16] + s0 + w[i - 7] + s1;
  }
  uint32_t a = h_[0], b = h_[1], c = h_[2], d = h_[3], e = h_[4], f = h_[5], g = h_[6], h = h_[7];
  for (int i = 0; i < 64; ++i) {
    uint32_t t1 = h + (rotr(e, 6) ^ rotr(e, 11) ^ rotr(e, 25)) + ((e & f) ^ (~e & g)) + kK[i] + w[i];
    uint32_t t2 = (rotr(a, 2) ^ rotr(a, 13) ^ rotr(a, 22)) + ((a & b) ^ (a & c) ^ (b & c));
    h = g;
    g = f;
    f = e;
    e = d + t1;
    d = c;
    c = b;
    b = a;
    a = t1 + t2;
  }
  h_[0] += a;
  h_[1] += b;
  h_[2] += c;
  h_[3] += d;
  h_[4] += e;
  h_[5] += f;
  h_[6] += g;
  h_[7] += h;
}


#if defined(__x86_64__)
// The same compression with the x86 SHA extensions (Intel SHA-NI, also on AMD Zen): about an order of
// magnitude fewer instructions, and HMAC over every control-plane frame is most of the coordinator's CPU.
// The state is kept as the instructions want it: ABEF and CDGH in two registers.
__attribute__((target("sha,sse4.1,ssse3"))) static void sha256BlockShaNi(uint32_t* h, const uint8_t* p) {
  const __m128i kSwap = _mm_set_epi64x(0x0c0d0e0f08090a0bLL, 0x0405060700010203LL);  // big-endian words
  __m128i tmp = _mm_shuffle_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(h)), 0xB1);  // BADC
  __m128i cdgh = _mm_shuffle_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(h + 4)), 0x1B);  // HGFE
  __m128i abef = _mm_alignr_epi8(tmp, cdgh, 8);
  cdgh = _mm_blend_epi16(cdgh, tmp, 0xF0);
  const __m128i abefIn = abef, cdghIn = cdgh;
  __m128i w[4];  // W[4i .. 4i+3] of the last four groups, ring-indexed by i mod 4
  for (int i = 0; i < 16; ++i) {
    __m128i m;
    if (i < 4) {
      m = _mm_shuffle_epi8(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p + 16 * i)), kSwap);
    } else {
      // W[t] = sigma1(W[t-2]) + W[t-7] + sigma0(W[t-15]) + W[t-16], four at a time (t = 4i).
      m = _mm_sha256msg1_epu32(w[i & 3], w[(i + 1) & 3]);
      m = _mm_add_epi32(m, _mm_alignr_epi8(w[(i + 3) & 3], w[(i + 2) & 3], 4));
      m = _mm_sha256msg2_epu32(m, w[(i + 3) & 3]);
    }
    w[i & 3] = m;
    __m128i wk = _mm_add_epi32(m, _mm_loadu_si128(reinterpret_cast<const __m128i*>(kK + 4 * i)));
    cdgh = _mm_sha256rnds2_epu32(cdgh, abef, wk);  // two rounds: cdgh now holds the new ABEF
    wk = _mm_shuffle_epi32(wk, 0x0E);
    abef = _mm_sha256rnds2_epu32(abef, cdgh, wk);  // two more: abef is ABEF again, cdgh CDGH
  }
  abef = _mm_add_epi32(abef, abefIn);
  cdgh = _mm_add_epi32(cdgh, cdghIn);
  tmp = _mm_shuffle_epi32(abef, 0x1B);   // FEBA -> ABEF lanes
  cdgh = _mm_shuffle_epi32(cdgh, 0xB1);  // GHCD
  _mm_storeu_si128(reinterpret_cast<__m128i*>(h), _mm_blend_epi16(tmp, cdgh, 0xF0));    // ABCD
  _mm_storeu_si128(reinterpret_cast<__m128i*>(h + 4), _mm_alignr_epi8(cdgh, tmp, 8));  // EFGH
}

static bool cpuHasShaNi() {
  unsigned a = 0, b = 0, c = 0, d = 0;
  if (__get_cpuid(1, &a, &b, &c, &d) == 0) return false;
  const bool ssse3 = (c & (1u << 9)) != 0, sse41 = (c & (1u << 19)) != 0;
  if (__get_cpuid_count(7, 0, &a, &b, &c, &d) == 0) return false;
  return ssse3 && sse41 && (b & (1u << 29)) != 0;
}
#endif

using BlockFn = void (*)(uint32_t*, const uint8_t*);
static std::atomic<BlockFn> gBlock{nullptr};  // chosen once; every thread chooses the same

static BlockFn chooseBlock() {
#if defined(__x86_64__)
  if (cpuHasShaNi()) return &sha256BlockShaNi;
#endif
  return &sha256BlockPortable;
}

void sha256Block(uint32_t* h, const uint8_t* p) {
  BlockFn f = gBlock.load(std::memory_order_relaxed);
  if (f == nullptr) {
    f = chooseBlock();
    gBlock.store(f, std::memory_order_relaxed);
  }
  f(h, p);
}

bool sha256Accelerated() { return chooseBlock() != &sha256BlockPortable; }

}  // namespace detail

Sha256::Sha256() : h_{0x6a09e667, 0xbb67ae85, 0x3c6ef372, 0xa54ff53a, 0x510e527f, 0x9b05688c, 0x1f83d9ab, 0x5be0cd19} {}

void Sha256::block(const uint8_t* p) { detail::sha256Block(h_, p); }

void Sha256::update(std::span<const uint8_t> data) {
  // An empty span may have a null data() (an empty vector's): memcpy from null is undefined even for 0 bytes.
  if (data.empty()) return;
  total_ += data.size();
  size_t i = 0;
  if (bufLen_ > 0) {
    size_t take = std::min(data.size(), 64 - bufLen_);
    std::memcpy(buf_ + bufLen_, data.data(), take);
    bufLen_ += take;
    i = take;
    if (bufLen_ < 64) return;
    block(buf_);
    bufLen_ = 0;
  }
  for (; i + 64 <= data.size(); i += 64) block(data.data() + i);
  std::memcpy(buf_, data.data() + i, data.size() - i);
  bufLen_ = data.size() - i;
}

Digest Sha256::finish() {
  uint64_t bits = total_ * 8;
  uint8_t pad[72] = {0x80};
  size_t padLen = (bufLen_ < 56) ? 56 - bufLen_ : 120 - bufLen_;
  for (int i = 0; i < 8; ++i) pad[padLen + i] = static_cast<uint8_t>(bits >> (56 - 8 * i));
  update({pad, padLen + 8});
  Digest out;
  for (int i = 0; i < 8; ++i)
    for (int j = 0; j < 4; ++j) out[4 * i + j] = static_cast<uint8_t>(h_[i] >> (24 - 8 * j));
  return out;
}

Digest sha256(std::span<const uint8_t> data) {
  Sha256 s;
  s.update(data);
  return s.finish();
}

HmacSha256Key::HmacSha256Key(std::span<const uint8_t> key) {
  uint8_t k[64] = {};
  if (key.size() > 64) {
    Digest d = sha256(key);
    std::memcpy(k, d.data(), d.size());
  } else if (!key.empty()) {
    std::memcpy(k, key.data(), key.size());
  }
  uint8_t ipad[64], opad[64];
  for (int i = 0; i < 64; ++i) {
    ipad[i] = k[i] ^ 0x36;
    opad[i] = k[i] ^ 0x5c;
  }
  inner_.update(ipad);
  outer_.update(opad);
}

Digest HmacSha256Key::mac(std::initializer_list<std::span<const uint8_t>> parts) const {
  Sha256 inner = inner_;
  for (auto p : parts) inner.update(p);
  Digest ih = inner.finish();
  Sha256 outer = outer_;
  outer.update(ih);
  return outer.finish();
}

Digest hmacSha256(std::span<const uint8_t> key, std::initializer_list<std::span<const uint8_t>> parts) {
  return HmacSha256Key(key).mac(parts);
}

bool digestsEqual(std::span<const uint8_t> a, std::span<const uint8_t> b) {
  if (a.size() != b.size()) return false;
  uint8_t diff = 0;
  for (size_t i = 0; i < a.size(); ++i) diff |= a[i] ^ b[i];
  return diff == 0;
}

}  // namespace wirewise::control
