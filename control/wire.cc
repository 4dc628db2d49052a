#include "control/wire.h"

#include <algorithm>
#include <bit>
#include <cassert>
#include <cmath>
#include <cstring>
#include <string_view>

#include "common/text.h"

namespace wirewise::control {
namespace {

// The one byte order (big-endian) for the frame and every field.
void storeBE(uint8_t* d, uint64_t v, size_t n) {
  for (size_t i = 0; i < n; ++i) d[i] = static_cast<uint8_t>(v >> (8 * (n - 1 - i)));
}
uint64_t loadBE(const uint8_t* p, size_t n) {
  uint64_t v = 0;
  for (size_t i = 0; i < n; ++i) v = (v << 8) | p[i];
  return v;
}

// The writer (kWrite) and its sizer (!kWrite) are one walk: the sizer counts what the writer will write,
// so a message is written into a buffer sized exactly for it (one allocation, none where the buffer
// has room) and no size is estimated by hand. The writer never writes past the room it was given.
template <bool kWrite>
class Out {
 public:
  Out() = default;
  Out(uint8_t* to, size_t room) : p_(to), room_(room) {}
  size_t size() const { return n_; }

  void u8(uint8_t x) { put(x, 1); }
  void u16(uint16_t x) { put(x, 2); }
  void u32(uint32_t x) { put(x, 4); }
  void u64(uint64_t x) { put(x, 8); }
  void u8(uint8_t x, int, int) { u8(x); }
  template <class T>
  void i8(T x, int, int) {
    u8(static_cast<uint8_t>(x));
  }
  void flag(bool b) { u8(b ? 1 : 0); }
  void f32(float f, Real) { u32(std::bit_cast<uint32_t>(f)); }
  template <size_t N>
  void bytes(const std::array<uint8_t, N>& a) {
    raw(a.data(), N);
  }
  void text(const std::string& s, size_t max, Len len) {
    const size_t n = std::min(s.size(), max);
    put(n, static_cast<size_t>(len));
    raw(s.data(), n);
  }
  template <class T, class Elem>
  void list(const std::vector<T>& v, size_t max, Elem&& elem) {
    const size_t n = std::min(v.size(), max);
    u32(static_cast<uint32_t>(n));
    for (size_t i = 0; i < n; ++i) elem(v[i]);
  }
  template <class M>
  void sized(const M& m) {
    Out<false> s;
    M::fields(s, m);
    u32(static_cast<uint32_t>(s.size()));
    M::fields(*this, m);
  }
  // A message encoded before, as sized(m) would have written it.
  void sized(std::span<const uint8_t> encoded) {
    u32(static_cast<uint32_t>(encoded.size()));
    raw(encoded.data(), encoded.size());
  }
  void flagged(uint8_t x, uint8_t bit, bool on) { u8(static_cast<uint8_t>(on ? x | bit : x)); }
  void require(bool) {}
  void raw(const void* src, size_t n) {
    if constexpr (kWrite)
      if (n > 0 && n <= room_ - std::min(n_, room_)) std::memcpy(p_ + n_, src, n);
    n_ += n;
  }

 private:
  void put(uint64_t x, size_t n) {
    if constexpr (kWrite)
      if (n <= room_ - std::min(n_, room_)) storeBE(p_ + n_, x, n);
    n_ += n;
  }
  uint8_t* p_ = nullptr;
  size_t room_ = 0;
  size_t n_ = 0;
};
using Sizer = Out<false>;
using Writer = Out<true>;

// The one reader. Every length and count is checked against its bound and against the bytes left; after
// the first refusal every read yields zero and reads nothing, so a field list runs to its end without
// ever reading out of bounds, and done() says whether the message was whole and valid.
class Reader {
 public:
  explicit Reader(std::span<const uint8_t> p) : p_(p) {}
  bool done() const { return ok_ && pos_ == p_.size(); }

