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
// (stream, byte position of the first unacknowledged chunk), and the receiver reads the dead stream only up
// to that position. With no stream left the comm fails with kRemoteError.
//
// Exactly once. Whatever the faults, the receiver places each chunk once: it keeps one bit per chunk of
// every posted buffer (chunks sit at multiples of the message's chunk size, wire.h), drops any copy whose
// bit is set, and calls a message whole only when every bit is. A copy still being read when another copy
// of the same chunk completes is drained into scratch from then on, so no byte is written into a buffer
// after NCCL was told it is complete. This needs no memory of which copies were sent where, so it cannot
// run out of it.
//
// Slow rails (hedging). A rail that slows down still holds the chunks queued at its old rate, and their
// messages wait for them. When a rail would need far longer to deliver what it holds than the other rails
// would to carry it as well, its streams' unacknowledged chunks are copied to the other rails behind a
// cut notice that names a range ([first unacknowledged byte, end of the last chunk written)); the stream
// itself lives on. The receiver drops whichever copy of each chunk comes second (its bit is set); the
// notice only tells it why copies arrive (it is checked, not needed).
//
// Reopening. A receive comm keeps one listening socket per rail for its whole life (NCCL closes the listen
// comm right after accept) and writes their ports once on every stream (the only bytes it ever sends). A
// dead stream is replaced by a new one under a stream index not used before in the connection (up to
// kMaxStreams per connection), so every cut notice and position still refers to one incarnation only: the
// old stream's bookkeeping is left as it was, the new one starts at byte 0 and carries only what the
// scheduler gives it from then on. The sender retries after 250 ms, doubling to 4 s, with a non-blocking
// connect polled from progress; the receiver polls its listening sockets every 10 ms.
#pragma once

#include <poll.h>
#include <sys/types.h>

#include <atomic>
#include <cerrno>
#include <cstddef>
#include <cstdint>
#include <vector>

#include "net/scheduler.h"
#include "net/transport.h"
#include "net/wire.h"

