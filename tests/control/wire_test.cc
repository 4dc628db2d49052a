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
  Propose p{1, 3, 640}, p2;
  ASSERT_TRUE(decode(encode(p), &p2));
  EXPECT_EQ(p, p2);
  Answer a{1, 2, 3, true, 77}, a2;
  ASSERT_TRUE(decode(encode(a), &a2));
  EXPECT_EQ(a, a2);
  // A proposal of "no boundary" is malformed: a member could never reach it.
  Propose never{1, 0, UINT64_MAX}, out;
  EXPECT_FALSE(decode(encode(never), &out));
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
  bad.rules[0].decision.chunkBytes = kMaxChunkBytes + 1;
  EXPECT_FALSE(decode(encode(bad), &out));
  bad.rules[0].decision.chunkBytes = kMaxChunkBytes;  // the largest a table may carry travels
  ASSERT_TRUE(decode(encode(bad), &out));
  EXPECT_EQ(out.rules[0].decision.chunkBytes, kMaxChunkBytes);
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
  bad[kMask + 6] = 0x08;  // channel 11 of 11 channels (big-endian: bits 8-15 are the mask's 7th byte)
  EXPECT_FALSE(decode(bad, &r2));
  bad = p;
  bad[kRatio] = 0, bad[kRatio + 1] = 0xff;  // slowest below the median
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

// ---- The field lists ----

// Random messages with every field in its range: a field that a list leaves out, or reads into the wrong
// member, fails the round trip.
struct Gen {
  std::mt19937_64 rng;
  explicit Gen(uint64_t seed) : rng(seed) {}
  uint64_t u64() { return rng(); }
  uint32_t u32() { return static_cast<uint32_t>(rng()); }
  int pick(int lo, int hi) { return lo + static_cast<int>(rng() % static_cast<uint64_t>(hi - lo + 1)); }
  float real(float lo, float hi) { return lo + (hi - lo) * static_cast<float>(rng() % 1000001) / 1e6f; }
  std::string text(size_t max) {
    std::string t(rng() % (max + 1), ' ');
    for (char& c : t) c = static_cast<char>(pick(0x20, 0x7e));
    return t;
  }
  int8_t i8(int lo, int hi) { return static_cast<int8_t>(pick(lo, hi)); }

  adapt::Sample sample() {
    adapt::Sample s;
    s.seqNumber = u64(), s.bytes = u64(), s.durationNs = u32();
    s.coll = i8(-1, kNumCollTypes - 1), s.algo = i8(-1, kNumAlgos - 1), s.proto = i8(-1, kNumProtos - 1);
    s.nChannels = static_cast<uint8_t>(pick(0, kMaxChannels));
    if (s.nChannels > 0 && rng() % 2 == 0) {  // a valid slow-channel summary
      s.slowChannels = (s.nChannels >= 64 ? u64() : u64() & ((uint64_t{1} << s.nChannels) - 1)) | 1;
      s.slowRatioQ8 = static_cast<uint16_t>(pick(256, 65535));
    }
    return s;
  }
  adapt::Sight sight() {
    adapt::Sight s;
    s.coll = i8(0, kNumCollTypes - 1);
    s.bucket = static_cast<uint8_t>(pick(0, SizeBuckets::kCount - 1));
    s.bytes = u64();
    for (auto& row : s.cost)
      for (float& f : row) f = real(-1.0f, 1e6f);
    return s;
  }
  adapt::LinkNote link() {
    adapt::LinkNote l{text(adapt::kMaxLinkName), static_cast<uint8_t>(pick(1, 2)), real(0, 1), real(0, 1e3f)};
    l.rttUs = real(0, 1e4f), l.baselineRttUs = real(0, 1e3f);
    return l;
  }
  Hello hello() {
    Hello h;
    for (uint8_t& b : h.nonce) b = static_cast<uint8_t>(rng());
    return h;
  }
  Join join() { return {u64(), u64(), u32() | 1, u32(), u64(), u64()}; }
  Leave leave() { return {u64(), u64()}; }
  Propose propose() { return {u64(), u64(), u64() >> 1}; }
  Answer answer() { return {u64(), u64(), u64(), pick(0, 1) == 1, u64()}; }
  Report report() {
    Report r{u64(), u64(), u64(), u64(), u64(), {}, {}, {}};
    for (int n = pick(0, 40); n > 0; --n) r.samples.push_back(sample());
    for (int n = pick(0, 4); n > 0; --n) r.sights.push_back(sight());
    for (int n = pick(0, static_cast<int>(kMaxReportLinks)); n > 0; --n) r.links.push_back(link());
    return r;
  }
  Verdict verdict() {
    Verdict v;
    v.commId = u64(), v.index = u64(), v.boundary = u64() >> 1;
    v.next = v.boundary + 1 + (u64() >> 2);
    v.observeOnly = rng() % 2 == 0;
    v.reason = text(kMaxReason);
    for (int n = pick(0, 30); n > 0; --n) {
      TableRule t;
      t.coll = pick(kAny, kNumCollTypes - 1);
      t.minBytes = u64() >> 1;
      t.maxBytes = t.minBytes + (u64() >> 2);
      t.decision = {i8(kAny, kNumAlgos - 1), i8(kAny, kNumProtos - 1), i8(0, kMaxChannels),
                    static_cast<uint32_t>(pick(0, 1) ? 0 : u64() % (kMaxChunkBytes + 1ull))};
      v.rules.push_back(t);
    }
    return v;
  }
};

