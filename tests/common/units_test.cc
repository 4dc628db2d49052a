#include "common/units.h"

#include <gtest/gtest.h>

#include <cstdint>

namespace wirewise {
namespace {

constexpr uint64_t kKiB = 1024, kMiB = kKiB * 1024;

TEST(Units, HexIdIsSixteenLowercaseDigits) {
  EXPECT_EQ(hexId(0), "0x0000000000000000");
  EXPECT_EQ(hexId(0xBE7C4), "0x00000000000be7c4");
  EXPECT_EQ(hexId(UINT64_MAX), "0xffffffffffffffff");
}

TEST(Units, DurationsSwitchToMillisecondsAtOneThousand) {
  EXPECT_EQ(durationText(0), "0 µs");
  EXPECT_EQ(durationText(40), "40 µs");
  EXPECT_EQ(durationText(999.4), "999 µs");
  EXPECT_EQ(durationText(1000), "1.0 ms");
  EXPECT_EQ(durationText(2000), "2.0 ms");
  EXPECT_EQ(durationText(12345), "12.3 ms");
}

TEST(Units, SignedDurationsKeepTheirSign) {
  EXPECT_EQ(signedDurationText(37), "+37 µs");
  EXPECT_EQ(signedDurationText(19.4), "+19 µs");
  EXPECT_EQ(signedDurationText(-3.24), "-3.2 µs");
  EXPECT_EQ(signedDurationText(0), "+0.0 µs");
  EXPECT_EQ(signedDurationText(-10), "-10 µs");
  // Callers that carry the sign in words drop the first byte; the unit's multibyte µs survives that.
  EXPECT_EQ(signedDurationText(10).substr(1), "10 µs");
}

TEST(Units, ExactBytesNeverLookLikeAPowerOfTwoTheyAreNot) {
  EXPECT_EQ(bytesText(0), "0 B");
  EXPECT_EQ(bytesText(1023), "1023 B");
  EXPECT_EQ(bytesText(1024), "1 KiB");
  EXPECT_EQ(bytesText(65536), "64 KiB");
  EXPECT_EQ(bytesText(65535), "65535 B");
  EXPECT_EQ(bytesText(65537), "65537 B");
  EXPECT_EQ(bytesText(90000), "87.89 KiB");
  EXPECT_EQ(bytesText(3u << 19), "1.50 MiB");
  EXPECT_EQ(bytesText(uint64_t{1} << 30), "1 GiB");
  EXPECT_EQ(bytesText(uint64_t{1} << 62), "4 EiB");
  EXPECT_EQ(bytesText(UINT64_MAX - 1), "18446744073709551614 B");  // would round to "16.00 EiB"
  EXPECT_EQ(bytesText(UINT64_MAX), "max");
  EXPECT_EQ(bytesRangeText(0, 65535), "0 B-65535 B");
  EXPECT_EQ(bytesRangeText(64 * kKiB, UINT64_MAX), "64 KiB-max");
}

TEST(Units, RoughBytesRoundAsProseDoes) {
  EXPECT_EQ(roughBytesText(4096), "4 KiB");
  EXPECT_EQ(roughBytesText(25 * kMiB), "25 MiB");
  EXPECT_EQ(roughBytesText(1536), "1.5 KiB");
  EXPECT_EQ(roughBytesText(90000), "88 KiB");
  EXPECT_EQ(roughBytesText(512), "512 B");
  EXPECT_EQ(roughBytesText(1024.0 * 1024 * 1024 * 1024 * 2048), "2048 TiB");
}

TEST(Units, PercentagesGiveTheirMagnitude) {
  EXPECT_EQ(percentText(19.4), "19%");
  EXPECT_EQ(percentText(-19.6), "20%");
  EXPECT_EQ(percentText(9.5), "10%");
  EXPECT_EQ(finePercentText(9.54), "9.5%");
  EXPECT_EQ(finePercentText(-9.54), "9.5%");
  EXPECT_EQ(finePercentText(93.2), "93%");
}

TEST(Units, ParsesTypedSizes) {
  uint64_t v = 0;
  EXPECT_TRUE(parseBytes("25165824", &v));
  EXPECT_EQ(v, 25165824u);
  EXPECT_TRUE(parseBytes("24MiB", &v));
  EXPECT_EQ(v, 24 * kMiB);
  EXPECT_TRUE(parseBytes(" 24 mib ", &v));
  EXPECT_EQ(v, 24 * kMiB);
  EXPECT_TRUE(parseBytes("64K", &v));
  EXPECT_EQ(v, 64 * kKiB);
  EXPECT_TRUE(parseBytes("64kb", &v));
  EXPECT_EQ(v, 64 * kKiB);
  EXPECT_TRUE(parseBytes("2 G", &v));
  EXPECT_EQ(v, uint64_t{2} << 30);
  EXPECT_TRUE(parseBytes("1TiB", &v));
  EXPECT_EQ(v, uint64_t{1} << 40);
  EXPECT_TRUE(parseBytes("7 B", &v));
  EXPECT_EQ(v, 7u);
  EXPECT_TRUE(parseBytes("1.5 KiB", &v));
  EXPECT_EQ(v, 1536u);
  EXPECT_TRUE(parseBytes("18446744073709551615", &v));
  EXPECT_EQ(v, UINT64_MAX);
  v = 42;
  for (const char* bad : {"", "  ", "MiB", "12 parsecs", "1.2.3", ".", "99999999999999999999", "16777216 TiB",
                          "-1", "1 2", "1 KiBB", "1 bib", "1 P"}) {
    EXPECT_FALSE(parseBytes(bad, &v)) << bad;
    EXPECT_EQ(v, 42u) << bad;
  }
}

}  // namespace
}  // namespace wirewise
