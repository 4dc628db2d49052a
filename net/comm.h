// Send and receive comms: a set of connected non-blocking TCP streams plus fixed request rings.
// Everything is allocated at connection setup; isend/irecv/test never allocate, lock or log. One comm is
// only ever driven by one thread at a time (NCCL's proxy progress thread); only the scheduler's published
// telemetry may be read from elsewhere.
//
// Delivery and faults. A send is done when the peer's kernel has acknowledged every byte of it (the send
// queue's unacknowledged count, SIOCOUTQ), not merely when the bytes are in our kernel: until then its
// chunks are remembered per stream, so that when a stream dies (a write error, or bytes outstanding with
// no acknowledgement for `railTimeoutNs` while the peer's window is open) its unacknowledged chunks are
// resent on the surviving streams. Before any resend, every surviving stream carries a cut notice
// (stream, byte position of the first unacknowledged chunk); the receiver reads the dead stream only up to
// that position and drops the copies it already had, so each byte is placed exactly once. With no stream
// left the comm fails with kRemoteError.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <vector>

#include "net/scheduler.h"
#include "net/transport.h"
#include "net/wire.h"

namespace wirewise::net {

enum class ReqKind : uint32_t { kSend = 0x53454e44, kRecv = 0x52454356 };

inline constexpr int kMaxSendRequests = kMaxRequests * kMaxRecvs;  // NCCL: 32 x maxRecvs isends per comm
inline constexpr int kStreamRing = 64;  // unacknowledged chunks per stream

struct RequestBase {
  ReqKind kind;
  void* comm;
};

struct SendRequest : RequestBase {
  const char* data = nullptr;
  uint64_t size = 0;
  int tag = 0;
  uint64_t seq = 0;
  uint64_t need = 0;  // chunks in the message
  uint64_t done = 0;  // chunks acknowledged by the peer's kernel
  bool complete = false;
  bool reported = false;
};

struct RecvSlot {
  char* data = nullptr;
  uint64_t capacity = 0;
  int tag = 0;
  bool assigned = false;  // a message was matched to this buffer
  bool sizeKnown = false;
  bool done = false;
  uint64_t size = 0;  // the sender's size once its first chunk arrived
  uint64_t got = 0;
};

struct RecvRequest : RequestBase {
  uint64_t firstMsg = 0;  // the sender's sequence number of the message for slots[0]'s turn
  int n = 0;
  int assigned = 0;
  int doneSlots = 0;
  bool complete = false;
  bool reported = false;
  RecvSlot slots[kMaxRecvs];
};

struct StreamFd {
  int fd = -1;
  int rail = 0;
};

struct CommOptions {
  size_t chunkBytes = 256 << 10;
  uint64_t railTimeoutNs = 2'000'000'000;
  SchedulerParams sched;
};

// Socket options every stream gets (keepalive derived from the rail timeout, so that a receiver whose
// links all died notices even though it sends no data).
void tuneStream(int fd, uint64_t railTimeoutNs);

class SendComm {
 public:
  SendComm(std::vector<StreamFd> streams, int nRails, const std::vector<double>& railRates, const CommOptions& opt);
  ~SendComm();
  SendComm(const SendComm&) = delete;
  SendComm& operator=(const SendComm&) = delete;

  SendRequest* post(const void* data, size_t size, int tag);  // null: kMaxSendRequests already in flight
  Status progress();
  void retire(SendRequest* r);
  const RailScheduler& scheduler() const { return sched_; }
  uint64_t resentChunks() const { return resent_.load(std::memory_order_relaxed); }  // any thread
  int streamsUp() const { return streamsUp_; }
  int streamFd(size_t i) const { return streams_[i].s.fd; }  // tests: inject faults
  size_t streamCount() const { return streams_.size(); }
  // TCP_INFO of the rail's streams (telemetry path only: one syscall per stream).
  void tcpInfo(int rail, uint32_t* rttUs, uint64_t* retransmits) const;

