// The control-plane wire protocol. Every frame is
//   u32 length (big-endian; bytes after this field, <= kMaxFrameBytes)
//   u8 version (kWireVersion) | u8 type | u64 counter (little-endian) | payload | 32-byte HMAC-SHA-256
// The two Hello frames that open a connection carry each side's random nonce and no MAC. Every later
// frame is authenticated with a per-connection, per-direction key derived from the job key and both
// nonces, and its counter must be exactly one more than the previous frame's: a frame recorded on another
// connection fails the MAC, a frame replayed on the same one fails the counter. A decoding error is
// final for the connection (the peer is dropped and the error logged); it never reaches a communicator.
#pragma once

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

// 2: reports carry per-channel slow-channel summaries and link notes carry RTTs. A member of another
// build is refused with BadVersion (logged), never misread.
inline constexpr uint8_t kWireVersion = 2;
inline constexpr size_t kMaxFrameBytes = 64 * 1024;  // a verdict of 2,000 rules still fits
inline constexpr size_t kNonceBytes = 16;
inline constexpr size_t kMacBytes = 32;
inline constexpr size_t kHeaderBytes = 1 + 1 + 8;  // version, type, counter

enum class MsgType : uint8_t { Hello = 1, Join = 2, Report = 3, Verdict = 4, Leave = 5, Reports = 6 };

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

// Encodes one frame. key == nullptr: an unauthenticated Hello.
std::vector<uint8_t> encodeFrame(MsgType type, uint64_t counter, std::span<const uint8_t> payload,
                                 const HmacSha256Key* key);
std::vector<uint8_t> encodeFrame(MsgType type, uint64_t counter, std::span<const uint8_t> payload, const Digest* key);
inline std::vector<uint8_t> encodeFrame(MsgType type, uint64_t counter, std::span<const uint8_t> payload,
                                        std::nullptr_t) {
  return encodeFrame(type, counter, payload, static_cast<const HmacSha256Key*>(nullptr));
}

// Appends one frame to *out (what encodeFrame returns), reusing its capacity: a connection queues its
// frames in one buffer that it keeps.
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

// ---- Messages ----

struct Hello {
  Nonce nonce{};
};
struct Join {
  uint64_t commId = 0, memberId = 0;
  uint32_t nRanks = 0, nNodes = 0;
  uint64_t configDigest = 0;  // digest of the member's own static table for this comm
  uint64_t nextVerdict = 0;   // the first verdict index it still lacks (resync after a reconnect)
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
};
inline constexpr size_t kMaxReportLinks = 16;  // <= 87 bytes each
inline constexpr size_t kMaxReportSamples = 2000;  // 24 bytes each
// Samples whose slow-channel summary travels (10 bytes more each; flagged by kSlowSummaryFlag in the
// channel byte); the others' summaries are left out. 512 x 10 bytes keeps a full report under
// kMaxFrameBytes.
inline constexpr size_t kMaxReportSlowSamples = 512;
inline constexpr uint8_t kSlowSummaryFlag = 0x80;
inline constexpr size_t kMaxReportSights = 64;     // 94 bytes each; with the samples well under kMaxFrameBytes
struct Verdict {
  uint64_t commId = 0;
  uint64_t index = 0;     // k: the table for [B_k, B_k+1)
  uint64_t boundary = 0;  // B_k
  uint64_t next = 0;      // B_k+1; UINT64_MAX: no further boundary
  bool observeOnly = false;
  std::string reason;
  std::vector<TableRule> rules;
  friend bool operator==(const Verdict&, const Verdict&) = default;
};
struct Leave {
  uint64_t commId = 0, memberId = 0;
};

std::vector<uint8_t> encode(const Hello& m);
std::vector<uint8_t> encode(const Join& m);
std::vector<uint8_t> encode(const Report& m);
std::vector<uint8_t> encode(const Verdict& m);
std::vector<uint8_t> encode(const Leave& m);
// Each decoder checks every byte: false on any truncation, trailing byte or out-of-range field.
bool decode(std::span<const uint8_t> p, Hello* m);
bool decode(std::span<const uint8_t> p, Join* m);
bool decode(std::span<const uint8_t> p, Report* m);
bool decode(std::span<const uint8_t> p, Verdict* m);
bool decode(std::span<const uint8_t> p, Leave* m);

// Reports: several members' reports in one frame (one MAC, one write), as a process's members pass a
// boundary together. Payload: u32 count (1..kMaxBatchReports) | count x (u32 length | Report payload).
// packReports groups encoded Report payloads into as few Reports payloads as fit a frame; a decoder
// accepts a batch only if every report in it decodes.
inline constexpr size_t kMaxBatchReports = 4096;
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
  size_t open();
  void close(size_t at);
  void closePayload();
  std::vector<uint8_t> cur_;
  uint32_t count_ = 0;
  std::vector<std::vector<uint8_t>> out_;
};
bool decodeReports(std::span<const uint8_t> p, std::vector<Report>* out);

}  // namespace wirewise::control
