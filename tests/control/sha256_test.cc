// SHA-256 against FIPS 180-4 examples, HMAC-SHA-256 against RFC 4231 test cases.
#include "control/sha256.h"

#include <gtest/gtest.h>

#include <cstdio>
#include <random>
#include <string>
#include <vector>

namespace wirewise::control {
namespace {

std::string hexOf(const Digest& d) {
  static const char* k = "0123456789abcdef";
  std::string s;
  for (uint8_t b : d) {
    s += k[b >> 4];
    s += k[b & 15];
  }
  return s;
}
std::span<const uint8_t> bytes(const std::string& s) { return {reinterpret_cast<const uint8_t*>(s.data()), s.size()}; }

TEST(Sha256, FipsVectors) {
  EXPECT_EQ(hexOf(sha256(bytes(""))), "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
  EXPECT_EQ(hexOf(sha256(bytes("abc"))), "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
  EXPECT_EQ(hexOf(sha256(bytes("abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq"))),
            "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1");
  EXPECT_EQ(hexOf(sha256(bytes(std::string(1000000, 'a')))),
            "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0");
}

TEST(Sha256, IncrementalEqualsOneShotAtEverySplit) {
  std::string msg;
  for (int i = 0; i < 200; ++i) msg += static_cast<char>(i * 7);
  Digest whole = sha256(bytes(msg));
  for (size_t cut = 0; cut <= msg.size(); ++cut) {
    Sha256 s;
    s.update(std::string_view(msg).substr(0, cut));
    s.update(std::string_view(msg).substr(cut));
    ASSERT_EQ(s.finish(), whole) << cut;
  }
}

// The FIPS vectors above run whichever compression this CPU uses; this pins the other one to it: the x86
// SHA-extension path and the portable one agree on random states and blocks (on a CPU without the
// extensions both are the portable one, and the test says so).
TEST(Sha256, AcceleratedAndPortableCompressionsAgree) {
  std::printf("sha256: %s compression in use\n", detail::sha256Accelerated() ? "x86 SHA-extension" : "portable");
  std::mt19937_64 rng(42);
  for (int n = 0; n < 20000; ++n) {
    uint32_t a[8], b[8];
    uint8_t block[64];
    for (uint32_t& x : a) x = static_cast<uint32_t>(rng());
    for (uint8_t& x : block) x = static_cast<uint8_t>(rng());
    std::copy(a, a + 8, b);
    detail::sha256Block(a, block);
    detail::sha256BlockPortable(b, block);
    ASSERT_TRUE(std::equal(a, a + 8, b)) << "block " << n;
  }
}

TEST(HmacSha256, Rfc4231) {
  std::string key1(20, '\x0b');
  EXPECT_EQ(hexOf(hmacSha256(bytes(key1), {bytes("Hi There")})),
            "b0344c61d8db38535ca8afceaf0bf12b881dc200c9833da726e9376c2e32cff7");
  EXPECT_EQ(hexOf(hmacSha256(bytes("Jefe"), {bytes("what do ya want "), bytes("for nothing?")})),
            "5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843");
  std::string key6(131, '\xaa');  // longer than a block: hashed first
  EXPECT_EQ(hexOf(hmacSha256(bytes(key6), {bytes("Test Using Larger Than Block-Size Key - Hash Key First")})),
            "60e431591ee0b67f0d8a26aacbf5b77f8e0bc6213728c5140546040f0ee37f54");
}

TEST(HmacSha256, APrecomputedKeyMacsLikeTheOneShotEveryTime) {
  std::mt19937_64 rng(7);
  for (size_t keyLen : {0, 5, 32, 64, 65, 131}) {
    std::vector<uint8_t> key(keyLen);
    for (uint8_t& b : key) b = static_cast<uint8_t>(rng());
    const HmacSha256Key k(key);
    for (size_t len : {0, 1, 55, 56, 64, 119, 1000}) {
      std::vector<uint8_t> msg(len);
      for (uint8_t& b : msg) b = static_cast<uint8_t>(rng());
      const Digest once = hmacSha256(key, {msg});
      EXPECT_EQ(k.mac({msg}), once) << keyLen << " " << len;
      EXPECT_EQ(k.mac({msg}), once) << "a key is not changed by use";
    }
  }
}

TEST(HmacSha256, ConstantTimeCompare) {
  Digest a = sha256(bytes("x")), b = a;
  EXPECT_TRUE(digestsEqual(a, b));
  b[31] ^= 1;
  EXPECT_FALSE(digestsEqual(a, b));
  EXPECT_FALSE(digestsEqual(a, std::span<const uint8_t>(b.data(), 31)));
}

}  // namespace
}  // namespace wirewise::control