template <class M>
void expectRoundTrip(const M& m) {
  const std::vector<uint8_t> p = encode(m);
  M out;
  ASSERT_TRUE(decode(p, &out));
  EXPECT_EQ(out, m);
  EXPECT_EQ(encode(out), p);
}

TEST(WireFields, EveryMessageRoundTripsThroughItsFieldList) {
  Gen g(19);
  for (int i = 0; i < 300; ++i) {
    SCOPED_TRACE(i);
    expectRoundTrip(g.hello());
    expectRoundTrip(g.join());
    expectRoundTrip(g.leave());
    expectRoundTrip(g.propose());
    expectRoundTrip(g.answer());
    expectRoundTrip(g.report());
    expectRoundTrip(g.verdict());
    // Reports: a batch, through the batcher and its field list.
    std::vector<Report> batch;
    ReportBatcher b;
    for (int n = g.pick(1, 5); n > 0; --n) {
      batch.push_back(g.report());
      b.add(batch.back());
    }
    std::vector<std::vector<uint8_t>> payloads = b.finish();
    ASSERT_EQ(payloads.size(), 1u);
    std::vector<Report> out;
    ASSERT_TRUE(decodeReports(payloads[0], &out));
    EXPECT_EQ(out, batch);
  }
}

// The sizer walks the same list as the writer: every message is built in a buffer of exactly its size
// (one allocation), and a size query encodes nothing.
TEST(WireFields, SizesComeFromTheFieldLists) {
  Gen g(3);
  for (int i = 0; i < 100; ++i) {
    const Report r = g.report();
    const std::vector<uint8_t> p = encode(r);
    EXPECT_EQ(encodedSize(r), p.size());
    EXPECT_EQ(p.capacity(), p.size());
    const Verdict v = g.verdict();
    EXPECT_EQ(encodedSize(v), encode(v).size());
  }
  // The sizes wire.h gives beside the caps: a sample 24 bytes (34 with its summary), a sight 94, a link
  // note at most 82.
  const size_t empty = encodedSize(Report{});
  Report one;
  one.samples.push_back(evidenceReport().samples[0]);
  EXPECT_EQ(encodedSize(one) - empty, 24u);
  one.samples[0].slowChannels = 1, one.samples[0].slowRatioQ8 = 300;
  EXPECT_EQ(encodedSize(one) - empty, 34u);
  one = {};
  one.sights.push_back(evidenceReport().sights[0]);
  EXPECT_EQ(encodedSize(one) - empty, 94u);
  one = {};
  one.links.push_back({std::string(100, 'x'), 1, 0.5f, 0.0f});
  EXPECT_EQ(encodedSize(one) - empty, 82u);
  // The caps cut what the writer sends, and the size says so.
  Report big = evidenceReport();
  big.samples.assign(kMaxReportSamples + 7, big.samples[0]);
  EXPECT_EQ(encodedSize(big), encode(big).size());
}