namespace wirewise::net {

uint64_t monotonicNs();  // CLOCK_MONOTONIC, nanoseconds

inline constexpr size_t kHdr = sizeof(ChunkHeader);
// A non-blocking socket call found nothing to do: no bytes to read, no room to write.
inline bool wouldBlock(int err) { return err == EAGAIN || err == EWOULDBLOCK; }

inline constexpr int kMaxSendRequests = kMaxRequests * kMaxRecvs;  // NCCL: 32 x maxRecvs isends per comm
inline constexpr int kStreamRing = 64;  // unacknowledged chunks per stream
static_assert(kMaxChunksPerMessage % 64 == 0, "whole bitmap words per buffer");

struct SendRequest {
  const char* data = nullptr;
  uint64_t size = 0;
  int tag = 0;
  uint64_t seq = 0;
  uint32_t chunkBytes = 0;  // this message's chunk size (wire.h, messageChunkBytes)
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
  uint32_t chunkBytes = 0;  // the message's chunk size (the same in every chunk header)
  uint64_t chunks = 0;      // chunkCount(size, chunkBytes)
  uint64_t placed = 0;      // chunks whose every byte is in `data`: done when it reaches `chunks`
  uint64_t* bits = nullptr; // one bit per placed chunk (kMaxChunksPerMessage bits of the comm's pool)
};

struct RecvRequest {
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

// Where a send comm reconnects a dead stream: the peer's rail addresses (ports come from the receiver's
// advertisement) and the local address to bind on each rail (as at setup). Filled by connectStep.
struct ReopenTarget {
  bool enabled = false;
  uint64_t connId = 0;
  int nRails = 0;
  sockaddr_storage peer[kMaxRails] = {};
  socklen_t peerLen[kMaxRails] = {};
  sockaddr_storage local[kMaxRails] = {};
  socklen_t localLen[kMaxRails] = {};  // 0: do not bind
};

inline constexpr uint64_t kReopenFirstNs = 250'000'000;  // first retry after a stream died
inline constexpr uint64_t kReopenMaxNs = 4'000'000'000;  // backoff ceiling

struct CommOptions {
  size_t chunkBytes = 256 << 10;
  uint64_t railTimeoutNs = 2'000'000'000;
  SchedulerParams sched;
  // Hedge a rail whose queue would take this many times longer to drain than the other rails would need
  // to carry it too (and at least 3 queue targets); 0 turns hedging off (the default: TransportConfig).
  double hedgeFactor = 0.0;
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
  // nowNs: the caller's CLOCK_MONOTONIC reading (one per drive, shared with the engine's bookkeeping).
  Status progress(uint64_t nowNs);
  Status progress() { return progress(monotonicNs()); }
  void retire(SendRequest* r);
  const RailScheduler& scheduler() const { return sched_; }
  uint64_t resentChunks() const { return resent_.load(std::memory_order_relaxed); }  // any thread
  uint64_t hedgedChunks() const { return hedged_.load(std::memory_order_relaxed); }  // any thread; in resent too
  int streamsUp() const { return streamsUp_; }
  // The progress engine's wrapper of this comm (net/engine.h): set at connect, cleared at close.
  void* engineCore() const { return engineCore_.load(std::memory_order_acquire); }
  void setEngineCore(void* core) { engineCore_.store(core, std::memory_order_release); }
  // Reconnect dead streams (setup calls it; a comm built without it never reopens).
  void enableReopen(const ReopenTarget& target) { target_ = target; }
  uint64_t reopenedStreams() const { return reopened_.load(std::memory_order_relaxed); }  // any thread
  int streamFd(size_t i) const { return streams_[i].s.fd; }  // tests: inject faults
  size_t streamCount() const { return streams_.size(); }
  // Streams any thread may read (the rail registry's TCP_INFO): set-up ones and reopened ones, which are
  // published once whole. A stream's fd and rail never change, and its fd closes only with the comm.
  size_t publishedStreams() const { return published_.load(std::memory_order_acquire); }
  StreamFd publishedStream(size_t i) const { return streams_[i].s; }
  // TCP_INFO of the rail's live streams, worst RTT (introspection on the data path's thread).
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
    uint64_t end;  // 0: the stream died; else chunks starting in [pos, end) are hedged copies
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
    // Pending notices: at most one per other stream from a hedge pass (none starts while any is pending)
    // plus one per other stream that dies meanwhile.
    Cut cuts[2 * kMaxStreams];
    int nCuts = 0;
    uint64_t hedgedTo = 0;  // end of its last hedged range: not hedged again before the peer has it all
    // Dead streams: when to try to reopen, the current backoff, and whether a new stream replaced it.
    bool replaced = false;
    uint64_t reviveAtNs = 0, backoffNs = 0;
    // The receiver's advertisement, read from this stream's reverse direction when first needed.
    ReopenAdvert adv{};
    size_t advGot = 0;
    bool advGone = false;
  };
  struct Opening {  // the one reconnect in flight
    int fd = -1;
    size_t dead = 0;
    bool connected = false;
    size_t helloSent = 0;
    Hello hello{};
    uint64_t startNs = 0;
  };
  struct Resend {
    SendRequest* req;
    uint64_t offset;
    uint32_t len;
  };

  Status writeCurrent(Stream& st);
  void pollAcks(Stream& st, uint64_t nowNs);
  bool peerReading(const Stream& st, bool* established) const;
  bool looksDead(const Stream& st) const;
  void kill(size_t index, uint64_t nowNs);
  void requeue(Stream& st, int n);
  void maybeHedge(uint64_t nowNs);
  void hedge(size_t index);
  void startChunk(Stream& st, uint64_t nowNs);
  void startCut(Stream& st);
  void reopen(uint64_t nowNs);
  void stepOpening(uint64_t nowNs);
  void openFailed(uint64_t nowNs);
  bool readAdvert();

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
  std::atomic<uint64_t> resent_{0}, hedged_{0}, reopened_{0};
  std::atomic<size_t> published_{0};  // streams_ entries other threads may read (publishedStream)
  uint64_t lastHedgeNs_ = 0;
  uint64_t lastNowNs_ = 0;  // the latest clock reading progress was given
  ReopenTarget target_;
  Opening opening_;
  uint16_t ports_[kMaxRails] = {};
  bool havePorts_ = false;
  Status failed_ = Status::kOk;
  std::atomic<void*> engineCore_{nullptr};
};

class RecvComm {
 public:
  // connId != 0: keep listening sockets so that the sender can reopen dead streams (see the top).
  RecvComm(std::vector<StreamFd> streams, uint64_t railTimeoutNs, uint64_t connId = 0);
  ~RecvComm();
  RecvComm(const RecvComm&) = delete;
  RecvComm& operator=(const RecvComm&) = delete;

