#include "control/wire.h"

#include <algorithm>
#include <bit>
#include <cmath>

#include <cstring>

namespace wirewise::control {
namespace {

constexpr size_t kMaxRules = 2000;
constexpr size_t kMaxReason = 256;

// Appends to a buffer reserved up front by the caller: a frame is built with one allocation, not one
// per doubling (a client encodes every member's report at every boundary).
class Writer {
 public:
  explicit Writer(size_t reserve = 0) { out_.reserve(reserve); }
  explicit Writer(std::vector<uint8_t> appendTo) : out_(std::move(appendTo)) {}
  void u8(uint8_t v) { out_.push_back(v); }
  void u32(uint32_t v) { le(v, 4); }
  void u64(uint64_t v) { le(v, 8); }
  void bytes(std::span<const uint8_t> b) {
    if (!b.empty()) std::memcpy(grow(b.size()), b.data(), b.size());
  }
  std::vector<uint8_t> take() { return std::move(out_); }

 private:
  uint8_t* grow(size_t n) {
    const size_t at = out_.size();
    out_.resize(at + n);
    return out_.data() + at;
  }
  void le(uint64_t v, int n) {
    uint8_t* d = grow(static_cast<size_t>(n));
    for (int i = 0; i < n; ++i) d[i] = static_cast<uint8_t>(v >> (8 * i));
  }
  std::vector<uint8_t> out_;
};

class Reader {
 public:
  explicit Reader(std::span<const uint8_t> p) : p_(p) {}
  bool u8(uint8_t* v) {
    if (!need(1)) return false;
    *v = p_[pos_++];
    return true;
  }
  bool u32(uint32_t* v) {
    if (!need(4)) return false;
    *v = 0;
    for (int i = 0; i < 4; ++i) *v |= uint32_t{p_[pos_++]} << (8 * i);
    return true;
  }
  bool u64(uint64_t* v) {
    if (!need(8)) return false;
    *v = 0;
    for (int i = 0; i < 8; ++i) *v |= uint64_t{p_[pos_++]} << (8 * i);
    return true;
  }
  bool bytes(uint8_t* dst, size_t n) {
    if (!need(n)) return false;
    std::memcpy(dst, p_.data() + pos_, n);
    pos_ += n;
    return true;
  }
  bool skip(size_t n) {
    if (!need(n)) return false;
    pos_ += n;
    return true;
  }
  bool done() const { return pos_ == p_.size(); }

