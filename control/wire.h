// The control-plane wire protocol. This header is its specification: the frame below, and each message's
// field list (its fields() template), which the one writer and the one reader in wire.cc both walk.
//
// Byte order: every integer of more than one byte — the frame length, the counter and every message
// field — is big-endian (network order). A float travels as its IEEE-754 binary32 bits, as a u32.
//
// Frame:
//   u32 length (bytes after this field; kHeaderBytes (+ kMacBytes once keyed) .. kMaxFrameBytes)
//   u8 version (kWireVersion) | u8 type (MsgType) | u64 counter | payload | 32-byte HMAC-SHA-256
// The two Hello frames that open a connection carry each side's random nonce and no MAC. Every later
// frame is authenticated with a per-connection, per-direction key derived from the job key and both
// nonces, and its counter must be exactly one more than the previous frame's: a frame recorded on another
// connection fails the MAC, a frame replayed on the same one fails the counter. A decoding error is
// final for the connection (the peer is dropped and the error logged); it never reaches a communicator.
//
// Payload: the message's fields in the order its field list visits them, with nothing between or after
// them. The kinds of field a list is made of (V is the visitor: the writer, its sizer or the reader):
//   u8(x) u16(x) u32(x) u64(x)  an unsigned integer of 1, 2, 4 or 8 bytes
//   u8(x, lo, hi)               one byte; the reader refuses a value outside [lo, hi]
//   i8(x, lo, hi)               a signed integer in one byte (two's complement), refused outside [lo, hi]
//   flag(b)                     one byte, 0 or 1
//   f32(x, real)                binary32 bits; refused unless finite, and for Real::NonNegative unless >= 0
//   bytes(a)                    a fixed-size byte array, as it is
//   text(s, max, len)           the length (one byte for Len::u8, four for Len::u32), then that many bytes of
//                               printable ASCII (they go into logs); the writer cuts a longer string to
//                               max, the reader refuses a longer or non-printable one
//   list(v, max, elem)          u32 count, then that many elements; the writer sends the first max, the
//                               reader refuses a count above max
//   sized(m)                    u32 length, then m's fields in exactly that many bytes
//   flagged(x, bit, on)         one byte: x with `bit` set when `on` (optional fields follow); the reader
//                               splits them again
//   require(cond)               no bytes: the reader refuses the message when cond fails on what it read
// A decoder checks every byte: a truncation, a trailing byte, a count or length past its bound or a field
// out of range is a malformed message (decode returns false and the peer is dropped as malformed), never
// a partial or out-of-bounds read. Each value has one encoding: what decodes re-encodes to the same bytes
// (tests/control/fuzz_wire.cc checks it).
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "adaptive/decision_table.h"
#include "adaptive/evidence_types.h"
#include "control/sha256.h"