  void u8(uint8_t& x) { x = static_cast<uint8_t>(get(1)); }
  void u16(uint16_t& x) { x = static_cast<uint16_t>(get(2)); }
  void u32(uint32_t& x) { x = static_cast<uint32_t>(get(4)); }
  void u64(uint64_t& x) { x = get(8); }
  void u8(uint8_t& x, int lo, int hi) {
    u8(x);
    require(x >= lo && x <= hi);
  }
  template <class T>
  void i8(T& x, int lo, int hi) {
    const int v = static_cast<int8_t>(static_cast<uint8_t>(get(1)));
    require(v >= lo && v <= hi);
    x = static_cast<T>(v);
  }
  void flag(bool& b) {
    const uint64_t v = get(1);
    require(v <= 1);
    b = v == 1;
  }
  void f32(float& f, Real real) {
    f = std::bit_cast<float>(static_cast<uint32_t>(get(4)));
    require(std::isfinite(f) && (real != Real::NonNegative || f >= 0));
  }
  template <size_t N>
  void bytes(std::array<uint8_t, N>& a) {
    if (const uint8_t* q = take(N)) std::memcpy(a.data(), q, N);
  }
  void text(std::string& s, size_t max, Len len) {
    const uint64_t n = get(static_cast<size_t>(len));
    require(n <= max);
    const uint8_t* q = take(static_cast<size_t>(n));
    if (q == nullptr) return s.clear();
    const std::string_view t(reinterpret_cast<const char*>(q), static_cast<size_t>(n));
    require(isPrintableAscii(t));
    s.assign(t);
  }
  template <class T, class Elem>
  void list(std::vector<T>& v, size_t max, Elem&& elem) {
    const uint64_t n = get(4);
    // Every element takes at least a byte: a count the bytes left cannot hold allocates nothing.
    require(n <= max && n <= p_.size() - pos_);
    v.clear();  // elements start from their defaults: an optional field left out reads as unset
    if (!ok_) return;
    v.resize(static_cast<size_t>(n));
    for (T& e : v) {
      elem(e);
      if (!ok_) return;
    }
  }
  template <class M>
  void sized(M& m) {
    const uint64_t n = get(4);
    const uint8_t* q = take(static_cast<size_t>(n));
    if (q == nullptr) return;
    Reader sub({q, static_cast<size_t>(n)});
    M::fields(sub, m);
    require(sub.done());
  }
  void flagged(uint8_t& x, uint8_t bit, bool& on) {
    u8(x);
    on = (x & bit) != 0;
    x = static_cast<uint8_t>(x & ~bit);
  }
  void require(bool cond) { ok_ = ok_ && cond; }