 private:
  bool need(size_t n) const { return p_.size() - pos_ >= n; }
  std::span<const uint8_t> p_;
  size_t pos_ = 0;
};

std::span<const uint8_t> asBytes(std::string_view s) { return {reinterpret_cast<const uint8_t*>(s.data()), s.size()}; }

}  // namespace

const char* wireErrorName(WireError e) {
  switch (e) {
    case WireError::None:
      return "none";
    case WireError::NeedMore:
      return "incomplete frame";
    case WireError::Oversized:
      return "oversized frame";
    case WireError::Undersized:
      return "frame too short";
    case WireError::BadVersion:
      return "unknown protocol version";
    case WireError::BadType:
      return "unexpected message type";
    case WireError::BadMac:
      return "bad authentication (wrong job key?)";
    case WireError::Replayed:
      return "replayed or reordered frame";
    case WireError::Malformed:
      return "malformed message";
  }
  return "?";
}

SessionKeys deriveSessionKeys(std::span<const uint8_t> jobKey, const Nonce& serverNonce, const Nonce& clientNonce) {
  SessionKeys k;
  k.toServer = hmacSha256(jobKey, {asBytes("wirewise-v1 to-server"), serverNonce, clientNonce});
  k.toClient = hmacSha256(jobKey, {asBytes("wirewise-v1 to-client"), serverNonce, clientNonce});
  return k;
}

std::vector<uint8_t> encodeFrame(MsgType type, uint64_t counter, std::span<const uint8_t> payload, const Digest* key) {
  if (key == nullptr) return encodeFrame(type, counter, payload, static_cast<const HmacSha256Key*>(nullptr));
  const HmacSha256Key k(*key);
  return encodeFrame(type, counter, payload, &k);
}

std::vector<uint8_t> encodeFrame(MsgType type, uint64_t counter, std::span<const uint8_t> payload,
                                 const HmacSha256Key* key) {
  std::vector<uint8_t> out;
  appendFrame(&out, type, counter, payload, key);
  return out;
}

void appendFrame(std::vector<uint8_t>* out, MsgType type, uint64_t counter, std::span<const uint8_t> payload,
                 const HmacSha256Key* key) {
  const size_t len = kHeaderBytes + payload.size() + (key ? kMacBytes : 0);
  const size_t at = out->size();
  if (out->capacity() < at + 4 + len) out->reserve(std::max(at + 4 + len, 2 * out->capacity()));
  Writer w(std::move(*out));
  for (int i = 3; i >= 0; --i) w.u8(static_cast<uint8_t>(len >> (8 * i)));
  w.u8(kWireVersion);
  w.u8(static_cast<uint8_t>(type));
  w.u64(counter);
  w.bytes(payload);
  *out = w.take();
  if (key != nullptr) {
    Digest mac = key->mac({std::span<const uint8_t>(out->data() + at, out->size() - at)});
    out->insert(out->end(), mac.begin(), mac.end());
  }
}

void FrameReader::append(std::span<const uint8_t> bytes) {
  if (pos_ > 0 && pos_ == buf_.size()) {
    buf_.clear();
    pos_ = 0;
  }
  buf_.insert(buf_.end(), bytes.begin(), bytes.end());
}

WireError FrameReader::next(Frame* out) {
  if (sticky_ != WireError::None) return sticky_;
  auto fail = [&](WireError e) { return sticky_ = e; };
  size_t avail = buf_.size() - pos_;
  if (avail < 4) return WireError::NeedMore;
  const uint8_t* p = buf_.data() + pos_;
  size_t len = (size_t{p[0]} << 24) | (size_t{p[1]} << 16) | (size_t{p[2]} << 8) | p[3];
  // Checked before waiting for the body: a hostile length never makes us buffer it.
  if (len > kMaxFrameBytes) return fail(WireError::Oversized);
  size_t minLen = kHeaderBytes + (key_ ? kMacBytes : 0);
  if (len < minLen) return fail(WireError::Undersized);
  if (avail < 4 + len) return WireError::NeedMore;
  if (p[4] != kWireVersion) return fail(WireError::BadVersion);
  uint8_t type = p[5];
  if (type < 1 || type > 6) return fail(WireError::BadType);
  if ((type == static_cast<uint8_t>(MsgType::Hello)) == key_.has_value()) return fail(WireError::BadType);
  uint64_t counter = 0;
  for (int i = 0; i < 8; ++i) counter |= uint64_t{p[6 + i]} << (8 * i);
  size_t bodyEnd = 4 + len - (key_ ? kMacBytes : 0);
  if (key_) {
    Digest mac = key_->mac({std::span<const uint8_t>(p, bodyEnd)});
    if (!digestsEqual(mac, std::span<const uint8_t>(p + bodyEnd, kMacBytes))) return fail(WireError::BadMac);
    if (counter != lastCounter_ + 1) return fail(WireError::Replayed);
    lastCounter_ = counter;
  }
  out->type = static_cast<MsgType>(type);
  out->counter = counter;
  out->payload.assign(p + 4 + kHeaderBytes, p + bodyEnd);
  pos_ += 4 + len;
  return WireError::None;
}

std::vector<uint8_t> encode(const Hello& m) {
  Writer w;
  w.bytes(m.nonce);
  return w.take();
}
bool decode(std::span<const uint8_t> p, Hello* m) {
  Reader r(p);
  return r.bytes(m->nonce.data(), kNonceBytes) && r.done();
}

std::vector<uint8_t> encode(const Join& m) {
  Writer w;
  w.u64(m.commId);
  w.u64(m.memberId);
  w.u32(m.nRanks);
  w.u32(m.nNodes);
  w.u64(m.configDigest);
  w.u64(m.nextVerdict);
  return w.take();
}
bool decode(std::span<const uint8_t> p, Join* m) {
  Reader r(p);
  return r.u64(&m->commId) && r.u64(&m->memberId) && r.u32(&m->nRanks) && r.u32(&m->nNodes) &&
         r.u64(&m->configDigest) && r.u64(&m->nextVerdict) && r.done() && m->nRanks > 0;
}

namespace {
void writeReport(Writer& w, const Report& m) {
  w.u64(m.commId);
  w.u64(m.memberId);
  w.u64(m.index);
  w.u64(m.seq);
  w.u64(m.elapsedUs);
  size_t ns = std::min(m.samples.size(), kMaxReportSamples);
  w.u32(static_cast<uint32_t>(ns));
  size_t summaries = 0;
  for (size_t i = 0; i < ns; ++i) {
    const adapt::Sample& s = m.samples[i];
    w.u64(s.seqNumber);
    w.u64(s.bytes);
    w.u32(s.durationNs);
    w.u8(static_cast<uint8_t>(s.coll));
    w.u8(static_cast<uint8_t>(s.algo));
    w.u8(static_cast<uint8_t>(s.proto));
    // The top bit of the channel byte says a slow-channel summary follows (mask, ratio); only the first
    // kMaxReportSlowSamples summaries travel, so that a full report stays within kMaxFrameBytes, and
    // only valid ones (what decode accepts): a bad summary must not cost the whole report.
    const bool valid = s.slowChannels != 0 && s.nChannels > 0 && s.nChannels <= kMaxChannels &&
                       (s.nChannels >= 64 || (s.slowChannels >> s.nChannels) == 0) && s.slowRatioQ8 >= 256;
    const bool slow = valid && summaries < kMaxReportSlowSamples;
    w.u8(static_cast<uint8_t>(s.nChannels | (slow ? kSlowSummaryFlag : 0)));
    if (slow) {
      ++summaries;
      w.u64(s.slowChannels);
      w.u8(static_cast<uint8_t>(s.slowRatioQ8 & 0xff));
      w.u8(static_cast<uint8_t>(s.slowRatioQ8 >> 8));
    }
  }
  size_t nt = std::min(m.sights.size(), kMaxReportSights);
  w.u32(static_cast<uint32_t>(nt));
  for (size_t i = 0; i < nt; ++i) {
    const adapt::Sight& s = m.sights[i];
    w.u8(static_cast<uint8_t>(s.coll));
    w.u8(s.bucket);
    w.u64(s.bytes);
    for (const auto& row : s.cost)
      for (float f : row) w.u32(std::bit_cast<uint32_t>(f));
  }
  size_t nl = std::min(m.links.size(), kMaxReportLinks);
  w.u32(static_cast<uint32_t>(nl));
  for (size_t i = 0; i < nl; ++i) {
    const adapt::LinkNote& l = m.links[i];
    std::string_view name(l.link.data(), std::min(l.link.size(), adapt::kMaxLinkName));
    w.u8(static_cast<uint8_t>(name.size()));
    w.bytes(asBytes(name));
    w.u8(l.state);
    w.u32(std::bit_cast<uint32_t>(l.capacityRatio));
    w.u32(std::bit_cast<uint32_t>(l.errorsPerSec));
    w.u32(std::bit_cast<uint32_t>(l.rttUs));
    w.u32(std::bit_cast<uint32_t>(l.baselineRttUs));
  }
}
}  // namespace

std::vector<uint8_t> encode(const Report& m) {
  // The fixed fields and counts, then at most this much per sample, sight and link.
  Writer w(52 + m.samples.size() * 34 + m.sights.size() * (10 + sizeof(adapt::Sight::cost)) + m.links.size() * 96);
  writeReport(w, m);
  return w.take();
}
bool decode(std::span<const uint8_t> p, Report* m) {
  Reader r(p);
  uint32_t n = 0;
  if (!r.u64(&m->commId) || !r.u64(&m->memberId) || !r.u64(&m->index) || !r.u64(&m->seq) || !r.u64(&m->elapsedUs) ||
      !r.u32(&n) || n > kMaxReportSamples)
    return false;
  m->samples.assign(n, {});
  size_t summaries = 0;
  for (adapt::Sample& s : m->samples) {
    uint8_t c, a, pr;
    if (!r.u64(&s.seqNumber) || !r.u64(&s.bytes) || !r.u32(&s.durationNs) || !r.u8(&c) || !r.u8(&a) || !r.u8(&pr) ||
        !r.u8(&s.nChannels))
      return false;
    s.coll = static_cast<int8_t>(c), s.algo = static_cast<int8_t>(a), s.proto = static_cast<int8_t>(pr);
    const bool slow = (s.nChannels & kSlowSummaryFlag) != 0;
    s.nChannels = static_cast<uint8_t>(s.nChannels & ~kSlowSummaryFlag);
    if (s.coll < -1 || s.coll >= kNumCollTypes || s.algo < -1 || s.algo >= kNumAlgos || s.proto < -1 ||
        s.proto >= kNumProtos || s.nChannels > kMaxChannels)
      return false;
    // A summary names only channels the collective ran, and its slowest is at least 1.2x the median.
    uint8_t lo = 0, hi = 0;
    if (slow && (++summaries > kMaxReportSlowSamples || !r.u64(&s.slowChannels) || !r.u8(&lo) || !r.u8(&hi) ||
                 s.slowChannels == 0 || s.nChannels == 0 || (s.nChannels < 64 && (s.slowChannels >> s.nChannels) != 0)))
      return false;
    s.slowRatioQ8 = static_cast<uint16_t>(lo | (hi << 8));
    if (slow && s.slowRatioQ8 < 256) return false;
  }
  if (!r.u32(&n) || n > kMaxReportSights) return false;
  m->sights.assign(n, {});
  for (adapt::Sight& s : m->sights) {
    uint8_t c;
    if (!r.u8(&c) || !r.u8(&s.bucket) || !r.u64(&s.bytes)) return false;
    s.coll = static_cast<int8_t>(c);
    if (s.coll < 0 || s.coll >= kNumCollTypes || s.bucket >= SizeBuckets::kCount) return false;
    for (auto& row : s.cost)
      for (float& f : row) {
        uint32_t bits;
        if (!r.u32(&bits)) return false;
        f = std::bit_cast<float>(bits);
        if (!std::isfinite(f)) return false;
      }
  }
  if (!r.u32(&n) || n > kMaxReportLinks) return false;
  m->links.assign(n, {});
  for (adapt::LinkNote& l : m->links) {
    uint8_t len;
    uint32_t cap, err, rtt, base;
    if (!r.u8(&len) || len > adapt::kMaxLinkName) return false;
    l.link.assign(len, '\0');
    if (!r.bytes(reinterpret_cast<uint8_t*>(l.link.data()), len)) return false;
    for (char c : l.link)
      if (c < 0x20 || c > 0x7e) return false;  // printable ASCII only: it goes into logs
    if (!r.u8(&l.state) || l.state < 1 || l.state > 2 || !r.u32(&cap) || !r.u32(&err) || !r.u32(&rtt) ||
        !r.u32(&base))
      return false;
    l.capacityRatio = std::bit_cast<float>(cap);
    l.errorsPerSec = std::bit_cast<float>(err);
    l.rttUs = std::bit_cast<float>(rtt);
    l.baselineRttUs = std::bit_cast<float>(base);
    if (!std::isfinite(l.capacityRatio) || !std::isfinite(l.errorsPerSec)) return false;
    // Latencies go into the policy's explanations: a negative or infinite one is a broken peer.
    if (!std::isfinite(l.rttUs) || !std::isfinite(l.baselineRttUs) || l.rttUs < 0 || l.baselineRttUs < 0)
      return false;
  }
  return r.done();
}

std::vector<uint8_t> encode(const Verdict& m) {
  Writer w;
  w.u64(m.commId);
  w.u64(m.index);
  w.u64(m.boundary);
  w.u64(m.next);
  w.u8(m.observeOnly ? 1 : 0);
  std::string_view reason(m.reason.data(), std::min(m.reason.size(), kMaxReason));
  w.u32(static_cast<uint32_t>(reason.size()));
  w.bytes(asBytes(reason));
  w.u32(static_cast<uint32_t>(std::min(m.rules.size(), kMaxRules)));
  for (size_t i = 0; i < m.rules.size() && i < kMaxRules; ++i) {
    const TableRule& t = m.rules[i];
    w.u8(static_cast<uint8_t>(t.coll));
    w.u64(t.minBytes);
    w.u64(t.maxBytes);
    w.u8(static_cast<uint8_t>(t.decision.algo));
    w.u8(static_cast<uint8_t>(t.decision.proto));
    w.u8(static_cast<uint8_t>(t.decision.nChannels));
  }
  return w.take();
}
bool decode(std::span<const uint8_t> p, Verdict* m) {
  Reader r(p);
  uint8_t flag = 0;
  uint32_t n = 0;
  if (!r.u64(&m->commId) || !r.u64(&m->index) || !r.u64(&m->boundary) || !r.u64(&m->next) || !r.u8(&flag) || flag > 1 ||
      !r.u32(&n) || n > kMaxReason)
    return false;
  m->observeOnly = flag == 1;
  m->reason.assign(n, '\0');
  if (!r.bytes(reinterpret_cast<uint8_t*>(m->reason.data()), n)) return false;
  for (char c : m->reason)
    if (c < 0x20 || c > 0x7e) return false;  // printable ASCII only: it goes into logs
  if (!r.u32(&n) || n > kMaxRules || m->next <= m->boundary) return false;
  m->rules.clear();
  for (uint32_t i = 0; i < n; ++i) {
    uint8_t coll, algo, proto, ch;
    TableRule t;
    if (!r.u8(&coll) || !r.u64(&t.minBytes) || !r.u64(&t.maxBytes) || !r.u8(&algo) || !r.u8(&proto) || !r.u8(&ch))
      return false;
    t.coll = static_cast<int8_t>(coll);
    t.decision = {static_cast<int8_t>(algo), static_cast<int8_t>(proto), static_cast<int8_t>(ch)};
    if (t.coll < kAny || t.coll >= kNumCollTypes || t.minBytes > t.maxBytes) return false;
    if (t.decision.algo < kAny || t.decision.algo >= kNumAlgos || t.decision.proto < kAny ||
        t.decision.proto >= kNumProtos || t.decision.nChannels < 0 || t.decision.nChannels > kMaxChannels)
      return false;
    m->rules.push_back(t);
  }
  return r.done();
}

std::vector<uint8_t> encode(const Leave& m) {
  Writer w;
  w.u64(m.commId);
  w.u64(m.memberId);
  return w.take();
}
bool decode(std::span<const uint8_t> p, Leave* m) {
  Reader r(p);
  return r.u64(&m->commId) && r.u64(&m->memberId) && r.done();
}

size_t ReportBatcher::open() {
  if (count_ == 0 && cur_.empty()) {
    cur_.reserve(4096);
    cur_.resize(4);  // the count, patched when the payload is closed
  }
  const size_t at = cur_.size();
  cur_.resize(at + 4);  // this report's length, patched in close()
  return at;
}

void ReportBatcher::close(size_t at) {
  // What a Reports payload may hold so that its frame stays within kMaxFrameBytes.
  constexpr size_t kRoom = kMaxFrameBytes - kHeaderBytes - kMacBytes;
  const size_t len = cur_.size() - at - 4;
  if (4 + 4 + len > kRoom) {  // cannot happen: a Report is bounded well below a frame
    cur_.resize(at);
    return;
  }
  for (int i = 0; i < 4; ++i) cur_[at + static_cast<size_t>(i)] = static_cast<uint8_t>(len >> (8 * i));
  if (count_ == kMaxBatchReports || cur_.size() > kRoom) {  // it starts the next payload
    std::vector<uint8_t> tail(cur_.begin() + static_cast<std::ptrdiff_t>(at), cur_.end());
    cur_.resize(at);
    closePayload();
    cur_.reserve(4096);
    cur_.resize(4);
    cur_.insert(cur_.end(), tail.begin(), tail.end());
  }
  ++count_;
}

void ReportBatcher::closePayload() {
  if (count_ == 0) return;
  for (int i = 0; i < 4; ++i) cur_[static_cast<size_t>(i)] = static_cast<uint8_t>(count_ >> (8 * i));
  out_.push_back(std::move(cur_));
  cur_.clear();
  count_ = 0;
}

void ReportBatcher::add(const Report& r) {
  const size_t at = open();
  Writer w(std::move(cur_));
  writeReport(w, r);
  cur_ = w.take();
  close(at);
}

void ReportBatcher::addEncoded(std::span<const uint8_t> report) {
  const size_t at = open();
  cur_.insert(cur_.end(), report.begin(), report.end());
  close(at);
}

std::vector<std::vector<uint8_t>> ReportBatcher::finish() {
  closePayload();
  cur_ = {};
  return std::move(out_);
}

std::vector<std::vector<uint8_t>> packReports(std::span<const std::vector<uint8_t>> encodedReports) {
  ReportBatcher b;
  for (const std::vector<uint8_t>& r : encodedReports) b.addEncoded(r);
  return b.finish();
}

bool decodeReports(std::span<const uint8_t> p, std::vector<Report>* out) {
  Reader r(p);
  uint32_t n = 0;
  if (!r.u32(&n) || n == 0 || n > kMaxBatchReports) return false;
  out->clear();
  size_t pos = 4;
  for (uint32_t i = 0; i < n; ++i) {
    uint32_t len = 0;
    if (!r.u32(&len) || p.size() - pos - 4 < len) return false;
    Report rep;
    if (!decode(p.subspan(pos + 4, len), &rep)) return false;
    out->push_back(std::move(rep));
    if (!r.skip(len)) return false;
    pos += 4 + len;
  }
  return r.done();
}

}  // namespace wirewise::control
