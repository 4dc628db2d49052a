// The receive side of a comm (see comm.h): posting multi-receives, reading chunk headers and payloads
// straight into the posted buffers, matching messages to buffers by tag, placing every chunk exactly once
// (one bit per chunk: copies of resent or hedged chunks are dropped), and stopping at the sender's cuts.
#include "net/comm.h"

#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstddef>
#include <cstring>

namespace wirewise::net {

RecvComm::RecvComm(std::vector<StreamFd> streams, uint64_t railTimeoutNs, uint64_t connId)
    : scratch_(64 << 10), bits_(static_cast<size_t>(kMaxRequests) * kMaxRecvs * kBitWords),
      connId_(connId), railTimeoutNs_(railTimeoutNs) {
  // With reopening, every index a connection may ever use has its slot now (fd -1 until reopened), so
  // a cut notice may name a stream whose connection has not been accepted yet.
  streams_.resize(connId != 0 ? std::max<size_t>(streams.size(), kMaxStreams) : streams.size());
  stage_.resize(streams_.size() * kStage);
  polls_.resize(streams_.size());
  pollOf_.resize(streams_.size());
  for (size_t i = 0; i < streams_.size(); ++i) streams_[i].stage = i * kStage;
  for (size_t i = 0; i < streams.size(); ++i) {
    streams_[i].s = streams[i];
    tuneStream(streams[i].fd, railTimeoutNs);
  }
  if (connId != 0) openReopenListeners();
}

RecvComm::~RecvComm() {
  for (Stream& st : streams_)
    if (st.s.fd >= 0) close(st.s.fd);
  for (int fd : listenFd_)
    if (fd >= 0) close(fd);
  for (int i = 0; i < nPend_; ++i) close(pend_[i].fd);
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
    r.slots[i].bits = &bits_[((posted_ % kMaxRequests) * kMaxRecvs + static_cast<size_t>(i)) * kBitWords];
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
  if (!s.sizeKnown) {
    if (h.total > s.capacity) return Status::kInvalidUsage;  // message larger than the posted buffer
    s.size = h.total;
    s.chunkBytes = h.chunkBytes;
    s.chunks = chunkCount(h.total, h.chunkBytes);  // <= kMaxChunksPerMessage (validChunkHeader)
    std::fill_n(s.bits, (s.chunks + 63) / 64, uint64_t{0});
    s.sizeKnown = true;
  } else if (h.total != s.size || h.chunkBytes != s.chunkBytes) {
    return Status::kInternalError;
  }
  const uint64_t k = h.offset / s.chunkBytes;
  st.discard = s.done || ((s.bits[k / 64] >> (k % 64)) & 1) != 0;  // a copy of a placed chunk
  return Status::kOk;
}

// The stream's chunk is read whole into its buffer: its bit is set, and any other copy of it still being
// read is drained from now on (its message may be complete, and NCCL may reuse the buffer at once).
void RecvComm::place(Stream& st) {
  RecvSlot& s = *st.slot;
  const uint64_t k = st.hdr.offset / s.chunkBytes;
  s.bits[k / 64] |= uint64_t{1} << (k % 64);
  for (Stream& o : streams_) {
    if (&o != &st && o.routed && !o.discard && o.slot == &s && o.hdr.seq == st.hdr.seq && o.hdr.offset == st.hdr.offset)
      o.discard = true;
  }
  if (++s.placed == s.chunks) {
    s.done = true;
    if (++st.req->doneSlots == st.req->n) st.req->complete = true;
  }
}

// Stream `k` died at the sender; everything from byte `pos` on it is resent elsewhere, so it is read up to
// there. Chunks already read past `pos` stay placed (their resent copies find their bits set); a chunk
// half read from there is abandoned (its resend writes it whole).
Status RecvComm::applyCut(int k, uint64_t pos) {
  Stream& st = streams_[static_cast<size_t>(k)];
  if (st.cutAt != UINT64_MAX) return Status::kOk;  // the same notice from another stream (a stream dies once)
  st.cutAt = pos;
  if (st.pos <= pos) return Status::kOk;  // it will stop there
  if (st.hdrGot > 0 && st.itemStart >= pos) {
    st.hdrGot = 0;
    st.payloadGot = 0;
    st.routed = false;
    st.discard = false;
  }
  if (st.hdrGot == 0) st.stopped = true;
  return Status::kOk;
}

// Stream `k` lives on, but the chunks that start in [from, to) on it were copied to other streams. Nothing
// to do: whichever copy of each is read second finds its bit set. Checked only (ranges only grow, as the
// sender hedges a stream again only once the peer has acknowledged its last hedged range).
Status RecvComm::applyHedge(int k, uint64_t from, uint64_t to) {
  Stream& st = streams_[static_cast<size_t>(k)];
  if (to <= st.hedgedTo) return Status::kOk;  // the same notice from another stream
  if (from < st.hedgedTo) return Status::kInternalError;
  st.hedgedTo = to;
  return Status::kOk;
}

// One non-blocking read of up to `want` bytes into `to`: the bytes read (a short read marks the stream
// drained: the kernel had no more), 0 when there is nothing now (or the stream was already drained this
// progress call), -1 at the end of the stream or an error.
ssize_t RecvComm::readInto(Stream& st, char* to, size_t want) {
  if (st.drained) return 0;
  for (;;) {
    ssize_t n = recv(st.s.fd, to, want, MSG_DONTWAIT);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && wouldBlock(errno)) {
      st.drained = true;
      return 0;
    }
    if (n <= 0) return -1;
    st.drained = static_cast<size_t>(n) < want;
    return n;
  }
}