 private:
  struct Chunk {
    SendRequest* req;
    uint64_t offset;
    uint32_t len;
    uint64_t start, end;  // byte positions on the stream (after the hello)
  };
  struct Cut {
    uint16_t stream;
    uint64_t pos;
  };
  struct Stream {
    StreamFd s;
    bool up = true;
    Chunk ring[kStreamRing];
    int head = 0, count = 0;  // unacknowledged chunks, oldest first; the newest may still be in writing
    bool writing = false;
    bool writingChunk = false;
    ChunkHeader hdr{};
    const char* payload = nullptr;
    size_t sent = 0, total = 0;
    uint64_t written = 0, acked = 0;
    uint64_t lastProgressNs = 0;
    Cut cuts[kMaxStreams];
    int nCuts = 0;
  };
  struct Resend {
    SendRequest* req;
    uint64_t offset;
    uint32_t len;
  };

  Status writeCurrent(Stream& st);
  void pollAcks(Stream& st, uint64_t nowNs);
  bool looksDead(const Stream& st) const;
  void kill(size_t index, uint64_t nowNs);
  void startChunk(Stream& st, uint64_t nowNs);
  void startCut(Stream& st);

  std::vector<Stream> streams_;
  std::vector<Resend> resend_;
  size_t resendHead_ = 0, resendCount_ = 0;
  RailScheduler sched_;
  CommOptions opt_;
  int streamsUp_ = 0;
  bool canTake_[kMaxRails] = {};
  SendRequest reqs_[kMaxSendRequests];
  uint64_t posted_ = 0, retired_ = 0;
  uint64_t pullSeq_ = 0, pullOffset_ = 0;
  std::atomic<uint64_t> resent_{0};
  Status failed_ = Status::kOk;
};

class RecvComm {
 public:
  RecvComm(std::vector<StreamFd> streams, uint64_t railTimeoutNs);
  ~RecvComm();
  RecvComm(const RecvComm&) = delete;
  RecvComm& operator=(const RecvComm&) = delete;

  // n buffers under one request; each arriving message takes the first free buffer with its tag.
  RecvRequest* post(int n, void* const* data, const size_t* capacities, const int* tags);
  Status progress();
  void retire(RecvRequest* r);
  uint64_t duplicatesDropped() const { return dropped_; }

 private:
  static constexpr int kMsgRing = 2 * kMaxSendRequests;
  struct Seen {
    uint64_t seq, offset, start;
  };
  struct Stream {
    StreamFd s;
    ChunkHeader hdr{};
    size_t hdrGot = 0, payloadGot = 0;
    bool routed = false;
    bool discard = false;  // drain and drop: a copy of a chunk already placed
    RecvSlot* slot = nullptr;
    RecvRequest* req = nullptr;
    uint64_t pos = 0, itemStart = 0;
    uint64_t cutAt = UINT64_MAX;
    bool stopped = false;  // end of file, an error, or the cut position reached
    Seen seen[kStreamRing];
    int seenNext = 0, seenCount = 0;
  };
  struct MsgRoute {
    uint64_t seq = UINT64_MAX;
    RecvRequest* req = nullptr;
    int slot = 0;
  };
  struct Dup {
    uint64_t seq, offset;
  };

  Status readSome(Stream& st);
  Status route(Stream& st, bool* wait);
  Status applyCut(int stream, uint64_t pos);

  std::vector<Stream> streams_;
  std::vector<Dup> dups_;
  std::vector<char> scratch_;
  RecvRequest reqs_[kMaxRequests];
  MsgRoute routes_[kMsgRing];
  uint64_t posted_ = 0, retired_ = 0;
  uint64_t postedMsgs_ = 0, retiredMsgs_ = 0;  // messages covered by posted / retired receives
  bool waited_ = false;
  uint64_t dropped_ = 0;
  Status failed_ = Status::kOk;
};

uint64_t monotonicNs();

}  // namespace wirewise::net
