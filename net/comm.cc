#include "net/comm.h"

// The kernel's own tcp_info (glibc's netinet/tcp.h stops before tcpi_snd_wnd); not mixed with netinet/tcp.h.
#include <linux/sockios.h>
#include <linux/tcp.h>
#include <netinet/in.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstddef>

namespace wirewise::net {

uint64_t monotonicNs() {
  timespec ts{};
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<uint64_t>(ts.tv_sec) * 1'000'000'000ull + static_cast<uint64_t>(ts.tv_nsec);
}

namespace {

constexpr size_t kHdr = sizeof(ChunkHeader);
constexpr uint8_t kTcpEstablished = 1;  // TCP_ESTABLISHED in the kernel's tcp_states.h

bool wouldBlock(int err) { return err == EAGAIN || err == EWOULDBLOCK; }

}  // namespace

void tuneStream(int fd, uint64_t railTimeoutNs) {
  // Keepalive only probes an idle connection: a receiver waiting on links that died gets ETIMEDOUT after
  // idle + 2 probes, while a live but late peer answers the probes. Failures (AF_UNIX in tests) are harmless.
  int one = 1;
  int idle = static_cast<int>(std::max<uint64_t>(1, railTimeoutNs / 1'000'000'000ull));
  int intvl = 1, cnt = 2;
  setsockopt(fd, SOL_SOCKET, SO_KEEPALIVE, &one, sizeof one);
  setsockopt(fd, IPPROTO_TCP, TCP_KEEPIDLE, &idle, sizeof idle);
  setsockopt(fd, IPPROTO_TCP, TCP_KEEPINTVL, &intvl, sizeof intvl);
  setsockopt(fd, IPPROTO_TCP, TCP_KEEPCNT, &cnt, sizeof cnt);
}

// ---- send ----

SendComm::SendComm(std::vector<StreamFd> streams, int nRails, const std::vector<double>& railRates,
                   const CommOptions& opt)
    : sched_(railRates, monotonicNs(), opt.sched), opt_(opt) {
  opt_.chunkBytes = std::max<size_t>(opt_.chunkBytes, 1);
  const uint64_t now = monotonicNs();
  streams_.resize(streams.size());
  for (size_t i = 0; i < streams.size(); ++i) {
    streams_[i].s = streams[i];
    streams_[i].lastProgressNs = now;
    if (streams[i].rail >= nRails || streams[i].rail >= sched_.rails()) streams_[i].up = false;
    tuneStream(streams[i].fd, opt_.railTimeoutNs);
  }
  for (const Stream& st : streams_) streamsUp_ += st.up ? 1 : 0;
  resend_.resize(streams_.size() * kStreamRing);
  for (SendRequest& r : reqs_) {
    r.kind = ReqKind::kSend;
    r.comm = this;
  }
}

SendComm::~SendComm() {
  for (Stream& st : streams_) close(st.s.fd);
}

SendRequest* SendComm::post(const void* data, size_t size, int tag) {
  if (posted_ - retired_ >= static_cast<uint64_t>(kMaxSendRequests)) return nullptr;
  SendRequest& r = reqs_[posted_ % kMaxSendRequests];
  r.data = static_cast<const char*>(data);
  r.size = size;
  r.tag = tag;
  r.seq = posted_;
  r.need = size == 0 ? 1 : (size + opt_.chunkBytes - 1) / opt_.chunkBytes;
  r.done = 0;
  r.complete = false;
  r.reported = false;
  ++posted_;
  return &r;
}

void SendComm::retire(SendRequest* r) {
  r->reported = true;
  while (retired_ < posted_ && reqs_[retired_ % kMaxSendRequests].reported) ++retired_;
}

Status SendComm::writeCurrent(Stream& st) {
  while (st.sent < st.total) {
    iovec iov[2];
    int n = 0;
    if (st.sent < kHdr) {
      iov[n++] = {reinterpret_cast<char*>(&st.hdr) + st.sent, kHdr - st.sent};
      if (st.total > kHdr) iov[n++] = {const_cast<char*>(st.payload), st.total - kHdr};
    } else {
      iov[n++] = {const_cast<char*>(st.payload) + (st.sent - kHdr), st.total - st.sent};
    }
    msghdr msg{};
    msg.msg_iov = iov;
    msg.msg_iovlen = static_cast<size_t>(n);
    ssize_t w = sendmsg(st.s.fd, &msg, MSG_NOSIGNAL | MSG_DONTWAIT);
    if (w < 0) {
      if (errno == EINTR) continue;
      if (wouldBlock(errno)) return Status::kOk;
      return Status::kSystemError;
    }
    st.sent += static_cast<size_t>(w);
    st.written += static_cast<uint64_t>(w);
  }
  st.writing = false;
  return Status::kOk;
}

void SendComm::pollAcks(Stream& st, uint64_t nowNs) {
  if (st.written == st.acked) return;
  int outq = 0;
  if (ioctl(st.s.fd, SIOCOUTQ, &outq) != 0 || outq < 0) return;
  const uint64_t q = static_cast<uint64_t>(outq);
  const uint64_t acked = st.written > q ? st.written - q : 0;  // the hello may still be in the queue at first
  if (acked <= st.acked) return;
  sched_.onDelivered(st.s.rail, acked - st.acked);
  st.acked = acked;
  st.lastProgressNs = nowNs;
  while (st.count > 0) {
    Chunk& c = st.ring[st.head];
    if (c.end > st.acked) break;
    if (++c.req->done == c.req->need) c.req->complete = true;
    st.head = (st.head + 1) % kStreamRing;
    --st.count;
  }
}

// Bytes have been outstanding with no acknowledgement for the rail timeout. A peer that is merely not
// reading has closed its window (snd_wnd 0, nothing in flight): that is back-pressure, not a dead link.
bool SendComm::looksDead(const Stream& st) const {
  tcp_info info{};
  socklen_t len = sizeof info;
  if (getsockopt(st.s.fd, IPPROTO_TCP, TCP_INFO, &info, &len) != 0) return true;
  if (info.tcpi_state != kTcpEstablished) return true;
  if (info.tcpi_unacked > 0) return true;
  const bool haveWindow = len >= offsetof(tcp_info, tcpi_snd_wnd) + sizeof info.tcpi_snd_wnd;
  return !haveWindow || info.tcpi_snd_wnd > 0;
}

void SendComm::kill(size_t index, uint64_t nowNs) {
  Stream& st = streams_[index];
  if (!st.up) return;
  st.up = false;
  st.writing = false;
  --streamsUp_;
  const bool lost = st.count > 0;
  const uint64_t cutPos = lost ? st.ring[st.head].start : 0;
  for (; st.count > 0; --st.count, st.head = (st.head + 1) % kStreamRing) {
    const Chunk& c = st.ring[st.head];
    sched_.onLost(st.s.rail, c.end - std::max(c.start, std::min(c.end, st.acked)));
    resend_[(resendHead_ + resendCount_) % resend_.size()] = Resend{c.req, c.offset, c.len};
    ++resendCount_;
    resent_.store(resent_.load(std::memory_order_relaxed) + 1, std::memory_order_relaxed);  // one writer
  }
  bool railUp = false;
  for (const Stream& o : streams_) railUp = railUp || (o.up && o.s.rail == st.s.rail);
  if (!railUp) sched_.markDown(st.s.rail, nowNs);
  if (lost) {
    for (Stream& o : streams_) {
      if (o.up && o.nCuts < kMaxStreams) o.cuts[o.nCuts++] = Cut{static_cast<uint16_t>(index), cutPos};
    }
  }
  if (streamsUp_ == 0) failed_ = Status::kRemoteError;  // no rail left: NCCL reports it, nothing hangs
}

void SendComm::startCut(Stream& st) {
  const Cut c = st.cuts[0];
  for (int i = 1; i < st.nCuts; ++i) st.cuts[i - 1] = st.cuts[i];
  --st.nCuts;
  st.hdr = ChunkHeader{0, 0, c.pos, 0, 0, static_cast<uint16_t>(ChunkKind::kCut), c.stream, 0};
  st.payload = nullptr;
  st.sent = 0;
  st.total = kHdr;
  st.writing = true;
}

void SendComm::startChunk(Stream& st, uint64_t nowNs) {
  SendRequest* req;
  uint64_t offset;
  uint64_t len;
  if (resendCount_ > 0) {
    const Resend& e = resend_[resendHead_];
    req = e.req;
    offset = e.offset;
    len = e.len;
    resendHead_ = (resendHead_ + 1) % resend_.size();
    --resendCount_;
  } else {
    req = &reqs_[pullSeq_ % kMaxSendRequests];
    offset = pullOffset_;
    len = std::min<uint64_t>(opt_.chunkBytes, req->size - pullOffset_);
    pullOffset_ += len;
    if (pullOffset_ >= req->size) {
      ++pullSeq_;
      pullOffset_ = 0;
    }
  }
  if (st.written == st.acked) st.lastProgressNs = nowNs;  // the stall clock starts with the first byte out
  st.hdr = ChunkHeader{req->seq, req->size, offset, static_cast<uint32_t>(len), req->tag,
                       static_cast<uint16_t>(ChunkKind::kData), 0, 0};
  st.payload = req->data + offset;
  st.sent = 0;
  st.total = kHdr + len;
  st.writing = true;
  st.ring[(st.head + st.count) % kStreamRing] = Chunk{req, offset, static_cast<uint32_t>(len), st.written,
                                                      st.written + st.total};
  ++st.count;
  sched_.onAssigned(st.s.rail, st.total, nowNs);
}

void SendComm::tcpInfo(int rail, uint32_t* rttUs, uint64_t* retransmits) const {
  *rttUs = 0;
  *retransmits = 0;
  for (const Stream& st : streams_) {
    if (st.s.rail != rail || !st.up) continue;
    tcp_info info{};
    socklen_t len = sizeof info;
    if (getsockopt(st.s.fd, IPPROTO_TCP, TCP_INFO, &info, &len) != 0) continue;
    *rttUs = std::max(*rttUs, info.tcpi_rtt);
    *retransmits += info.tcpi_total_retrans;
  }
}

Status SendComm::progress() {
  if (failed_ != Status::kOk) return failed_;
  const uint64_t now = monotonicNs();
  for (size_t i = 0; i < streams_.size(); ++i) {
    Stream& st = streams_[i];
    if (!st.up) continue;
    if (st.writing && writeCurrent(st) != Status::kOk) {
      kill(i, now);
      continue;
    }
    pollAcks(st, now);
    if (st.written > st.acked || st.writing) {
      if (now - st.lastProgressNs > opt_.railTimeoutNs) {
        if (looksDead(st)) {
          kill(i, now);
        } else {
          st.lastProgressNs = now - opt_.railTimeoutNs / 2;  // back-pressure: look again in half a timeout
        }
      }
    }
  }
  // Cut notices go out before any resend on every stream, so the receiver knows what to drop first.
  for (size_t i = 0; i < streams_.size(); ++i) {
    Stream& st = streams_[i];
    while (st.up && !st.writing && st.nCuts > 0) {
      startCut(st);
      if (writeCurrent(st) != Status::kOk) kill(i, now);
    }
  }
  while (failed_ == Status::kOk && (resendCount_ > 0 || pullSeq_ < posted_)) {
    std::fill(std::begin(canTake_), std::end(canTake_), false);
    for (const Stream& st : streams_) {
      if (st.up && !st.writing && st.nCuts == 0 && st.count < kStreamRing) canTake_[st.s.rail] = true;
    }
    uint64_t next = resendCount_ > 0 ? resend_[resendHead_].len
                                     : std::min<uint64_t>(opt_.chunkBytes, reqs_[pullSeq_ % kMaxSendRequests].size -
                                                                               pullOffset_);
    const int rail = sched_.pick(canTake_, next + kHdr, now);
    if (rail < 0) break;
    size_t best = streams_.size();
    for (size_t i = 0; i < streams_.size(); ++i) {
      const Stream& st = streams_[i];
      if (!st.up || st.writing || st.nCuts > 0 || st.count >= kStreamRing || st.s.rail != rail) continue;
      if (best == streams_.size() ||
          st.written - st.acked < streams_[best].written - streams_[best].acked)
        best = i;
    }
    if (best == streams_.size()) break;
    startChunk(streams_[best], now);
    if (writeCurrent(streams_[best]) != Status::kOk) kill(best, now);
  }
  sched_.tick(now);
  return failed_;
}

// ---- receive ----

RecvComm::RecvComm(std::vector<StreamFd> streams, uint64_t railTimeoutNs) : scratch_(64 << 10) {
  streams_.resize(streams.size());
  for (size_t i = 0; i < streams.size(); ++i) {
    streams_[i].s = streams[i];
    tuneStream(streams[i].fd, railTimeoutNs);
  }
  dups_.reserve(streams_.size() * kStreamRing);
  for (RecvRequest& r : reqs_) {
    r.kind = ReqKind::kRecv;
    r.comm = this;
  }
}

RecvComm::~RecvComm() {
  for (Stream& st : streams_) close(st.s.fd);
}

RecvRequest* RecvComm::post(int n, void* const* data, const size_t* capacities, const int* tags) {
  if (n < 1 || n > kMaxRecvs || posted_ - retired_ >= static_cast<uint64_t>(kMaxRequests)) return nullptr;
  RecvRequest& r = reqs_[posted_ % kMaxRequests];
  r.n = n;
  r.assigned = 0;
  r.doneSlots = 0;
  r.complete = false;
  r.reported = false;
  r.firstMsg = postedMsgs_;
  for (int i = 0; i < n; ++i) {
    r.slots[i] = RecvSlot{};
    r.slots[i].data = static_cast<char*>(data[i]);
    r.slots[i].capacity = capacities[i];
    r.slots[i].tag = tags != nullptr ? tags[i] : 0;
  }
  postedMsgs_ += static_cast<uint64_t>(n);
  ++posted_;
  return &r;
}

void RecvComm::retire(RecvRequest* r) {
  r->reported = true;
  while (retired_ < posted_ && reqs_[retired_ % kMaxRequests].reported) {
    retiredMsgs_ += static_cast<uint64_t>(reqs_[retired_ % kMaxRequests].n);
    ++retired_;
  }
}

// Which buffer the message of the stream's current header goes to. Messages fill the posted receives in
// order, n per receive; within one receive a message takes the buffer with its tag. A tag that appears
// once in its receive is placed at once (so no stream waits for another's header, even after resends
// reorder chunks); a repeated tag waits until every earlier message of that receive is placed, so the
// k-th message with that tag always takes the k-th buffer with it.
Status RecvComm::route(Stream& st, bool* wait) {
  *wait = false;
  const ChunkHeader& h = st.hdr;
  st.discard = false;
  if (h.seq < retiredMsgs_) {  // a copy of a message NCCL already has
    st.discard = true;
    return Status::kOk;
  }
  if (h.seq >= postedMsgs_) {  // NCCL has not posted its receive yet: leave it in the kernel
    *wait = true;
    return Status::kOk;
  }
  MsgRoute& m = routes_[h.seq % kMsgRing];
  if (m.seq != h.seq) {
    RecvRequest* r = nullptr;
    for (uint64_t q = retired_; q < posted_ && r == nullptr; ++q) {
      RecvRequest& c = reqs_[q % kMaxRequests];
      if (h.seq >= c.firstMsg && h.seq < c.firstMsg + static_cast<uint64_t>(c.n)) r = &c;
    }
    if (r == nullptr) return Status::kInternalError;
    int matches = 0, slot = -1;
    for (int i = 0; i < r->n; ++i) {
      if (r->slots[i].tag != h.tag) continue;
      ++matches;
      if (slot < 0 && !r->slots[i].assigned) slot = i;
    }
    if (matches > 1) {
      for (uint64_t e = r->firstMsg; e < h.seq; ++e) {
        if (routes_[e % kMsgRing].seq != e) {
          *wait = true;
          return Status::kOk;
        }
      }
    }
    if (slot < 0) return Status::kInvalidUsage;  // no buffer of this receive takes the message's tag
    r->slots[slot].assigned = true;
    ++r->assigned;
    m = MsgRoute{h.seq, r, slot};
  }
  RecvSlot& s = m.req->slots[m.slot];
  st.req = m.req;
  st.slot = &s;
  if (s.done) {
    st.discard = true;
    return Status::kOk;
  }
  for (size_t i = 0; i < dups_.size(); ++i) {
    if (dups_[i].seq == h.seq && dups_[i].offset == h.offset) {
      dups_[i] = dups_.back();
      dups_.pop_back();
      st.discard = true;
      return Status::kOk;
    }
  }
  if (!s.sizeKnown) {
    if (h.total > s.capacity) return Status::kInvalidUsage;  // message larger than the posted buffer
    s.size = h.total;
    s.sizeKnown = true;
  } else if (h.total != s.size) {
    return Status::kInternalError;
  }
  return Status::kOk;
}

// Stream `k` died at the sender; everything from byte `pos` on it is resent elsewhere. Chunks already
// taken from it at or after `pos` become duplicates to drop; a chunk half read from there is abandoned.
Status RecvComm::applyCut(int k, uint64_t pos) {
  Stream& st = streams_[static_cast<size_t>(k)];
  st.cutAt = std::min(st.cutAt, pos);
  if (st.pos <= pos) return Status::kOk;  // it will stop there
  for (int i = 0; i < st.seenCount; ++i) {
    const Seen& s = st.seen[i];
    if (s.start >= pos && dups_.size() < dups_.capacity()) dups_.push_back(Dup{s.seq, s.offset});
  }
  if (st.hdrGot > 0 && st.itemStart >= pos) {
    st.hdrGot = 0;
    st.payloadGot = 0;
    st.routed = false;
  }
  if (st.hdrGot == 0) st.stopped = true;
  return Status::kOk;
}

Status RecvComm::readSome(Stream& st) {
  const int nStreams = static_cast<int>(streams_.size());
  for (;;) {
    if (st.stopped) return Status::kOk;
    if (st.hdrGot < kHdr) {
      if (st.hdrGot == 0) {
        if (st.pos >= st.cutAt) {
          st.stopped = true;
          return Status::kOk;
        }
        st.itemStart = st.pos;
      }
      ssize_t n = recv(st.s.fd, reinterpret_cast<char*>(&st.hdr) + st.hdrGot, kHdr - st.hdrGot, MSG_DONTWAIT);
      if (n < 0 && errno == EINTR) continue;
      if (n < 0 && wouldBlock(errno)) return Status::kOk;
      if (n <= 0) {  // end of file or a dead connection: the sender resends what this stream owed
        st.stopped = true;
        return Status::kOk;
      }
      st.hdrGot += static_cast<size_t>(n);
      st.pos += static_cast<uint64_t>(n);
      if (st.hdrGot < kHdr) continue;
      if (!validChunkHeader(st.hdr, nStreams)) return Status::kInternalError;
      st.routed = false;
      st.payloadGot = 0;
      if (st.hdr.kind == static_cast<uint16_t>(ChunkKind::kCut)) {
        st.hdrGot = 0;
        if (Status s = applyCut(st.hdr.cutStream, st.hdr.offset); s != Status::kOk) return s;
        continue;
      }
    }
    if (!st.routed) {
      bool wait = false;
      if (Status s = route(st, &wait); s != Status::kOk) return s;
      if (wait) {
        waited_ = true;
        return Status::kOk;
      }
      st.routed = true;
    }
    const ChunkHeader& h = st.hdr;
    while (st.payloadGot < h.len) {
      const size_t left = h.len - st.payloadGot;
      char* to = st.discard ? scratch_.data() : st.slot->data + h.offset + st.payloadGot;
      ssize_t n = recv(st.s.fd, to, st.discard ? std::min(left, scratch_.size()) : left, MSG_DONTWAIT);
      if (n < 0 && errno == EINTR) continue;
      if (n < 0 && wouldBlock(errno)) return Status::kOk;
      if (n <= 0) {  // the chunk is abandoned uncounted; its resend will fill it whole
        st.stopped = true;
        return Status::kOk;
      }
      st.payloadGot += static_cast<size_t>(n);
      st.pos += static_cast<uint64_t>(n);
    }
    if (st.discard) {
      ++dropped_;
    } else {
      RecvSlot& s = *st.slot;
      s.got += h.len;
      if (s.got > s.size) return Status::kInternalError;  // never complete on double-counted bytes
      if (s.got == s.size) {
        s.done = true;
        if (++st.req->doneSlots == st.req->n) st.req->complete = true;
      }
      st.seen[st.seenNext] = Seen{h.seq, h.offset, st.itemStart};
      st.seenNext = (st.seenNext + 1) % kStreamRing;
      st.seenCount = std::min(st.seenCount + 1, kStreamRing);
    }
    st.hdrGot = 0;
    st.routed = false;
  }
}

Status RecvComm::progress() {
  if (failed_ != Status::kOk) return failed_;
  // A stream may wait for a header that a later stream delivers in the same pass (repeated tags, or a
  // receive posted mid-pass), so go round again while a stream waited and anything moved.
  for (size_t pass = 0; pass <= streams_.size(); ++pass) {
    uint64_t before = 0;
    for (const Stream& st : streams_) before += st.pos;
    waited_ = false;
    for (Stream& st : streams_) {
      if (Status s = readSome(st); s != Status::kOk) return failed_ = s;
    }
    uint64_t after = 0;
    for (const Stream& st : streams_) after += st.pos;
    if (!waited_ || after == before) break;
  }
  bool allStopped = true;
  for (const Stream& st : streams_) allStopped = allStopped && st.stopped;
  if (allStopped) {
    for (uint64_t q = retired_; q < posted_; ++q) {
      if (!reqs_[q % kMaxRequests].complete) return failed_ = Status::kRemoteError;  // the peer vanished
    }
  }
  return Status::kOk;
}

}  // namespace wirewise::net