namespace wirewise::control {

// 5: a table rule carries a chunk size (u32 bytes, 0 = NCCL's; tuner v6's getChunkSize).
// 4: production mode proposes boundary B0 (Propose) and each member answers (Answer) before anyone waits.
// 3: one byte order (big-endian) for the frame and every field. 2: reports carry per-channel slow-channel
// summaries and link notes carry RTTs. A peer of another version is refused with BadVersion (logged),
// never misread: every version keeps the length (big-endian) and the version byte where they are.
inline constexpr uint8_t kWireVersion = 5;
inline constexpr size_t kMaxFrameBytes = 64 * 1024;  // a verdict of 2,000 rules (24 bytes each) still fits
inline constexpr size_t kNonceBytes = 16;
inline constexpr size_t kMacBytes = 32;
inline constexpr size_t kHeaderBytes = 1 + 1 + 8;  // version, type, counter

enum class MsgType : uint8_t {
  Hello = 1,
  Join = 2,
  Report = 3,
  Verdict = 4,
  Leave = 5,
  Reports = 6,
  Propose = 7,
  Answer = 8
};

enum class WireError : uint8_t {
  None,
  NeedMore,
  Oversized,
  Undersized,
  BadVersion,
  BadType,
  BadMac,
  Replayed,
  Malformed
};
const char* wireErrorName(WireError e);

using Nonce = std::array<uint8_t, kNonceBytes>;

// Direction keys for one connection: toServer authenticates client frames, toClient the coordinator's.
struct SessionKeys {
  Digest toServer, toClient;
};
SessionKeys deriveSessionKeys(std::span<const uint8_t> jobKey, const Nonce& serverNonce, const Nonce& clientNonce);

struct Frame {
  MsgType type = MsgType::Hello;
  uint64_t counter = 0;
  std::vector<uint8_t> payload;
};

// The frame's fields after its length, as a field list like the messages'.
struct FrameHeader {
  uint8_t version = kWireVersion;
  uint8_t type = 0;
  uint64_t counter = 0;
  template <class V, class Self>
  static void fields(V& v, Self& h) {
    v.u8(h.version);
    v.u8(h.type);
    v.u64(h.counter);
  }
};

// Encodes one frame. key == nullptr: an unauthenticated Hello.
std::vector<uint8_t> encodeFrame(MsgType type, uint64_t counter, std::span<const uint8_t> payload,
                                 const HmacSha256Key* key);
std::vector<uint8_t> encodeFrame(MsgType type, uint64_t counter, std::span<const uint8_t> payload, const Digest* key);
inline std::vector<uint8_t> encodeFrame(MsgType type, uint64_t counter, std::span<const uint8_t> payload,
                                        std::nullptr_t) {
  return encodeFrame(type, counter, payload, static_cast<const HmacSha256Key*>(nullptr));
}

// Appends one frame to *out (what encodeFrame returns), reusing its capacity: a connection queues its
// frames in one buffer that it keeps, and a frame that fits allocates nothing.
void appendFrame(std::vector<uint8_t>* out, MsgType type, uint64_t counter, std::span<const uint8_t> payload,
                 const HmacSha256Key* key);

// Splits a byte stream into frames and checks them. Feed bytes with append(), then call next() until it
// returns NeedMore. Any other error is sticky: the connection must be closed.
class FrameReader {
 public:
  void append(std::span<const uint8_t> bytes);
  // Before setKey() only Hello frames are accepted; after it only authenticated non-Hello frames.
  void setKey(const Digest& key) { key_.emplace(key); }
  WireError next(Frame* out);
  size_t buffered() const { return buf_.size() - pos_; }