 private:
  const uint8_t* take(size_t n) {
    if (!ok_ || p_.size() - pos_ < n) {
      ok_ = false;
      return nullptr;
    }
    const uint8_t* q = p_.data() + pos_;
    pos_ += n;
    return q;
  }
  uint64_t get(size_t n) {
    const uint8_t* q = take(n);
    return q != nullptr ? loadBE(q, n) : 0;
  }
  std::span<const uint8_t> p_;
  size_t pos_ = 0;
  bool ok_ = true;
};

template <class M>
size_t sizeOf(const M& m) {
  Sizer s;
  M::fields(s, m);
  return s.size();
}

template <class M>
std::vector<uint8_t> encodeMessage(const M& m) {
  std::vector<uint8_t> out(sizeOf(m));
  Writer w(out.data(), out.size());
  M::fields(w, m);
  assert(w.size() == out.size());
  return out;
}

template <class M>
bool decodeMessage(std::span<const uint8_t> p, M* m) {
  Reader r(p);
  M::fields(r, *m);
  return r.done();
}

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
  out->resize(at + 4 + len);
  uint8_t* frame = out->data() + at;
  Writer w(frame, 4 + len);
  w.u32(static_cast<uint32_t>(len));
  const FrameHeader h{kWireVersion, static_cast<uint8_t>(type), counter};
  FrameHeader::fields(w, h);
  w.raw(payload.data(), payload.size());
  if (key != nullptr) {
    const Digest mac = key->mac({std::span<const uint8_t>(frame, w.size())});
    w.raw(mac.data(), mac.size());
  }
  assert(w.size() == 4 + len);
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
  // The length alone, checked before waiting for the body: a hostile length never makes us buffer it.
  const size_t len = static_cast<size_t>(loadBE(p, 4));
  if (len > kMaxFrameBytes) return fail(WireError::Oversized);
  size_t minLen = kHeaderBytes + (key_ ? kMacBytes : 0);
  if (len < minLen) return fail(WireError::Undersized);
  if (avail < 4 + len) return WireError::NeedMore;
  FrameHeader h;
  Reader r({p + 4, kHeaderBytes});
  FrameHeader::fields(r, h);
  if (h.version != kWireVersion) return fail(WireError::BadVersion);
  if (h.type < static_cast<uint8_t>(MsgType::Hello) || h.type > static_cast<uint8_t>(MsgType::Answer))
    return fail(WireError::BadType);
  if ((h.type == static_cast<uint8_t>(MsgType::Hello)) == key_.has_value()) return fail(WireError::BadType);
  size_t bodyEnd = 4 + len - (key_ ? kMacBytes : 0);
  if (key_) {
    Digest mac = key_->mac({std::span<const uint8_t>(p, bodyEnd)});
    if (!digestsEqual(mac, std::span<const uint8_t>(p + bodyEnd, kMacBytes))) return fail(WireError::BadMac);
    if (h.counter != lastCounter_ + 1) return fail(WireError::Replayed);
    lastCounter_ = h.counter;
  }
  out->type = static_cast<MsgType>(h.type);
  out->counter = h.counter;
  out->payload.assign(p + 4 + kHeaderBytes, p + bodyEnd);
  pos_ += 4 + len;
  return WireError::None;
}

std::vector<uint8_t> encode(const Hello& m) { return encodeMessage(m); }
std::vector<uint8_t> encode(const Join& m) { return encodeMessage(m); }
std::vector<uint8_t> encode(const Report& m) { return encodeMessage(m); }
std::vector<uint8_t> encode(const Verdict& m) { return encodeMessage(m); }
std::vector<uint8_t> encode(const Leave& m) { return encodeMessage(m); }
std::vector<uint8_t> encode(const Propose& m) { return encodeMessage(m); }
std::vector<uint8_t> encode(const Answer& m) { return encodeMessage(m); }
bool decode(std::span<const uint8_t> p, Hello* m) { return decodeMessage(p, m); }
bool decode(std::span<const uint8_t> p, Join* m) { return decodeMessage(p, m); }
bool decode(std::span<const uint8_t> p, Report* m) { return decodeMessage(p, m); }
bool decode(std::span<const uint8_t> p, Verdict* m) { return decodeMessage(p, m); }
bool decode(std::span<const uint8_t> p, Leave* m) { return decodeMessage(p, m); }
bool decode(std::span<const uint8_t> p, Propose* m) { return decodeMessage(p, m); }
bool decode(std::span<const uint8_t> p, Answer* m) { return decodeMessage(p, m); }

bool decodeReports(std::span<const uint8_t> p, std::vector<Report>* out) {
  Reader r(p);
  reportsFields(r, *out);
  return r.done();
}

size_t encodedSize(const Report& m) { return sizeOf(m); }
size_t encodedSize(const Verdict& m) { return sizeOf(m); }

uint8_t* ReportBatcher::place(size_t n) {
  // What a Reports payload may hold so that its frame stays within kMaxFrameBytes.
  constexpr size_t kRoom = kMaxFrameBytes - kHeaderBytes - kMacBytes;
  if (4 + n > kRoom) return nullptr;  // cannot happen: a Report is bounded well below a frame
  if (count_ == kMaxBatchReports || (count_ > 0 && cur_.size() + n > kRoom)) closePayload();
  if (count_ == 0) {
    cur_.clear();
    cur_.reserve(std::max<size_t>(4096, 4 + n));
    cur_.resize(4);  // the count, written when the payload is closed
  }
  const size_t at = cur_.size();
  cur_.resize(at + n);
  ++count_;
  return cur_.data() + at;
}

void ReportBatcher::closePayload() {
  if (count_ == 0) return;
  Writer w(cur_.data(), 4);
  w.u32(count_);  // reportsFields' count
  out_.push_back(std::move(cur_));
  cur_.clear();
  count_ = 0;
}

// Each report as reportsFields' elements: sized(report).
void ReportBatcher::add(const Report& r) {
  Sizer s;
  s.sized(r);
  if (uint8_t* d = place(s.size())) {
    Writer w(d, s.size());
    w.sized(r);
  }
}

void ReportBatcher::addEncoded(std::span<const uint8_t> report) {
  Sizer s;
  s.sized(report);
  if (uint8_t* d = place(s.size())) {
    Writer w(d, s.size());
    w.sized(report);
  }
}

std::vector<std::vector<uint8_t>> ReportBatcher::finish() {
  closePayload();
  cur_ = {};
  std::vector<std::vector<uint8_t>> done = std::move(out_);
  out_.clear();
  return done;
}

std::vector<std::vector<uint8_t>> packReports(std::span<const std::vector<uint8_t>> encodedReports) {
  ReportBatcher b;
  for (const std::vector<uint8_t>& r : encodedReports) b.addEncoded(r);
  return b.finish();
}

}  // namespace wirewise::control