// Reads what the kernel has into the stream's stage, after the bytes still there (readInto's answer).
ssize_t RecvComm::fill(Stream& st) {
  char* base = &stage_[st.stage];
  if (st.stageHead > 0 && !st.drained) {  // only ever a partial header (under kHdr bytes) is left to move
    std::memmove(base, base + st.stageHead, st.stageLen);
    st.stageHead = 0;
  }
  const ssize_t n = readInto(st, base + st.stageLen, kStage - st.stageLen);
  if (n > 0) st.stageLen += static_cast<size_t>(n);
  return n;
}

// The parser moves n staged bytes on: they are now part of the stream's position.
void RecvComm::consume(Stream& st, size_t n) {
  st.stageHead += n;
  st.stageLen -= n;
  st.pos += n;
  if (st.stageLen == 0) st.stageHead = 0;
}

Status RecvComm::readSome(Stream& st) {
  const int nStreams = static_cast<int>(streams_.size());
  if (st.s.fd < 0) return Status::kOk;  // an index not reopened (yet)
  for (;;) {
    if (st.stopped) return Status::kOk;
    if (st.hdrGot < kHdr) {
      if (st.pos >= st.cutAt) {
        st.stopped = true;
        return Status::kOk;
      }
      while (st.stageLen < kHdr) {
        const ssize_t got = fill(st);
        if (got == 0) return Status::kOk;
        if (got < 0) {  // end of file or a dead connection: the sender resends what this stream owed
          st.stopped = true;
          return Status::kOk;
        }
      }
      st.itemStart = st.pos;
      std::memcpy(&st.hdr, &stage_[st.stage + st.stageHead], kHdr);
      consume(st, kHdr);
      st.hdrGot = kHdr;
      if (!validChunkHeader(st.hdr, nStreams)) return Status::kInternalError;
      st.routed = false;
      st.payloadGot = 0;
      if (st.hdr.kind == static_cast<uint16_t>(ChunkKind::kCut)) {
        st.hdrGot = 0;
        const ChunkHeader h = st.hdr;
        Status s = h.total == 0 ? applyCut(h.cutStream, h.offset) : applyHedge(h.cutStream, h.offset, h.total);
        if (s != Status::kOk) return s;
        continue;
      }
      st.discard = false;
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
      if (st.stageLen > 0) {  // staged bytes first
        const size_t take = std::min(left, st.stageLen);
        if (!st.discard) std::memcpy(st.slot->data + h.offset + st.payloadGot, &stage_[st.stage + st.stageHead], take);
        consume(st, take);
        st.payloadGot += take;
        continue;
      }
      if (left < kStage) {  // a short rest: staged with whatever follows it
        const ssize_t got = fill(st);
        if (got == 0) return Status::kOk;
        if (got > 0) continue;
      } else {  // a long rest: straight into the posted buffer (or drained into scratch)
        char* to = st.discard ? scratch_.data() : st.slot->data + h.offset + st.payloadGot;
        const ssize_t n = readInto(st, to, st.discard ? std::min(left, scratch_.size()) : left);
        if (n == 0) return Status::kOk;
        if (n > 0) {
          st.payloadGot += static_cast<size_t>(n);
          st.pos += static_cast<uint64_t>(n);
          continue;
        }
      }
      st.stopped = true;  // end of file or an error: the chunk is abandoned uncounted; its resend fills it whole
      return Status::kOk;
    }
    if (st.discard) {
      ++dropped_;
    } else {
      place(st);
    }
    st.hdrGot = 0;
    st.routed = false;
    st.discard = false;
  }
}

// Which streams are worth a read this progress call. With one or two streams, all (a read that finds
// nothing costs what asking would); with more, one poll asks the kernel about all of them, so that a
// message on one of four rails costs two system calls, not four.
void RecvComm::findReadable() {
  size_t n = 0;
  for (size_t i = 0; i < streams_.size(); ++i) {
    Stream& st = streams_[i];
    st.drained = false;
    if (st.s.fd < 0 || st.stopped) continue;
    polls_[n] = pollfd{st.s.fd, POLLIN, 0};
    pollOf_[n++] = i;
  }
  if (n < 3) return;
  if (poll(polls_.data(), n, 0) < 0) return;  // EINTR or worse: read them all, as without the poll
  for (size_t k = 0; k < n; ++k) {
    // Data, end of file and errors all show in revents; only a stream with none of them has nothing.
    if (polls_[k].revents == 0) streams_[pollOf_[k]].drained = true;
  }
}

Status RecvComm::progress(uint64_t nowNs) {
  if (failed_ != Status::kOk) return failed_;
  nowNs = std::max(nowNs, lastNowNs_);  // never back in time (see SendComm::progress)
  lastNowNs_ = nowNs;
  findReadable();
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
  acceptReopens(nowNs);
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