// The bytes are the spec's: big-endian integers, the frame header as wire.h gives it.
TEST(WireFields, IntegersAreBigEndian) {
  const Join j{0x0102030405060708, 0x1112131415161718, 0x21222324, 0x31323334, 0x4142434445464748,
               0x5152535455565758};
  const std::vector<uint8_t> want{0x01, 0x02, 0x03, 0x04, 0x05, 0x06, 0x07, 0x08, 0x11, 0x12, 0x13, 0x14,
                                  0x15, 0x16, 0x17, 0x18, 0x21, 0x22, 0x23, 0x24, 0x31, 0x32, 0x33, 0x34,
                                  0x41, 0x42, 0x43, 0x44, 0x45, 0x46, 0x47, 0x48, 0x51, 0x52, 0x53, 0x54,
                                  0x55, 0x56, 0x57, 0x58};
  EXPECT_EQ(encode(j), want);
  const std::vector<uint8_t> frame = encodeFrame(MsgType::Leave, 0x0a0b0c0d0e0f1011, encode(Leave{1, 2}), nullptr);
  const std::vector<uint8_t> head{0, 0, 0, 26, kWireVersion, 5, 0x0a, 0x0b, 0x0c, 0x0d, 0x0e, 0x0f, 0x10, 0x11};
  ASSERT_EQ(frame.size(), 4u + 26u);
  EXPECT_EQ(std::vector<uint8_t>(frame.begin(), frame.begin() + 14), head);
  EXPECT_EQ(frame[14 + 7], 1);  // Leave's commId, its lowest byte last
  // A float is its bits, big-endian: a link note's capacity of 1.0 is 3f 80 00 00 after name and state.
  Report r;
  r.links.push_back({"ab", 1, 1.0f, 0.0f});
  const std::vector<uint8_t> p = encode(r);
  const size_t cap = 5 * 8 + 4 + 4 + 4 + 1 + 2 + 1;
  EXPECT_EQ(std::vector<uint8_t>(p.begin() + cap, p.begin() + cap + 4), (std::vector<uint8_t>{0x3f, 0x80, 0, 0}));
}

bool decodes(MsgType t, std::span<const uint8_t> p) {
  switch (t) {
    case MsgType::Hello: {
      Hello m;
      return decode(p, &m);
    }
    case MsgType::Join: {
      Join m;
      return decode(p, &m);
    }
    case MsgType::Report: {
      Report m;
      return decode(p, &m);
    }
    case MsgType::Verdict: {
      Verdict m;
      return decode(p, &m);
    }
    case MsgType::Leave: {
      Leave m;
      return decode(p, &m);
    }
    case MsgType::Reports: {
      std::vector<Report> m;
      return decodeReports(p, &m);
    }
    case MsgType::Propose: {
      Propose m;
      return decode(p, &m);
    }
    case MsgType::Answer: {
      Answer m;
      return decode(p, &m);
    }
  }
  return false;
}

