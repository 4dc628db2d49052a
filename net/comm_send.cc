// The send side of a comm (see comm.h): posting isends, cutting messages into chunks, handing them to
// streams as the rail scheduler picks, tracking what the peer's kernel acknowledged, and, when a stream
// dies, the cut notices and resends. Also the two stream helpers both sides use (clock, socket options).
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

constexpr uint8_t kTcpEstablished = 1;  // TCP_ESTABLISHED in the kernel's tcp_states.h


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

SendComm::SendComm(std::vector<StreamFd> streams, int nRails, const std::vector<double>& railRates,
                   const CommOptions& opt)
    : sched_(railRates, monotonicNs(), opt.sched), opt_(opt) {
  opt_.chunkBytes = std::max<size_t>(opt_.chunkBytes, 1);
  const uint64_t now = monotonicNs();
  lastNowNs_ = now;  // the streams' stall clocks start here
  streams_.reserve(kMaxStreams);  // reopened streams are appended without allocating or moving
  streams_.resize(streams.size());
  for (size_t i = 0; i < streams.size(); ++i) {
    streams_[i].s = streams[i];
    streams_[i].lastProgressNs = now;
    if (streams[i].rail >= nRails || streams[i].rail >= sched_.rails()) streams_[i].up = false;
    tuneStream(streams[i].fd, opt_.railTimeoutNs);
  }
  for (const Stream& st : streams_) streamsUp_ += st.up ? 1 : 0;
  published_.store(streams_.size(), std::memory_order_release);
  resend_.resize(streams_.size() * kStreamRing);
}

SendComm::~SendComm() {
  for (Stream& st : streams_)
    if (st.s.fd >= 0) close(st.s.fd);
  if (opening_.fd >= 0) close(opening_.fd);
}

