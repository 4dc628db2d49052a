// The receive side of a comm (see comm.h): posting multi-receives, reading chunk headers and payloads
// straight into the posted buffers, matching messages to buffers by tag, and applying the sender's cut
// notices so that every byte is placed exactly once (copies of resent chunks are dropped).
#include "net/comm.h"

#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstddef>

namespace wirewise::net {

namespace {

constexpr size_t kHdr = sizeof(ChunkHeader);

bool wouldBlock(int err) { return err == EAGAIN || err == EWOULDBLOCK; }

}  // namespace

RecvComm::RecvComm(std::vector<StreamFd> streams, uint64_t railTimeoutNs, uint64_t connId)
    : scratch_(64 << 10), connId_(connId), railTimeoutNs_(railTimeoutNs) {
  // With reopening, every index a connection may ever use has its slot now (fd -1 until reopened), so
  // a cut notice may name a stream whose connection has not been accepted yet.
  streams_.resize(connId != 0 ? std::max<size_t>(streams.size(), kMaxStreams) : streams.size());
  for (size_t i = 0; i < streams.size(); ++i) {
    streams_[i].s = streams[i];
    tuneStream(streams[i].fd, railTimeoutNs);
  }
  if (connId != 0) openReopenListeners();
  dups_.reserve(streams_.size() * kStreamRing);
  for (RecvRequest& r : reqs_) {
    r.kind = ReqKind::kRecv;
    r.comm = this;
  }
}

RecvComm::~RecvComm() {
  for (Stream& st : streams_)
    if (st.s.fd >= 0) close(st.s.fd);
  for (int fd : listenFd_)
    if (fd >= 0) close(fd);
  for (int i = 0; i < nPend_; ++i) close(pend_[i].fd);
}

// One listening socket per rail, on the rail's local address (that of an accepted stream, i.e. the
// handle's), and its ports written once on every stream. Setup only (allocation-free syscalls).
void RecvComm::openReopenListeners() {
  ReopenAdvert adv{kReopenMagic, static_cast<uint16_t>(kMaxRails), 0, {}};
  for (const Stream& st : streams_) {
    const int r = st.s.rail;
    if (st.s.fd < 0 || r < 0 || r >= kMaxRails || listenFd_[r] >= 0) continue;
    sockaddr_storage addr{};
    socklen_t len = sizeof addr;
    if (getsockname(st.s.fd, reinterpret_cast<sockaddr*>(&addr), &len) != 0) continue;
    if (addr.ss_family == AF_INET) reinterpret_cast<sockaddr_in*>(&addr)->sin_port = 0;
    else if (addr.ss_family == AF_INET6) reinterpret_cast<sockaddr_in6*>(&addr)->sin6_port = 0;
    else continue;  // e.g. socketpairs in tests
    int fd = socket(addr.ss_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (fd < 0) continue;
    if (bind(fd, reinterpret_cast<const sockaddr*>(&addr), len) != 0 || ::listen(fd, 4) != 0 ||
        getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len) != 0) {
      close(fd);
      continue;
    }
    listenFd_[r] = fd;
    adv.ports[r] = addr.ss_family == AF_INET ? reinterpret_cast<sockaddr_in*>(&addr)->sin_port
                                             : reinterpret_cast<sockaddr_in6*>(&addr)->sin6_port;
  }
  // A fresh stream's send buffer is empty, so the 16 bytes go out whole; a failure only means no reopening.
  for (const Stream& st : streams_)
    if (st.s.fd >= 0) (void)send(st.s.fd, &adv, sizeof adv, MSG_DONTWAIT | MSG_NOSIGNAL);
}

// Connections from a sender reopening dead streams: accepted at most every 10 ms, their hello read, and
// the new stream put in the slot of the index it names (fresh, at byte 0). Anything else is dropped.
void RecvComm::acceptReopens(uint64_t nowNs) {
  if (connId_ == 0 || nowNs < nextAcceptNs_) return;
  nextAcceptNs_ = nowNs + 10'000'000;
  for (int lfd : listenFd_) {
    while (lfd >= 0) {
      int fd = accept4(lfd, nullptr, nullptr, SOCK_NONBLOCK | SOCK_CLOEXEC);
      if (fd < 0 && (errno == EINTR || errno == ECONNABORTED)) continue;
      if (fd < 0) break;
      if (nPend_ == kMaxPendingReopens) {
        close(fd);
        continue;
      }
      pend_[nPend_++] = PendingReopen{fd, Hello{}, 0, nowNs};
    }
  }
  for (int i = 0; i < nPend_;) {
    PendingReopen& p = pend_[i];
    ssize_t n = 0;
    while (p.got < sizeof(Hello)) {
      n = recv(p.fd, reinterpret_cast<char*>(&p.hello) + p.got, sizeof(Hello) - p.got, MSG_DONTWAIT);
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) break;
      p.got += static_cast<size_t>(n);
    }
    const bool waiting = p.got < sizeof(Hello) && n < 0 && wouldBlock(errno) && nowNs - p.sinceNs < railTimeoutNs_;
    if (waiting) {
      ++i;
      continue;
    }
    const Hello& h = p.hello;
    const bool ok = p.got == sizeof(Hello) && validHello(h) && h.reserved == kHelloReopen && h.connId == connId_ &&
                    h.streamIndex < streams_.size() && streams_[h.streamIndex].s.fd < 0 &&
                    streams_[h.streamIndex].pos == 0;
    if (ok) {
      Stream& st = streams_[h.streamIndex];
      st.s = StreamFd{p.fd, h.rail};
      tuneStream(p.fd, railTimeoutNs_);
      ++reopened_;
    } else {
      close(p.fd);
    }
    pend_[i] = pend_[--nPend_];
  }
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
  for (size_t i = 0; i < dups_.size();) {
    if (dups_[i].seq == h.seq && dups_[i].offset == h.offset) {
      dups_[i] = dups_.back();
      dups_.pop_back();
      st.discard = true;
      return Status::kOk;
    }
    if (dups_[i].seq < retiredMsgs_) {  // its message is complete: every later copy is dropped anyway
      dups_[i] = dups_.back();
      dups_.pop_back();
      continue;
    }
    ++i;
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
  if (st.cutAt != UINT64_MAX) return Status::kOk;  // the same notice from another stream (a stream dies once)
  st.cutAt = pos;
  if (st.pos <= pos) return Status::kOk;  // it will stop there
  for (int i = 0; i < st.seenCount; ++i) {
    const Seen& s = st.seen[i];
    if (s.start >= pos && dups_.size() < dups_.capacity()) dups_.push_back(Dup{s.seq, s.offset});
  }
  if (st.hdrGot > 0 && st.itemStart >= pos) {
    // As in applySkip: a half-read duplicate of a placed chunk makes its next copy a duplicate too.
    if (st.hdrGot == kHdr && st.routed && st.discard && !st.skipped && dups_.size() < dups_.capacity())
      dups_.push_back(Dup{st.hdr.seq, st.hdr.offset});
    st.hdrGot = 0;
    st.payloadGot = 0;
    st.routed = false;
  }
  if (st.hdrGot == 0) st.stopped = true;
  return Status::kOk;
}

// Stream `k` lives on, but the data chunks that start in [from, to) on it were hedged: copies went out
// on other streams behind this notice. Whichever copy is read second is dropped: originals read already
// (in `seen`) make their copies duplicates; originals read from now on are skipped, a half-read one
// included (the copy rewrites its bytes whole). Every stream carries the notice; repeats are ignored.
Status RecvComm::applySkip(int k, uint64_t from, uint64_t to) {
  Stream& st = streams_[static_cast<size_t>(k)];
  if (to <= st.skipsTo) return Status::kOk;  // the same notice from another stream (ranges only grow)
  if (from < st.skipsTo) return Status::kInternalError;
  st.skipsTo = to;
  for (int i = 0; i < st.seenCount; ++i) {
    const Seen& s = st.seen[i];
    if (s.start >= from && s.start < to && dups_.size() < dups_.capacity()) dups_.push_back(Dup{s.seq, s.offset});
  }
  if (st.hdrGot == kHdr && st.itemStart >= from && st.itemStart < to && !st.skipped) {
    // A copy that duplicates a placed one (its dup entry is used up) makes the hedged copy a duplicate.
    if (st.discard && dups_.size() < dups_.capacity()) dups_.push_back(Dup{st.hdr.seq, st.hdr.offset});
    st.discard = st.skipped = true;
    st.routed = true;  // mid-payload, or routed later: either way it is drained from here on
  }
  if (st.pos >= to) return Status::kOk;  // nothing of the range is left to read
  if (st.nSkips == kMaxSkips) return Status::kInternalError;  // the sender hedges again only once acknowledged
  st.skips[st.nSkips++] = Skip{from, to};
  return Status::kOk;
}

// Whether the data chunk whose header was just read lies in a hedged range; ranges already passed go.
bool RecvComm::inSkip(Stream& st) const {
  int keep = 0;
  bool in = false;
  for (int i = 0; i < st.nSkips; ++i) {
    const Skip s = st.skips[i];
    in = in || (st.itemStart >= s.from && st.itemStart < s.to);
    if (st.pos < s.to) st.skips[keep++] = s;
  }
  st.nSkips = keep;
  return in;
}

Status RecvComm::readSome(Stream& st) {
  const int nStreams = static_cast<int>(streams_.size());
  if (st.s.fd < 0) return Status::kOk;  // an index not reopened (yet)
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
        const ChunkHeader h = st.hdr;
        Status s = h.total == 0 ? applyCut(h.cutStream, h.offset) : applySkip(h.cutStream, h.offset, h.total);
        if (s != Status::kOk) return s;
        continue;
      }
      st.discard = st.skipped = false;
      if (st.nSkips > 0 && inSkip(st)) {  // a hedged original: its copy places it (checked before the dups)
        st.discard = st.skipped = true;
        st.routed = true;
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
      skipped_ += st.skipped ? 1 : 0;
    } else {
      RecvSlot& s = *st.slot;
      s.got += h.len;
      if (s.got > s.size) return Status::kInternalError;  // never complete on double-counted bytes
      if (s.got == s.size) {
        s.done = true;
        if (++st.req->doneSlots == st.req->n) st.req->complete = true;
      }
    }
    // Remembered whenever some copy of the chunk is placed (this one, or an earlier one it duplicated),
    // so that a cut over this position turns a further copy into a duplicate. Not a skipped original:
    // its placing copy may still be on the way.
    if (!st.skipped) {
      st.seen[st.seenNext] = Seen{h.seq, h.offset, st.itemStart};
      st.seenNext = (st.seenNext + 1) % kStreamRing;
      st.seenCount = std::min(st.seenCount + 1, kStreamRing);
    }
    st.hdrGot = 0;
    st.routed = false;
    st.discard = st.skipped = false;
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
    // Each pass starts one stream further on: a fixed order drains the first streams' socket queues
    // first, so their rail's acknowledgements come sooner and its measured rate (and share) creeps up.
    const size_t n = streams_.size();
    for (size_t k = 0; k < n; ++k) {
      if (Status s = readSome(streams_[(firstStream_ + k) % n]); s != Status::kOk) return failed_ = s;
    }
    // Only slots with a stream count (the others wait for a reopen), so the rotation stays fair.
    for (size_t k = 0; k < n; ++k) {
      firstStream_ = (firstStream_ + 1) % n;
      if (streams_[firstStream_].s.fd >= 0) break;
    }
    uint64_t after = 0;
    for (const Stream& st : streams_) after += st.pos;
    if (!waited_ || after == before) break;
  }
  acceptReopens(monotonicNs());
  bool allStopped = true;
  for (const Stream& st : streams_) allStopped = allStopped && (st.stopped || st.s.fd < 0);
  if (allStopped) {
    for (uint64_t q = retired_; q < posted_; ++q) {
      if (!reqs_[q % kMaxRequests].complete) return failed_ = Status::kRemoteError;  // the peer vanished
    }
  }
  return Status::kOk;
}

}  // namespace wirewise::net