// A frame cut anywhere is never taken for a message: on the stream it waits for its rest, and with its
// length rewritten to claim the cut is whole it fails the frame checks, the MAC or the message's own.
TEST(WireFields, EveryTruncationOfAValidFrameIsRefused) {
  Report slow = evidenceReport();
  slow.samples[0].slowChannels = 0x88, slow.samples[0].slowRatioQ8 = 700;
  std::vector<std::pair<MsgType, std::vector<uint8_t>>> cases{
      {MsgType::Hello, encode(Gen(1).hello())},
      {MsgType::Join, encode(Join{1, 2, 16, 2, 0xabc, 7})},
      {MsgType::Report, encode(slow)},
      {MsgType::Verdict, encode(sampleVerdict())},
      {MsgType::Leave, encode(Leave{3, 4})},
      {MsgType::Propose, encode(Propose{5, 2, 640})},
      {MsgType::Answer, encode(Answer{5, 6, 2, true, 600})},
      {MsgType::Reports, packReports(std::vector<std::vector<uint8_t>>{encode(slow), encode(evidenceReport())})[0]}};
  const Pair keys;
  for (const auto& [type, payload] : cases) {
    SCOPED_TRACE(static_cast<int>(type));
    ASSERT_TRUE(decodes(type, payload));
    for (size_t n = 0; n < payload.size(); ++n)
      EXPECT_FALSE(decodes(type, std::span<const uint8_t>(payload.data(), n))) << n;
    const bool hello = type == MsgType::Hello;
    const std::vector<uint8_t> frame = hello ? encodeFrame(type, 0, payload, nullptr)
                                             : encodeFrame(type, 1, payload, &keys.keys.toServer);
    auto reader = [&] {
      FrameReader r;
      if (!hello) r.setKey(keys.keys.toServer);
      return r;
    };
    {
      FrameReader whole = reader();
      whole.append(frame);
      Frame f;
      ASSERT_EQ(whole.next(&f), WireError::None);
      ASSERT_TRUE(decodes(type, f.payload));
    }
    for (size_t n = 0; n < frame.size(); ++n) {
      Frame f;
      FrameReader waiting = reader();
      waiting.append(std::span<const uint8_t>(frame.data(), n));
      EXPECT_EQ(waiting.next(&f), WireError::NeedMore) << n;
      if (n < 4) continue;
      std::vector<uint8_t> cut(frame.begin(), frame.begin() + static_cast<std::ptrdiff_t>(n));
      const size_t len = n - 4;
      cut[0] = static_cast<uint8_t>(len >> 24), cut[1] = static_cast<uint8_t>(len >> 16);
      cut[2] = static_cast<uint8_t>(len >> 8), cut[3] = static_cast<uint8_t>(len);
      FrameReader claimed = reader();
      claimed.append(cut);
      const WireError e = claimed.next(&f);
      if (e == WireError::None) {
        EXPECT_TRUE(hello) << n;  // a keyed frame's cut fails its MAC or its size
        EXPECT_FALSE(decodes(type, f.payload)) << n;
      } else {
        EXPECT_NE(e, WireError::NeedMore) << n;
      }
    }
  }
}

// Version 2's layout, by hand: the same length and version bytes, then the counter and every field
// little-endian.
void le(std::vector<uint8_t>* out, uint64_t v, int n) {
  for (int i = 0; i < n; ++i) out->push_back(static_cast<uint8_t>(v >> (8 * i)));
}
std::vector<uint8_t> v2Frame(MsgType type, uint64_t counter, const std::vector<uint8_t>& payload, const Digest* key) {
  std::vector<uint8_t> f;
  const size_t len = kHeaderBytes + payload.size() + (key != nullptr ? kMacBytes : 0);
  for (int i = 3; i >= 0; --i) f.push_back(static_cast<uint8_t>(len >> (8 * i)));
  f.push_back(2);
  f.push_back(static_cast<uint8_t>(type));
  le(&f, counter, 8);
  f.insert(f.end(), payload.begin(), payload.end());
  if (key != nullptr) {
    const Digest mac = HmacSha256Key(*key).mac({std::span<const uint8_t>(f)});
    f.insert(f.end(), mac.begin(), mac.end());
  }
  return f;
}

TEST(WireFields, AVersion2PeerIsRefusedNotMisread) {
  Nonce nonce{};
  nonce[0] = 0x5a;
  FrameReader hello;
  hello.append(v2Frame(MsgType::Hello, 0, std::vector<uint8_t>(nonce.begin(), nonce.end()), nullptr));
  Frame f;
  EXPECT_EQ(hello.next(&f), WireError::BadVersion);
  EXPECT_EQ(hello.next(&f), WireError::BadVersion);  // sticky

  // A v2 member's Join under the right key (a v2 peer derives the same keys): refused by its version.
  std::vector<uint8_t> join;
  le(&join, 0xC0FFEE00, 8), le(&join, 42, 8), le(&join, 8, 4), le(&join, 1, 4), le(&join, 0, 8), le(&join, 0, 8);
  const Pair p;
  FrameReader keyed;
  keyed.setKey(p.keys.toServer);
  keyed.append(v2Frame(MsgType::Join, 1, join, &p.keys.toServer));
  EXPECT_EQ(keyed.next(&f), WireError::BadVersion);
  // What the version byte prevents: the same fields read in this version's order are other numbers.
  Join misread;
  ASSERT_TRUE(decode(join, &misread));
  EXPECT_NE(misread.commId, 0xC0FFEE00u);
  EXPECT_NE(misread.nRanks, 8u);
}

