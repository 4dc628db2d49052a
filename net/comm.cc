#include "net/comm.h"

#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>

namespace wirewise::net {

uint64_t monotonicNs() {
  timespec ts{};
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<uint64_t>(ts.tv_sec) * 1'000'000'000ull + static_cast<uint64_t>(ts.tv_nsec);
}

namespace {

constexpr size_t kHdr = sizeof(ChunkHeader);

bool wouldBlock(int err) { return err == EAGAIN || err == EWOULDBLOCK; }

void resetRequest(Request& r, ReqKind kind, void* comm, void* data, size_t size, int tag, uint64_t seq) {
  r.kind = kind;
  r.comm = comm;
  r.data = static_cast<char*>(data);
  r.size = size;
  r.tag = tag;
  r.seq = seq;
  r.done = 0;
  r.need = 0;
  r.sizeKnown = false;
  r.complete = false;
  r.reported = false;
}

}  // namespace

// ---- send ----

SendComm::SendComm(std::vector<StreamFd> streams, int nRails, const std::vector<double>& railWeights,
                   size_t chunkBytes)
    : railIdle_(static_cast<size_t>(nRails), false), sched_(railWeights), chunkBytes_(std::max<size_t>(chunkBytes, 1)) {
  for (const StreamFd& s : streams) streams_.push_back(Stream{s});
  for (Request& r : reqs_) resetRequest(r, ReqKind::kSend, this, nullptr, 0, 0, 0);
}

SendComm::~SendComm() {
  for (Stream& st : streams_) close(st.s.fd);
}

Request* SendComm::post(void* data, size_t size, int tag) {
  if (posted_ - retired_ >= static_cast<uint64_t>(kMaxRequests)) return nullptr;
  Request& r = reqs_[posted_ % kMaxRequests];
  resetRequest(r, ReqKind::kSend, this, data, size, tag, posted_);
  r.need = size == 0 ? 1 : (size + chunkBytes_ - 1) / chunkBytes_;
  ++posted_;
  return &r;
}

void SendComm::retire(Request* r) {
  r->reported = true;
  while (retired_ < posted_ && reqs_[retired_ % kMaxRequests].reported) ++retired_;
}

bool SendComm::pullChunk(Stream& st, uint64_t nowNs) {
  if (pullSeq_ == posted_) return false;
  Request& r = reqs_[pullSeq_ % kMaxRequests];
  uint64_t len = std::min<uint64_t>(chunkBytes_, r.size - pullOffset_);
  st.hdr = ChunkHeader{r.seq, r.size, pullOffset_, static_cast<uint32_t>(len), r.tag};
  st.payload = r.data + pullOffset_;
  st.sent = 0;
  st.busy = true;
  st.req = &r;
  pullOffset_ += len;
  if (pullOffset_ >= r.size) {
    ++pullSeq_;
    pullOffset_ = 0;
  }
  sched_.onAssigned(st.s.rail, len + kHdr, nowNs);
  return true;
}

Status SendComm::writeSome(Stream& st, bool* finished) {
  const size_t total = kHdr + st.hdr.len;
  while (st.sent < total) {
    iovec iov[2];
    int n = 0;
    if (st.sent < kHdr) {
      iov[n++] = {reinterpret_cast<char*>(&st.hdr) + st.sent, kHdr - st.sent};
      if (st.hdr.len > 0) iov[n++] = {const_cast<char*>(st.payload), st.hdr.len};
    } else {
      iov[n++] = {const_cast<char*>(st.payload) + (st.sent - kHdr), total - st.sent};
    }
    msghdr msg{};
    msg.msg_iov = iov;
    msg.msg_iovlen = static_cast<size_t>(n);
    ssize_t w = sendmsg(st.s.fd, &msg, MSG_NOSIGNAL | MSG_DONTWAIT);
    if (w < 0) {
      if (errno == EINTR) continue;
      if (wouldBlock(errno)) break;
      return Status::kSystemError;
    }
    st.sent += static_cast<size_t>(w);
  }
  *finished = st.sent == total;
  return Status::kOk;
}

void SendComm::tcpInfo(int rail, uint32_t* rttUs, uint64_t* retransmits) const {
  *rttUs = 0;
  *retransmits = 0;
  for (const Stream& st : streams_) {
    if (st.s.rail != rail) continue;
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
  auto finish = [&](Stream& st) {
    st.busy = false;
    sched_.onWritten(st.s.rail, now);
    if (++st.req->done == st.req->need) st.req->complete = true;
  };
  for (Stream& st : streams_) {
    if (!st.busy) continue;
    bool finished = false;
    if (Status s = writeSome(st, &finished); s != Status::kOk) return failed_ = s;
    if (finished) finish(st);
  }
  while (pullSeq_ < posted_) {
    std::fill(railIdle_.begin(), railIdle_.end(), false);
    for (const Stream& st : streams_) {
      if (!st.busy) railIdle_[st.s.rail] = true;
    }
    int rail = sched_.pick(railIdle_);
    if (rail < 0) break;
    for (Stream& st : streams_) {
      if (st.busy || st.s.rail != rail) continue;
      pullChunk(st, now);
      bool finished = false;
      if (Status s = writeSome(st, &finished); s != Status::kOk) return failed_ = s;
      if (finished) finish(st);
      break;
    }
  }
  return Status::kOk;
}

// ---- receive ----

RecvComm::RecvComm(std::vector<StreamFd> streams) {
  for (const StreamFd& s : streams) streams_.push_back(Stream{s});
  for (Request& r : reqs_) resetRequest(r, ReqKind::kRecv, this, nullptr, 0, 0, 0);
}

RecvComm::~RecvComm() {
  for (Stream& st : streams_) close(st.s.fd);
}

Request* RecvComm::post(void* data, size_t capacity, int tag) {
  if (posted_ - retired_ >= static_cast<uint64_t>(kMaxRequests)) return nullptr;
  Request& r = reqs_[posted_ % kMaxRequests];
  resetRequest(r, ReqKind::kRecv, this, data, capacity, tag, posted_);
  ++posted_;
  return &r;
}

void RecvComm::retire(Request* r) {
  r->reported = true;
  while (retired_ < posted_ && reqs_[retired_ % kMaxRequests].reported) ++retired_;
}

Status RecvComm::readSome(Stream& st) {
  for (;;) {
    if (st.hdrGot < kHdr) {
      ssize_t n = recv(st.s.fd, reinterpret_cast<char*>(&st.hdr) + st.hdrGot, kHdr - st.hdrGot, MSG_DONTWAIT);
      if (n == 0) {
        if (st.hdrGot != 0) return Status::kRemoteError;
        st.eof = true;  // a clean close between chunks: only an error if a receive still waits on it
        return Status::kOk;
      }
      if (n < 0) {
        if (errno == EINTR) continue;
        return wouldBlock(errno) ? Status::kOk : Status::kSystemError;
      }
      st.hdrGot += static_cast<size_t>(n);
      if (st.hdrGot < kHdr) continue;
      st.payloadGot = 0;
      const ChunkHeader& h = st.hdr;
      if (h.seq < retired_ || h.offset > h.total || h.len > h.total - h.offset) return Status::kInternalError;
    }
    const ChunkHeader& h = st.hdr;
    if (h.seq >= posted_) return Status::kOk;  // NCCL has not posted this receive yet: leave it in the kernel
    Request& r = reqs_[h.seq % kMaxRequests];
    if (!r.sizeKnown) {
      if (h.total > r.size) return Status::kInvalidUsage;  // message larger than the posted buffer
      r.need = h.total;
      r.sizeKnown = true;
    } else if (h.total != r.need) {
      return Status::kInternalError;
    }
    while (st.payloadGot < h.len) {
      ssize_t n = recv(st.s.fd, r.data + h.offset + st.payloadGot, h.len - st.payloadGot, MSG_DONTWAIT);
      if (n == 0) return Status::kRemoteError;
      if (n < 0) {
        if (errno == EINTR) continue;
        return wouldBlock(errno) ? Status::kOk : Status::kSystemError;
      }
      st.payloadGot += static_cast<size_t>(n);
    }
    r.done += h.len;
    if (r.done == r.need) r.complete = true;
    st.hdrGot = 0;
  }
}

Status RecvComm::progress() {
  if (failed_ != Status::kOk) return failed_;
  bool allEof = true;
  for (Stream& st : streams_) {
    if (!st.eof) {
      if (Status s = readSome(st); s != Status::kOk) return failed_ = s;
    }
    allEof = allEof && st.eof;
  }
  if (allEof) {
    for (uint64_t q = retired_; q < posted_; ++q) {
      if (!reqs_[q % kMaxRequests].complete) return failed_ = Status::kRemoteError;  // the peer vanished
    }
  }
  return Status::kOk;
}

}  // namespace wirewise::net