SendRequest* SendComm::post(const void* data, size_t size, int tag) {
  if (posted_ - retired_ >= static_cast<uint64_t>(kMaxSendRequests)) return nullptr;
  SendRequest& r = reqs_[posted_ % kMaxSendRequests];
  r.data = static_cast<const char*>(data);
  r.size = size;
  r.tag = tag;
  r.seq = posted_;
  r.chunkBytes = messageChunkBytes(size, opt_.chunkBytes);
  r.need = chunkCount(size, r.chunkBytes);
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

// Whether the peer's window is open (segments in flight, or a non-zero snd_wnd): a peer that is merely
// not reading has closed it, which is back-pressure, not a slow or dead link. One TCP_INFO call.
bool SendComm::peerReading(const Stream& st, bool* established) const {
  tcp_info info{};
  socklen_t len = sizeof info;
  *established = false;
  if (getsockopt(st.s.fd, IPPROTO_TCP, TCP_INFO, &info, &len) != 0) return true;
  *established = info.tcpi_state == kTcpEstablished;
  if (info.tcpi_unacked > 0) return true;
  // A closed window is back-pressure only while the peer's kernel answers the zero-window probes (it does,
  // whatever its application does; each answer resets the count). Two unanswered in a row: the link is
  // gone, and the kernel alone would go on probing for many minutes. Counted as "reading" so that
  // looksDead() kills the stream.
  if (info.tcpi_probes >= 2) return true;
  const bool haveWindow = len >= offsetof(tcp_info, tcpi_snd_wnd) + sizeof info.tcpi_snd_wnd;
  return !haveWindow || info.tcpi_snd_wnd > 0;
}

// Bytes have been outstanding with no acknowledgement for the rail timeout while the peer reads.
bool SendComm::looksDead(const Stream& st) const {
  bool established = false;
  const bool reading = peerReading(st, &established);
  return !established || reading;
}

// The stream's n oldest unacknowledged chunks go to the resend queue. It never overflows: new chunks enter
// the rings only while the queue is empty, so rings and queue together hold at most streams x kStreamRing
// chunks, its size.
void SendComm::requeue(Stream& st, int n) {
  for (; n > 0; --n, --st.count, st.head = (st.head + 1) % kStreamRing) {
    const Chunk& c = st.ring[st.head];
    resend_[(resendHead_ + resendCount_) % resend_.size()] = Resend{c.req, c.offset, c.len};
    ++resendCount_;
    resent_.store(resent_.load(std::memory_order_relaxed) + 1, std::memory_order_relaxed);  // one writer
  }
}

void SendComm::kill(size_t index, uint64_t nowNs) {
  Stream& st = streams_[index];
  if (!st.up) return;
  st.up = false;
  st.writing = false;
  st.reviveAtNs = nowNs + kReopenFirstNs;
  st.backoffNs = kReopenFirstNs;
  --streamsUp_;
  const bool lost = st.count > 0;
  const uint64_t cutPos = lost ? st.ring[st.head].start : 0;
  for (int k = 0; k < st.count; ++k) {
    const Chunk& c = st.ring[(st.head + k) % kStreamRing];
    sched_.onLost(st.s.rail, c.end - std::max(c.start, std::min(c.end, st.acked)));
  }
  requeue(st, st.count);
  bool railUp = false;
  for (const Stream& o : streams_) railUp = railUp || (o.up && o.s.rail == st.s.rail);
  if (!railUp) sched_.markDown(st.s.rail, nowNs);
  if (lost) {
    for (Stream& o : streams_) {
      if (o.up && o.nCuts < 2 * kMaxStreams) o.cuts[o.nCuts++] = Cut{static_cast<uint16_t>(index), cutPos, 0};
    }
  }
  if (streamsUp_ == 0) failed_ = Status::kRemoteError;  // no rail left: NCCL reports it, nothing hangs
}

// A rail that slowed down (not dead) still holds the chunks queued at its old rate. When it would need
// hedgeFactor times longer to deliver what it holds than the other rails would to carry that as well
// (and at least 3 queue targets, so ordinary jitter never triggers it), its streams' unacknowledged
// chunks are copied to the other rails. Rate-limited to one hedge per queue target and one set of cut
// notices in flight; the bytes stay outstanding on the slow rail (they are still in its kernel queue and
// its acknowledgements keep measuring it), so the scheduler keeps it idle until they drain.
void SendComm::maybeHedge(uint64_t nowNs) {
  if (opt_.hedgeFactor <= 0.0 || nowNs - lastHedgeNs_ < opt_.sched.queueTargetNs) return;
  int slow = -1;
  double slowDrain = 0.0;  // seconds
  for (int r = 0; r < sched_.rails(); ++r) {
    if (!sched_.up(r) || sched_.outstanding(r) == 0) continue;
    const double d = static_cast<double>(sched_.outstanding(r)) / sched_.rate(r);
    if (d > slowDrain) {
      slow = r;
      slowDrain = d;
    }
  }
  if (slow < 0 || slowDrain * 1e9 < 3.0 * static_cast<double>(opt_.sched.queueTargetNs)) return;
  double otherRate = 0.0, otherBytes = 0.0;
  for (int r = 0; r < sched_.rails(); ++r) {
    if (r == slow || !sched_.up(r)) continue;
    otherRate += sched_.rate(r);
    otherBytes += static_cast<double>(sched_.outstanding(r));
  }
  if (otherRate <= 0.0) return;
  const double elsewhere = (otherBytes + static_cast<double>(sched_.outstanding(slow))) / otherRate;
  if (slowDrain < opt_.hedgeFactor * elsewhere) return;
  for (const Stream& st : streams_)
    if (st.up && st.nCuts > 0) return;  // notices of an earlier hedge or fault still going out
  lastHedgeNs_ = nowNs;
  for (size_t i = 0; i < streams_.size(); ++i) {
    const Stream& st = streams_[i];
    if (!st.up || st.s.rail != slow || st.count == 0 || st.acked < st.hedgedTo) continue;
    bool established = false;
    if (peerReading(st, &established) && established) hedge(i);
  }
}

// Copies the stream's unacknowledged chunks to the resend queue; every other live stream first carries a
// notice naming the range they occupy on this one, so the receiver drops the copy it reads second. A chunk
// still being written stays: its rest is read from NCCL's buffer, which must not be reused before then.
void SendComm::hedge(size_t index) {
  Stream& st = streams_[index];
  const int n = st.count - (st.writing ? 1 : 0);
  if (n <= 0) return;
  const uint64_t from = st.ring[st.head].start;
  const uint64_t to = st.ring[(st.head + n - 1) % kStreamRing].end;
  st.hedgedTo = to;
  hedged_.store(hedged_.load(std::memory_order_relaxed) + static_cast<uint64_t>(n), std::memory_order_relaxed);
  requeue(st, n);
  for (size_t j = 0; j < streams_.size(); ++j) {
    Stream& o = streams_[j];
    if (j != index && o.up && o.nCuts < 2 * kMaxStreams) o.cuts[o.nCuts++] = Cut{static_cast<uint16_t>(index), from, to};
  }
}

void SendComm::startCut(Stream& st) {
  const Cut c = st.cuts[0];
  for (int i = 1; i < st.nCuts; ++i) st.cuts[i - 1] = st.cuts[i];
  --st.nCuts;
  st.hdr = ChunkHeader{0, c.end, c.pos, 0, 0, static_cast<uint16_t>(ChunkKind::kCut), c.stream, 0};
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
    len = std::min<uint64_t>(req->chunkBytes, req->size - pullOffset_);
    pullOffset_ += len;
    if (pullOffset_ >= req->size) {
      ++pullSeq_;
      pullOffset_ = 0;
    }
  }
  if (st.written == st.acked) st.lastProgressNs = nowNs;  // the stall clock starts with the first byte out
  st.hdr = ChunkHeader{req->seq, req->size, offset, static_cast<uint32_t>(len), req->tag,
                       static_cast<uint16_t>(ChunkKind::kData), 0, req->chunkBytes};
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
  for (size_t i = 0; i < streams_.size(); ++i) {
    const Stream& st = streams_[i];
    if (st.s.rail != rail || !st.up) continue;
    tcp_info info{};
    socklen_t len = sizeof info;
    if (getsockopt(st.s.fd, IPPROTO_TCP, TCP_INFO, &info, &len) != 0) continue;
    *rttUs = std::max(*rttUs, info.tcpi_rtt);
    *retransmits += info.tcpi_total_retrans;
  }
}

Status SendComm::progress(uint64_t now) {
  if (failed_ != Status::kOk) return failed_;
  // Readings come from whichever thread drives (read before it took the baton), so one may be older than
  // the last: time never goes back here, or an interval below would wrap round and look like a timeout.
  now = std::max(now, lastNowNs_);
  lastNowNs_ = now;
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
  maybeHedge(now);
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
    const SendRequest& pull = reqs_[pullSeq_ % kMaxSendRequests];
    const uint64_t next = resendCount_ > 0 ? resend_[resendHead_].len
                                           : std::min<uint64_t>(pull.chunkBytes, pull.size - pullOffset_);
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
  if (failed_ == Status::kOk) reopen(now);
  sched_.tick(now);
  return failed_;
}

}  // namespace wirewise::net
