// LinkNotes carry network latency (rails of the net plugin) through a boundary report: the RTT and its
// baseline survive the wire bit for bit, and a note that is cut short or carries a negative or infinite
// latency is refused whole.
#include <gtest/gtest.h>

#include <bit>
#include <cstring>
#include <limits>

#include "control/wire.h"

namespace wirewise::control {
namespace {

Report withRail() {
  Report r;
  r.commId = 0xabc, r.memberId = 7, r.index = 3, r.seq = 96, r.elapsedUs = 1200;
  r.links.push_back({"node1/mlx5_3:1", 1, 0.25f, 0.0f});
  adapt::LinkNote rail{"node2/rail:eth1", 1, 0.12f, 40.0f};
  rail.rttUs = 2137.5f;
  rail.baselineRttUs = 41.25f;
  r.links.push_back(rail);
  return r;
}

// A float as the wire carries it: its bits, big-endian.
void storeWire(float f, uint8_t* out) {
  const uint32_t bits = std::bit_cast<uint32_t>(f);
  for (int i = 0; i < 4; ++i) out[i] = static_cast<uint8_t>(bits >> (24 - 8 * i));
}

// Byte offset of the rail note's rttUs field in an encoded report: where its two latencies appear in a row.
size_t rttOffset(const std::vector<uint8_t>& bytes) {
  uint8_t pattern[8];
  storeWire(2137.5f, pattern);
  storeWire(41.25f, pattern + 4);
  for (size_t i = 0; i + 8 <= bytes.size(); ++i)
    if (std::memcmp(bytes.data() + i, pattern, 8) == 0) return i;
  ADD_FAILURE() << "latencies not found in the encoding";
  return 0;
}

TEST(LinkNoteWire, LatencyFieldsRoundTrip) {
  Report r = withRail();
  Report out;
  ASSERT_TRUE(decode(encode(r), &out));
  ASSERT_EQ(out.links.size(), 2u);
  EXPECT_EQ(out.links, r.links);
  EXPECT_FLOAT_EQ(out.links[1].rttUs, 2137.5f);
  EXPECT_FLOAT_EQ(out.links[1].baselineRttUs, 41.25f);
  EXPECT_FLOAT_EQ(out.links[0].rttUs, 0.0f);  // not measured stays "not measured"
}

TEST(LinkNoteWire, ATruncatedNoteIsRejected) {
  std::vector<uint8_t> bytes = encode(withRail());
  const size_t end = rttOffset(bytes) + 8;  // the note ends here
  for (size_t cut = 1; cut <= 8; ++cut) {
    Report out;
    EXPECT_FALSE(decode(std::span<const uint8_t>(bytes.data(), end - cut), &out)) << "cut " << cut;
  }
  // A note in the old 4-field layout (no latency) is short by 8 bytes per note: refused, not misread.
  Report one;
  one.links.push_back({"node1/eth0", 2, 1.0f, 0.0f});
  std::vector<uint8_t> b1 = encode(one);
  Report out;
  EXPECT_FALSE(decode(std::span<const uint8_t>(b1.data(), b1.size() - 8), &out));
}

TEST(LinkNoteWire, NegativeOrNonFiniteLatencyIsRejected) {
  const float bad[] = {-1.0f, std::numeric_limits<float>::infinity(), std::numeric_limits<float>::quiet_NaN()};
  for (float v : bad)
    for (size_t field = 0; field < 2; ++field) {
      std::vector<uint8_t> bytes = encode(withRail());
      storeWire(v, bytes.data() + rttOffset(bytes) + 4 * field);
      Report out;
      EXPECT_FALSE(decode(bytes, &out)) << "value " << v << " in field " << field;
    }
  // The same position with a sane value decodes, so the offset above is the field's.
  std::vector<uint8_t> bytes = encode(withRail());
  const float ok = 77.0f;
  storeWire(ok, bytes.data() + rttOffset(bytes));
  Report out;
  ASSERT_TRUE(decode(bytes, &out));
  EXPECT_FLOAT_EQ(out.links[1].rttUs, 77.0f);
}

}  // namespace
}  // namespace wirewise::control