 private:
  std::vector<uint8_t> buf_;
  size_t pos_ = 0;
  std::optional<HmacSha256Key> key_;
  uint64_t lastCounter_ = 0;
  WireError sticky_ = WireError::None;
};

// ---- Field kinds' parameters ----

enum class Len : uint8_t { u8 = 1, u32 = 4 };  // the width of a text's length
enum class Real : uint8_t { Finite, NonNegative };  // NonNegative: finite and >= 0

// ---- Messages ----

inline constexpr size_t kMaxReportLinks = 16;      // <= 82 bytes each
inline constexpr size_t kMaxReportSamples = 2000;  // 24 bytes each
// Samples whose slow-channel summary travels (10 bytes more each; flagged by kSlowSummaryFlag in the
// channel byte); the others' summaries are left out. 512 x 10 bytes keeps a full report under
// kMaxFrameBytes.
inline constexpr size_t kMaxReportSlowSamples = 512;
inline constexpr uint8_t kSlowSummaryFlag = 0x80;
inline constexpr size_t kMaxReportSights = 64;  // 94 bytes each; with the samples well under kMaxFrameBytes
inline constexpr size_t kMaxRules = 2000;
inline constexpr size_t kMaxReason = 256;

// A summary names only channels the collective ran, and its slowest is at least 1.2x the median (>= 1.0
// in Q8). The writer leaves out one that fails this (a bad summary must not cost the whole report); the
// reader refuses it.
constexpr bool slowSummaryValid(const adapt::Sample& s) {
  return s.slowChannels != 0 && s.nChannels > 0 && s.nChannels <= kMaxChannels &&
         (s.nChannels >= 64 || (s.slowChannels >> s.nChannels) == 0) && s.slowRatioQ8 >= 256;
}

// slowLeft: the summaries the report may still carry (kMaxReportSlowSamples at its first sample), so that
// a full report stays within kMaxFrameBytes.
template <class V, class S>
void sampleFields(V& v, S& s, size_t& slowLeft) {
  v.u64(s.seqNumber);
  v.u64(s.bytes);
  v.u32(s.durationNs);
  v.i8(s.coll, -1, kNumCollTypes - 1);
  v.i8(s.algo, -1, kNumAlgos - 1);
  v.i8(s.proto, -1, kNumProtos - 1);
  // What the writer sends; the reader learns it from the flag.
  bool slow = slowSummaryValid(s) && slowLeft > 0;
  v.flagged(s.nChannels, kSlowSummaryFlag, slow);
  v.require(s.nChannels <= kMaxChannels);
  if (!slow) return;
  v.require(slowLeft > 0);
  if (slowLeft > 0) --slowLeft;
  v.u64(s.slowChannels);
  v.u16(s.slowRatioQ8);
  v.require(slowSummaryValid(s));
}

// NCCL's costs may be negative (a disabled entry), never non-finite.
template <class V, class S>
void sightFields(V& v, S& s) {
  v.i8(s.coll, 0, kNumCollTypes - 1);
  v.u8(s.bucket, 0, SizeBuckets::kCount - 1);
  v.u64(s.bytes);
  for (auto& row : s.cost)
    for (auto& f : row) v.f32(f, Real::Finite);
}

// Only unhealthy links travel: degraded (1) or down (2). Latencies go into the policy's explanations, so
// a negative one is a broken peer.
template <class V, class L>
void linkNoteFields(V& v, L& l) {
  v.text(l.link, adapt::kMaxLinkName, Len::u8);
  v.u8(l.state, 1, 2);
  v.f32(l.capacityRatio, Real::Finite);
  v.f32(l.errorsPerSec, Real::Finite);
  v.f32(l.rttUs, Real::NonNegative);
  v.f32(l.baselineRttUs, Real::NonNegative);
}

template <class V, class R>
void tableRuleFields(V& v, R& t) {
  v.i8(t.coll, kAny, kNumCollTypes - 1);
  v.u64(t.minBytes);
  v.u64(t.maxBytes);
  v.i8(t.decision.algo, kAny, kNumAlgos - 1);
  v.i8(t.decision.proto, kAny, kNumProtos - 1);
  v.i8(t.decision.nChannels, 0, kMaxChannels);
  v.u32(t.decision.chunkBytes);
  v.require(t.minBytes <= t.maxBytes && t.decision.chunkBytes <= kMaxChunkBytes);
}

struct Hello {
  Nonce nonce{};
  template <class V, class Self>
  static void fields(V& v, Self& m) {
    v.bytes(m.nonce);
  }
  friend bool operator==(const Hello&, const Hello&) = default;
};
struct Join {
  uint64_t commId = 0, memberId = 0;
  uint32_t nRanks = 0, nNodes = 0;
  uint64_t configDigest = 0;  // digest of the member's own static table for this comm
  uint64_t nextVerdict = 0;   // the first verdict index it still lacks (resync after a reconnect)
  template <class V, class Self>
  static void fields(V& v, Self& m) {
    v.u64(m.commId);
    v.u64(m.memberId);
    v.u32(m.nRanks);
    v.u32(m.nNodes);
    v.u64(m.configDigest);
    v.u64(m.nextVerdict);
    v.require(m.nRanks > 0);
  }
  friend bool operator==(const Join&, const Join&) = default;
};
struct Report {
  uint64_t commId = 0, memberId = 0;
  uint64_t index = 0;      // it passed boundary B_index
  uint64_t seq = 0;        // == B_index
  uint64_t elapsedUs = 0;  // wall time since it passed the previous boundary (its collective rate)
  // Evidence for the policy: collectives completed since the previous report (at most kMaxReportSamples,
  // the rest follow in later reports) and NCCL's cost tables first seen since then.
  std::vector<adapt::Sample> samples;
  std::vector<adapt::Sight> sights;
  std::vector<adapt::LinkNote> links;  // this host's unhealthy links now (at most kMaxReportLinks)
  template <class V, class Self>
  static void fields(V& v, Self& m) {
    v.u64(m.commId);
    v.u64(m.memberId);
    v.u64(m.index);
    v.u64(m.seq);
    v.u64(m.elapsedUs);
    size_t slowLeft = kMaxReportSlowSamples;
    v.list(m.samples, kMaxReportSamples, [&](auto& s) { sampleFields(v, s, slowLeft); });
    v.list(m.sights, kMaxReportSights, [&](auto& s) { sightFields(v, s); });
    v.list(m.links, kMaxReportLinks, [&](auto& l) { linkNoteFields(v, l); });
  }
  friend bool operator==(const Report&, const Report&) = default;
};
struct Verdict {
  uint64_t commId = 0;
  uint64_t index = 0;     // k: the table for [B_k, B_k+1)
  uint64_t boundary = 0;  // B_k
  uint64_t next = 0;      // B_k+1; UINT64_MAX: no further boundary
  bool observeOnly = false;
  std::string reason;
  std::vector<TableRule> rules;
  template <class V, class Self>
  static void fields(V& v, Self& m) {
    v.u64(m.commId);
    v.u64(m.index);
    v.u64(m.boundary);
    v.u64(m.next);
    v.require(m.next > m.boundary);
    v.flag(m.observeOnly);
    v.text(m.reason, kMaxReason, Len::u32);
    v.list(m.rules, kMaxRules, [&](auto& t) { tableRuleFields(v, t); });
  }
  friend bool operator==(const Verdict&, const Verdict&) = default;
};
// Production mode (docs/control-plane.md, "No wait on membership"): once all nRanks members have joined, the
// coordinator proposes the collective at which verdict 0 takes effect. A member accepts only while its own
// collective count is still at or below it, and from then on waits there for the verdict; a refusal names
// how far the member is, and a later proposal replaces this one (for those that accepted it too).
struct Propose {
  uint64_t commId = 0;
  uint64_t proposal = 0;  // numbers this comm's proposals, 0, 1, 2, ...; an answer names the one it answers
  uint64_t boundary = 0;  // the proposed B0
  template <class V, class Self>
  static void fields(V& v, Self& m) {
    v.u64(m.commId);
    v.u64(m.proposal);
    v.u64(m.boundary);
    v.require(m.boundary < UINT64_MAX);
  }
  friend bool operator==(const Propose&, const Propose&) = default;
};
struct Answer {
  uint64_t commId = 0, memberId = 0;
  uint64_t proposal = 0;
  bool accepted = false;
  uint64_t calls = 0;  // collectives the member had started when it answered (a refusal's "how far")
  template <class V, class Self>
  static void fields(V& v, Self& m) {
    v.u64(m.commId);
    v.u64(m.memberId);
    v.u64(m.proposal);
    v.flag(m.accepted);
    v.u64(m.calls);
  }
  friend bool operator==(const Answer&, const Answer&) = default;
};
struct Leave {
  uint64_t commId = 0, memberId = 0;
  template <class V, class Self>
  static void fields(V& v, Self& m) {
    v.u64(m.commId);
    v.u64(m.memberId);
  }
  friend bool operator==(const Leave&, const Leave&) = default;
};

// Reports: several members' reports in one frame (one MAC, one write), as a process's members pass a
// boundary together; a decoder accepts a batch only if every report in it decodes.
inline constexpr size_t kMaxBatchReports = 4096;
template <class V, class Batch>
void reportsFields(V& v, Batch& reports) {
  v.list(reports, kMaxBatchReports, [&](auto& r) { v.sized(r); });
  v.require(!reports.empty());
}

std::vector<uint8_t> encode(const Hello& m);
std::vector<uint8_t> encode(const Join& m);
std::vector<uint8_t> encode(const Report& m);
std::vector<uint8_t> encode(const Verdict& m);
std::vector<uint8_t> encode(const Leave& m);
std::vector<uint8_t> encode(const Propose& m);
std::vector<uint8_t> encode(const Answer& m);
// Each decoder checks every byte: false on any truncation, trailing byte or out-of-range field.
bool decode(std::span<const uint8_t> p, Hello* m);
bool decode(std::span<const uint8_t> p, Join* m);
bool decode(std::span<const uint8_t> p, Report* m);
bool decode(std::span<const uint8_t> p, Verdict* m);
bool decode(std::span<const uint8_t> p, Leave* m);
bool decode(std::span<const uint8_t> p, Propose* m);
bool decode(std::span<const uint8_t> p, Answer* m);
bool decodeReports(std::span<const uint8_t> p, std::vector<Report>* out);

// The bytes encode(m) returns, counted by walking m's field list (nothing is encoded).
size_t encodedSize(const Report& m);
size_t encodedSize(const Verdict& m);

// packReports groups encoded Report payloads into as few Reports payloads as fit a frame.
std::vector<std::vector<uint8_t>> packReports(std::span<const std::vector<uint8_t>> encodedReports);

// The same payloads as packReports, built report by report straight into the payload (no buffer per
// report): a client encodes the reports of all its members at every boundary.
class ReportBatcher {
 public:
  void add(const Report& r);
  void addEncoded(std::span<const uint8_t> report);
  // The payloads, in order; the batcher is empty afterwards.
  std::vector<std::vector<uint8_t>> finish();

 private:
  // Room for one report of n bytes (its length prefix included) at the end of the open payload; a new
  // payload when the open one is full. Null when a report cannot fit any frame.
  uint8_t* place(size_t n);
  void closePayload();
  std::vector<uint8_t> cur_;
  uint32_t count_ = 0;
  std::vector<std::vector<uint8_t>> out_;
};

}  // namespace wirewise::control
