// The wire protocol: round trips, and rejection of garbage, oversized, unknown-version, wrong-key,
// replayed and reordered frames.
#include "control/wire.h"

#include <gtest/gtest.h>

#include <limits>
#include <random>
#include <string>

namespace wirewise::control {
namespace {

std::span<const uint8_t> bytes(const std::string& s) { return {reinterpret_cast<const uint8_t*>(s.data()), s.size()}; }

Verdict sampleVerdict() {
  Verdict v{0xfeed, 3, 128, 136, false, "random-test", {}};
  v.rules.push_back({kAny, 0, 1023, {kAlgoRing, kProtoLL, 4}});
  v.rules.push_back({4, 1024, UINT64_MAX, {kAlgoTree, kAny, 0}});
  return v;
}

struct Pair {
  SessionKeys keys;
  FrameReader server;
  Pair() {
    Nonce s{}, c{};
    s[0] = 1;
    c[0] = 2;
    keys = deriveSessionKeys(bytes("job-key"), s, c);
    server.setKey(keys.toServer);
  }
};

TEST(Wire, MessagesRoundTrip) {
  Verdict v = sampleVerdict(), v2;
  ASSERT_TRUE(decode(encode(v), &v2));
  EXPECT_EQ(v, v2);
  Join j{1, 2, 16, 2, 0xabc, 7}, j2;
  ASSERT_TRUE(decode(encode(j), &j2));
  EXPECT_EQ(j2.commId, 1u);
  EXPECT_EQ(j2.nNodes, 2u);
  EXPECT_EQ(j2.nextVerdict, 7u);
  Report r{1, 2, 3, 4, 5, {}, {}, {}}, r2;
  ASSERT_TRUE(decode(encode(r), &r2));
  EXPECT_EQ(r2.elapsedUs, 5u);
}

Report evidenceReport() {
  Report r{1, 2, 3, 4, 5, {}, {}, {}};
  r.samples.push_back({17, 26214400, 412345, 4, 0, 2, 11});
  r.samples.push_back({18, 4096, 27000, 4, 0, 0, 16});
  adapt::Sight s;
  s.coll = 4;
  s.bucket = 61;
  s.bytes = 26214400;
  for (int a = 0; a < kNumAlgos; ++a)
    for (int p = 0; p < kNumProtos; ++p) s.cost[a][p] = a == 2 ? -1.0f : 100.0f + static_cast<float>(a * 3 + p);
  r.sights.push_back(s);
  r.links.push_back({"node1/mlx5_3:1", 1, 0.25f, 0.0f});
  r.links.push_back({"node1/gpu5:nvlink2", 2, 1.0f, 12.5f});
  return r;
}

TEST(Wire, ReportBatchesRoundTripAndSplitAtTheFrameLimit) {
  std::vector<std::vector<uint8_t>> enc;
  for (uint64_t m = 0; m < 40; ++m) {
    Report r = evidenceReport();
    r.memberId = m;
    enc.push_back(encode(r));
  }
  std::vector<std::vector<uint8_t>> packed = packReports(enc);
  ASSERT_EQ(packed.size(), 1u);
  std::vector<Report> out;
  ASSERT_TRUE(decodeReports(packed[0], &out));
  ASSERT_EQ(out.size(), 40u);
  for (uint64_t m = 0; m < 40; ++m) {
    Report want = evidenceReport();
    want.memberId = m;
    EXPECT_EQ(out[m].memberId, m);
    EXPECT_EQ(out[m].samples, want.samples);
    EXPECT_EQ(out[m].sights, want.sights);
    EXPECT_EQ(out[m].links, want.links);
  }
  // Full reports (2,000 samples, ~48 KiB each): one per frame, every frame within the limit.
  Report big = evidenceReport();
  big.samples.assign(kMaxReportSamples, big.samples[0]);
  std::vector<std::vector<uint8_t>> bigs(3, encode(big));
  bigs.push_back(enc[0]);
  packed = packReports(bigs);
  ASSERT_EQ(packed.size(), 3u);  // the small one rides with the last big one
  size_t total = 0;
  for (const auto& p : packed) {
    EXPECT_LE(encodeFrame(MsgType::Reports, 1, p, nullptr).size() + kMacBytes, 4 + kMaxFrameBytes);
    ASSERT_TRUE(decodeReports(p, &out));
    total += out.size();
  }
  EXPECT_EQ(total, 4u);
  // Every truncation, a trailing byte, an empty batch and a bad report inside are rejected.
  const std::vector<uint8_t> one = packReports(std::vector<std::vector<uint8_t>>(enc.begin(), enc.begin() + 2))[0];
  for (size_t n = 0; n < one.size(); ++n)
    EXPECT_FALSE(decodeReports(std::span<const uint8_t>(one.data(), n), &out)) << n;
  std::vector<uint8_t> trailing = one;
  trailing.push_back(0);
  EXPECT_FALSE(decodeReports(trailing, &out));
  EXPECT_FALSE(decodeReports(std::vector<uint8_t>{0, 0, 0, 0}, &out));
  std::vector<uint8_t> bad = one;
  bad[4 + 4 + 40] ^= 0x7f;  // the first report's sample count (after count, length and 5 u64 fields)
  EXPECT_FALSE(decodeReports(bad, &out));
}

// The client's batcher encodes reports straight into the payload: byte for byte what packReports makes
// of the same reports encoded one by one, including where a payload is split at the frame limit.
TEST(Wire, ReportBatcherMatchesPackReports) {
  Report big = evidenceReport();
  big.samples.assign(kMaxReportSamples, big.samples[0]);
  std::mt19937 rng(7);
  for (int trial = 0; trial < 20; ++trial) {
    std::vector<Report> reports;
    const int n = 1 + static_cast<int>(rng() % 60);
    for (int i = 0; i < n; ++i) {
      Report r = rng() % 8 == 0 ? big : rng() % 2 ? evidenceReport() : Report{9, 0, 4, 96, 1234, {}, {}, {}};
      r.memberId = static_cast<uint64_t>(i);
      reports.push_back(r);
    }
    std::vector<std::vector<uint8_t>> enc;
    ReportBatcher batcher;
    for (const Report& r : reports) {
      enc.push_back(encode(r));
      batcher.add(r);
    }
    std::vector<std::vector<uint8_t>> want = packReports(enc), got = batcher.finish();
    ASSERT_EQ(got, want) << trial;
    size_t total = 0;
    std::vector<Report> out;
    for (const auto& p : got) {
      EXPECT_LE(4 + kHeaderBytes + p.size() + kMacBytes, 4 + kMaxFrameBytes);
      ASSERT_TRUE(decodeReports(p, &out));
      for (const Report& r : out) EXPECT_EQ(r.memberId, total++);
    }
    EXPECT_EQ(total, reports.size());
    EXPECT_TRUE(batcher.finish().empty());  // finish() empties it
  }
}

// A connection appends its frames to one buffer: the same bytes as encoding each frame alone.
TEST(Wire, AppendedFramesEqualSingleFrames) {
  Pair p;
  const HmacSha256Key key(p.keys.toServer);
  std::vector<uint8_t> joined, want;
  for (uint64_t c = 1; c <= 50; ++c) {
    std::vector<uint8_t> payload = encode(Report{c, c, 0, 0, 0, {}, {}, {}});
    if (c % 5 == 0) payload = encode(evidenceReport());
    appendFrame(&joined, MsgType::Report, c, payload, &key);
    std::vector<uint8_t> one = encodeFrame(MsgType::Report, c, payload, &key);
    want.insert(want.end(), one.begin(), one.end());
  }
  ASSERT_EQ(joined, want);
  p.server.append(joined);
  Frame f;
  for (uint64_t c = 1; c <= 50; ++c) {
    ASSERT_EQ(p.server.next(&f), WireError::None) << c;
    EXPECT_EQ(f.counter, c);
  }
  EXPECT_EQ(p.server.next(&f), WireError::NeedMore);
}

TEST(Wire, ReportsCarryTheirEvidence) {
  Report r = evidenceReport(), r2;
  ASSERT_TRUE(decode(encode(r), &r2));
  EXPECT_EQ(r2.samples, r.samples);
  EXPECT_EQ(r2.sights, r.sights);
  EXPECT_EQ(r2.links, r.links);
  // Every truncation fails, and so does a trailing byte.
  auto p = encode(r);
  for (size_t n = 0; n < p.size(); ++n) EXPECT_FALSE(decode(std::span<const uint8_t>(p.data(), n), &r2)) << n;
  p.push_back(0);
  EXPECT_FALSE(decode(p, &r2));
  // Out-of-range fields are refused: an algorithm index NCCL does not have, a bucket past the grid, a
  // non-finite cost.
  Report bad = evidenceReport();
  bad.samples[0].algo = 7;
  EXPECT_FALSE(decode(encode(bad), &r2));
  bad = evidenceReport();
  bad.sights[0].bucket = SizeBuckets::kCount;
  EXPECT_FALSE(decode(encode(bad), &r2));
  bad = evidenceReport();
  bad.sights[0].cost[1][1] = std::numeric_limits<float>::infinity();
  EXPECT_FALSE(decode(encode(bad), &r2));
  bad = evidenceReport();
  bad.links[0].state = 0;  // only degraded (1) and down (2) travel
  EXPECT_FALSE(decode(encode(bad), &r2));
  bad = evidenceReport();
  bad.links[1].link = "node1/eth0\nforged log line";
  EXPECT_FALSE(decode(encode(bad), &r2));
}

TEST(Wire, ReportsBeyondTheCapsAreCutAndStillFitAFrame) {
  Report r = evidenceReport();
  r.samples.assign(kMaxReportSamples + 100, r.samples[0]);
  r.sights.assign(kMaxReportSights + 5, r.sights[0]);
  r.links.assign(kMaxReportLinks + 3, {std::string(200, 'x'), 1, 0.5f, 0.0f});
  auto p = encode(r);
  Report r2;
  ASSERT_TRUE(decode(p, &r2));
  EXPECT_EQ(r2.samples.size(), kMaxReportSamples);
  EXPECT_EQ(r2.sights.size(), kMaxReportSights);
  ASSERT_EQ(r2.links.size(), kMaxReportLinks);
  EXPECT_EQ(r2.links[0].link.size(), adapt::kMaxLinkName);
  EXPECT_LE(p.size() + kHeaderBytes + kMacBytes + 4, kMaxFrameBytes);
}

TEST(Wire, DecodersRejectEveryTruncationAndTrailingByte) {
  auto p = encode(sampleVerdict());
  Verdict v;
  for (size_t n = 0; n < p.size(); ++n) EXPECT_FALSE(decode(std::span<const uint8_t>(p.data(), n), &v)) << n;
  p.push_back(0);
  EXPECT_FALSE(decode(p, &v));
}

TEST(Wire, DecoderRejectsOutOfRangeFields) {
  Verdict bad = sampleVerdict(), out;
  bad.rules[0].decision.algo = 9;
  EXPECT_FALSE(decode(encode(bad), &out));
  bad = sampleVerdict();
  bad.next = bad.boundary;  // boundaries must increase
  EXPECT_FALSE(decode(encode(bad), &out));
  bad = sampleVerdict();
  bad.reason = "bad\nreason";
  EXPECT_FALSE(decode(encode(bad), &out));
  Join j{1, 2, 0, 1, 0, 0}, j2;  // zero ranks
  EXPECT_FALSE(decode(encode(j), &j2));
}

TEST(Wire, AuthenticatedFramesPassInOrderAcrossArbitrarySplits) {
  Pair p;
  std::vector<uint8_t> stream;
  for (uint64_t c = 1; c <= 5; ++c) {
    auto f = encodeFrame(MsgType::Report, c, encode(Report{c, 0, 0, 0, 0, {}, {}, {}}), &p.keys.toServer);
    stream.insert(stream.end(), f.begin(), f.end());
  }
  int got = 0;
  for (size_t i = 0; i < stream.size(); i += 7) {
    p.server.append(std::span<const uint8_t>(stream).subspan(i, std::min<size_t>(7, stream.size() - i)));
    Frame f;
    WireError e;
    while ((e = p.server.next(&f)) == WireError::None) {
      Report r;
      ASSERT_TRUE(decode(f.payload, &r));
      EXPECT_EQ(r.commId, static_cast<uint64_t>(++got));
    }
    ASSERT_EQ(e, WireError::NeedMore);
  }
  EXPECT_EQ(got, 5);
}

TEST(Wire, WrongKeyIsRejected) {
  Pair p;
  Nonce s{}, c{};
  SessionKeys other = deriveSessionKeys(bytes("another-job"), s, c);
  p.server.append(encodeFrame(MsgType::Join, 1, encode(Join{1, 1, 1, 1, 0, 0}), &other.toServer));
  Frame f;
  EXPECT_EQ(p.server.next(&f), WireError::BadMac);
  EXPECT_EQ(p.server.next(&f), WireError::BadMac);  // sticky
}

TEST(Wire, ReflectedFrameIsRejected) {
  Pair p;  // a coordinator's own frame sent back to it: the other direction's key
  p.server.append(encodeFrame(MsgType::Verdict, 1, encode(sampleVerdict()), &p.keys.toClient));
  Frame f;
  EXPECT_EQ(p.server.next(&f), WireError::BadMac);
}

TEST(Wire, ReplayedAndReorderedFramesAreRejected) {
  Pair p;
  auto f1 = encodeFrame(MsgType::Report, 1, encode(Report{}), &p.keys.toServer);
  p.server.append(f1);
  Frame f;
  ASSERT_EQ(p.server.next(&f), WireError::None);
  p.server.append(f1);
  EXPECT_EQ(p.server.next(&f), WireError::Replayed);

  Pair q;
  q.server.append(encodeFrame(MsgType::Report, 2, encode(Report{}), &q.keys.toServer));
  EXPECT_EQ(q.server.next(&f), WireError::Replayed);  // skipped counter 1
}

TEST(Wire, FrameFromAnotherConnectionFailsAuthentication) {
  Pair p;
  Nonce s{}, c{};
  s[0] = 9;  // another connection: other nonces, same job key
  SessionKeys k2 = deriveSessionKeys(bytes("job-key"), s, c);
  p.server.append(encodeFrame(MsgType::Report, 1, encode(Report{}), &k2.toServer));
  Frame f;
  EXPECT_EQ(p.server.next(&f), WireError::BadMac);
}

TEST(Wire, OversizedLengthIsRejectedBeforeItsBodyArrives) {
  FrameReader r;
  uint8_t hdr[4] = {0x00, 0x10, 0x00, 0x01};  // 1 MiB + 1
  r.append(hdr);
  Frame f;
  EXPECT_EQ(r.next(&f), WireError::Oversized);
  FrameReader tiny;
  uint8_t small[5] = {0, 0, 0, 1, 1};
  tiny.append(small);
  EXPECT_EQ(tiny.next(&f), WireError::Undersized);
}

TEST(Wire, UnknownVersionAndTypeAreRejected) {
  auto h = encodeFrame(MsgType::Hello, 0, encode(Hello{}), nullptr);
  auto v = h;
  v[4] = kWireVersion + 1;
  FrameReader r1;
  r1.append(v);
  Frame f;
  EXPECT_EQ(r1.next(&f), WireError::BadVersion);
  v[4] = kWireVersion - 1;  // an older build's frame
  r1 = FrameReader();
  r1.append(v);
  EXPECT_EQ(r1.next(&f), WireError::BadVersion);
  auto t = h;
  t[5] = 77;
  FrameReader r2;
  r2.append(t);
  EXPECT_EQ(r2.next(&f), WireError::BadType);
  // Before the handshake only Hello; after it never Hello.
  FrameReader r3;
  r3.append(encodeFrame(MsgType::Join, 0, encode(Join{}), nullptr));
  EXPECT_EQ(r3.next(&f), WireError::BadType);
  Pair p;
  p.server.append(h);
  EXPECT_EQ(p.server.next(&f), WireError::Undersized);  // too short to carry a MAC
}

TEST(Wire, RandomGarbageNeverPassesAuthentication) {
  std::mt19937_64 rng(42);
  int accepted = 0;
  for (int i = 0; i < 2000; ++i) {
    Pair p;
    std::vector<uint8_t> junk(46 + rng() % 200);
    for (auto& b : junk) b = static_cast<uint8_t>(rng());
    // A well-formed header (length, version, a member's type), so that only the MAC can stop it.
    size_t len = junk.size() - 4;
    junk[0] = 0, junk[1] = 0, junk[2] = static_cast<uint8_t>(len >> 8), junk[3] = static_cast<uint8_t>(len);
    junk[4] = kWireVersion;
    junk[5] = static_cast<uint8_t>(2 + rng() % 4);
    p.server.append(junk);
    Frame f;
    WireError e = p.server.next(&f);
    if (e == WireError::None) ++accepted;
    ASSERT_EQ(e, WireError::BadMac);
  }
  EXPECT_EQ(accepted, 0);
}


// The profiler's slow-channel summary rides in the sample's channel byte (top bit) plus 10 bytes.
TEST(Wire, SlowChannelSummariesRoundTrip) {
  Report r = evidenceReport(), r2;
  r.samples[0].slowChannels = (uint64_t{1} << 3) | (uint64_t{1} << 7);  // of 11 channels
  r.samples[0].slowRatioQ8 = 983;                                        // 3.84x
  ASSERT_TRUE(decode(encode(r), &r2));
  EXPECT_EQ(r2.samples, r.samples);
  EXPECT_EQ(r2.samples[1].slowChannels, 0u);
  auto p = encode(r);
  EXPECT_EQ(p.size(), encode(evidenceReport()).size() + 10);
  for (size_t n = 0; n < p.size(); ++n) EXPECT_FALSE(decode(std::span<const uint8_t>(p.data(), n), &r2)) << n;
  // Corrupt summaries are refused: first sample's channel byte at 40 + 4 + 8 + 8 + 4 + 3, then mask, ratio.
  constexpr size_t kCh = 67, kMask = 68, kRatio = 76;
  ASSERT_EQ(p[kCh], 11 | kSlowSummaryFlag);
  auto bad = p;
  for (size_t i = kMask; i < kMask + 8; ++i) bad[i] = 0;  // flagged, but no channel named
  EXPECT_FALSE(decode(bad, &r2));
  bad = p;
  bad[kMask + 1] = 0x08;  // channel 11 of 11 channels
  EXPECT_FALSE(decode(bad, &r2));
  bad = p;
  bad[kRatio] = 0xff, bad[kRatio + 1] = 0;  // slowest below the median
  EXPECT_FALSE(decode(bad, &r2));
  // The encoder leaves out a summary decode would refuse, not the report.
  Report odd = evidenceReport();
  odd.samples[0].slowChannels = uint64_t{1} << 40;  // of 11 channels
  odd.samples[0].slowRatioQ8 = 600;
  ASSERT_TRUE(decode(encode(odd), &r2));
  EXPECT_EQ(r2.samples[0].slowChannels, 0u);
  EXPECT_EQ(r2.samples[0].slowRatioQ8, 0u);
  // A full report with a summary on every sample: only the first kMaxReportSlowSamples keep theirs, and
  // the frame stays within the limit.
  Report big = r;
  big.samples.assign(kMaxReportSamples, r.samples[0]);
  ASSERT_TRUE(decode(encode(big), &r2));
  size_t summarised = 0;
  for (const adapt::Sample& s : r2.samples) summarised += s.slowChannels != 0;
  EXPECT_EQ(summarised, kMaxReportSlowSamples);
  EXPECT_EQ(r2.samples.front(), r.samples[0]);
  EXPECT_EQ(r2.samples.back().slowChannels, 0u);
  const std::vector<std::vector<uint8_t>> one{encode(big)};
  EXPECT_LE(encodeFrame(MsgType::Reports, 1, packReports(one)[0], nullptr).size() + kMacBytes, 4 + kMaxFrameBytes);
}

}  // namespace
}  // namespace wirewise::control