// Counts and lengths past their bounds are refused even when their bytes are all there.
TEST(WireFields, CountsAndLengthsPastTheirBoundsAreRefused) {
  auto patch32 = [](std::vector<uint8_t>* p, size_t at, uint32_t v) {
    for (int i = 0; i < 4; ++i) (*p)[at + static_cast<size_t>(i)] = static_cast<uint8_t>(v >> (24 - 8 * i));
  };
  Verdict v;
  // A reason of kMaxReason + 1 bytes (its length at 4 x 8 + 1).
  Verdict full = sampleVerdict();
  full.reason = std::string(kMaxReason, 'r');
  std::vector<uint8_t> p = encode(full);
  ASSERT_TRUE(decode(p, &v));
  patch32(&p, 33, kMaxReason + 1);
  p.insert(p.begin() + 37, 'r');
  EXPECT_FALSE(decode(p, &v));
  // kMaxRules + 1 rules (20 bytes each, after the count).
  full = sampleVerdict();
  full.rules.assign(kMaxRules, full.rules[0]);
  p = encode(full);
  ASSERT_TRUE(decode(p, &v));
  const size_t count = p.size() - 4 - 20 * kMaxRules;
  patch32(&p, count, kMaxRules + 1);
  const std::vector<uint8_t> rule(p.end() - 20, p.end());
  p.insert(p.end(), rule.begin(), rule.end());
  EXPECT_FALSE(decode(p, &v));
  // An observe-only flag other than 0 or 1.
  p = encode(sampleVerdict());
  p[32] = 2;
  EXPECT_FALSE(decode(p, &v));
  // kMaxReportLinks + 1 links, their bytes present (the count after 5 x 8 and two empty lists).
  Report r;
  r.links.assign(kMaxReportLinks, {"n/l", 1, 0.5f, 0.0f});
  p = encode(r);
  Report out;
  ASSERT_TRUE(decode(p, &out));
  const size_t note = (p.size() - 52) / kMaxReportLinks;
  patch32(&p, 48, kMaxReportLinks + 1);
  const std::vector<uint8_t> last(p.end() - static_cast<std::ptrdiff_t>(note), p.end());
  p.insert(p.end(), last.begin(), last.end());
  EXPECT_FALSE(decode(p, &out));
  // A report inside a batch whose length runs past the batch, or stops short of the report.
  std::vector<uint8_t> batch = packReports(std::vector<std::vector<uint8_t>>{encode(evidenceReport())})[0];
  std::vector<Report> reports;
  ASSERT_TRUE(decodeReports(batch, &reports));
  const uint32_t len = static_cast<uint32_t>(batch.size() - 8);
  for (uint32_t bad : {len + 1, len - 1, 0xffffffffu}) {
    std::vector<uint8_t> b = batch;
    patch32(&b, 4, bad);
    EXPECT_FALSE(decodeReports(b, &reports)) << bad;
  }
}

// A message decoded into one that held another keeps nothing of it (a summary left out reads as none).
TEST(WireFields, DecodingIntoAUsedMessageLeavesNothingBehind) {
  Report slow = evidenceReport(), plain = evidenceReport(), out;
  slow.samples[0].slowChannels = 0x88, slow.samples[0].slowRatioQ8 = 700;
  ASSERT_TRUE(decode(encode(slow), &out));
  ASSERT_EQ(out, slow);
  ASSERT_TRUE(decode(encode(plain), &out));
  EXPECT_EQ(out, plain);
}

// A connection's buffer with room takes a frame without reallocating (the verdict fan-out appends the
// same payload to every subscriber's buffer).
TEST(WireFields, AppendingIntoABufferWithRoomDoesNotReallocate) {
  const Pair p;
  const HmacSha256Key key(p.keys.toClient);
  const std::vector<uint8_t> payload = encode(sampleVerdict());
  std::vector<uint8_t> out;
  out.reserve(16 * 1024);
  const uint8_t* data = out.data();
  for (uint64_t c = 1; c <= 20; ++c) appendFrame(&out, MsgType::Verdict, c, payload, &key);
  EXPECT_EQ(out.data(), data);
  EXPECT_EQ(out.size(), 20 * (4 + kHeaderBytes + payload.size() + kMacBytes));
}

}  // namespace
}  // namespace wirewise::control