  // n buffers under one request; each arriving message takes the first free buffer with its tag.
  RecvRequest* post(int n, void* const* data, const size_t* capacities, const int* tags);
  Status progress(uint64_t nowNs);
  Status progress() { return progress(monotonicNs()); }
  void retire(RecvRequest* r);
  uint64_t duplicatesDropped() const { return dropped_; }  // copies of chunks already placed
  // The progress engine's wrapper of this comm (net/engine.h): set at accept, cleared at close.
  void* engineCore() const { return engineCore_.load(std::memory_order_acquire); }
  void setEngineCore(void* core) { engineCore_.store(core, std::memory_order_release); }
  uint64_t reopenedStreams() const { return reopened_; }

 private:
  static constexpr int kMsgRing = 2 * kMaxSendRequests;
  static constexpr size_t kBitWords = kMaxChunksPerMessage / 64;  // per posted buffer
  // Bytes a stream reads ahead of its parser, so that a small chunk's header and payload (4 KiB and more)
  // come in one recv instead of two, and a read that comes back short says the kernel has no more (no
  // read that only finds nothing). The rest of a long payload is read straight into the posted buffer.
  static constexpr size_t kStage = 8192;
  struct Stream {
    StreamFd s;
    ChunkHeader hdr{};
    size_t hdrGot = 0, payloadGot = 0;  // hdrGot: 0, or the whole header once it is parsed
    // Read ahead: stage_[stage, stage + kStage) holds stageLen unparsed bytes from stageHead on (not yet
    // counted in pos). drained: a read this progress call came back short, so the kernel had no more.
    size_t stage = 0, stageHead = 0, stageLen = 0;
    bool drained = false;
    bool routed = false;
    bool discard = false;  // drain and drop: a copy of a chunk already placed (or being placed elsewhere)
    RecvSlot* slot = nullptr;
    RecvRequest* req = nullptr;
    uint64_t pos = 0, itemStart = 0;
    uint64_t cutAt = UINT64_MAX;
    bool stopped = false;  // end of file, an error, or the cut position reached
    uint64_t hedgedTo = 0;  // the end of the last hedged range announced for it (notices only grow)
  };
  struct MsgRoute {
    uint64_t seq = UINT64_MAX;
    RecvRequest* req = nullptr;
    int slot = 0;
  };

  Status readSome(Stream& st);
  void findReadable();
  ssize_t readInto(Stream& st, char* to, size_t want);
  ssize_t fill(Stream& st);
  void consume(Stream& st, size_t n);
  Status route(Stream& st, bool* wait);
  Status applyCut(int stream, uint64_t pos);
  Status applyHedge(int stream, uint64_t from, uint64_t to);
  void place(Stream& st);
  void openReopenListeners();
  void acceptReopens(uint64_t nowNs);

  std::vector<Stream> streams_;
  std::vector<char> scratch_;
  std::vector<char> stage_;  // kStage bytes per stream
  std::vector<pollfd> polls_;  // one per stream: findReadable's poll set
  std::vector<size_t> pollOf_;  // the stream of each entry in polls_
  std::vector<uint64_t> bits_;  // kBitWords per buffer of every request slot
  RecvRequest reqs_[kMaxRequests];
  MsgRoute routes_[kMsgRing];
  uint64_t posted_ = 0, retired_ = 0;
  uint64_t postedMsgs_ = 0, retiredMsgs_ = 0;  // messages covered by posted / retired receives
  bool waited_ = false;
  size_t firstStream_ = 0;  // where the next progress pass starts reading
  uint64_t dropped_ = 0;
  Status failed_ = Status::kOk;
  std::atomic<void*> engineCore_{nullptr};
  // Reopening (connId_ != 0): listening sockets per rail, accepted connections still sending their hello.
  struct PendingReopen {
    int fd;
    Hello hello;
    size_t got;
    uint64_t sinceNs;
  };
  static constexpr int kMaxPendingReopens = 4;
  uint64_t connId_ = 0, railTimeoutNs_ = 0, nextAcceptNs_ = 0, reopened_ = 0;
  uint64_t lastNowNs_ = 0;  // the latest clock reading progress was given
  int listenFd_[kMaxRails] = {-1, -1, -1, -1};
  PendingReopen pend_[kMaxPendingReopens] = {};
  int nPend_ = 0;
};

}  // namespace wirewise::net
