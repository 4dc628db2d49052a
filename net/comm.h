// Send and receive comms: a set of connected non-blocking TCP streams plus a fixed ring of kMaxRequests
// requests. Everything is allocated at connection setup; isend/irecv/test never allocate, lock or log.
// One comm is only ever driven by one thread at a time (NCCL's proxy progress thread).
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "net/scheduler.h"
#include "net/transport.h"
#include "net/wire.h"

namespace wirewise::net {

enum class ReqKind : uint32_t { kSend = 0x53454e44, kRecv = 0x52454356 };

struct Request {
  ReqKind kind;
  void* comm;
  char* data = nullptr;
  uint64_t size = 0;   // send: message size; recv: buffer capacity, then the received size
  int tag = 0;
  uint64_t seq = 0;
  uint64_t done = 0;   // send: chunks fully written; recv: bytes received
  uint64_t need = 0;   // send: chunks in the message; recv: message size once its first header arrived
  bool sizeKnown = false;
  bool complete = false;
  bool reported = false;
};

struct StreamFd {
  int fd = -1;
  int rail = 0;
};

class SendComm {
 public:
  SendComm(std::vector<StreamFd> streams, int nRails, const std::vector<double>& railWeights, size_t chunkBytes);
  ~SendComm();
  SendComm(const SendComm&) = delete;
  SendComm& operator=(const SendComm&) = delete;

  Request* post(void* data, size_t size, int tag);  // null: kMaxRequests already in flight
  Status progress();
  void retire(Request* r);
  const RailScheduler& scheduler() const { return sched_; }
  // TCP_INFO of the rail's streams (setup/telemetry path only: one syscall per stream).
  void tcpInfo(int rail, uint32_t* rttUs, uint64_t* retransmits) const;

 private:
  struct Stream {
    StreamFd s;
    bool busy = false;
    ChunkHeader hdr{};
    const char* payload = nullptr;
    size_t sent = 0;  // of header + payload
    Request* req = nullptr;
  };
  bool pullChunk(Stream& st, uint64_t nowNs);
  Status writeSome(Stream& st, bool* finished);

  std::vector<Stream> streams_;
  std::vector<bool> railIdle_;
  RailScheduler sched_;
  size_t chunkBytes_;
  Request reqs_[kMaxRequests];
  uint64_t posted_ = 0, retired_ = 0;
  uint64_t pullSeq_ = 0, pullOffset_ = 0;
  Status failed_ = Status::kOk;
};

class RecvComm {
 public:
  explicit RecvComm(std::vector<StreamFd> streams);
  ~RecvComm();
  RecvComm(const RecvComm&) = delete;
  RecvComm& operator=(const RecvComm&) = delete;

  Request* post(void* data, size_t capacity, int tag);
  Status progress();
  void retire(Request* r);

 private:
  struct Stream {
    StreamFd s;
    ChunkHeader hdr{};
    size_t hdrGot = 0;
    size_t payloadGot = 0;
    bool eof = false;
  };
  Status readSome(Stream& st);

  std::vector<Stream> streams_;
  Request reqs_[kMaxRequests];
  uint64_t posted_ = 0, retired_ = 0;
  Status failed_ = Status::kOk;
};

uint64_t monotonicNs();

}  // namespace wirewise::net
