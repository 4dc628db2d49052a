// wirewise's TCP transport: the one internal API that every ncclNet_vN shim converts into.
//
// Semantics follow NCCL's net plugin contract (nccl-abi.md §5): listen/connect/accept never block
// (connect and accept return a null comm until the connection is complete), isend/irecv return a null
// request when a comm already has kMaxRequests in flight, and no call ever throws or aborts. Progress
// runs on the transport's engine thread (net/engine.h) and, whenever the comm is free, inside isend,
// irecv and test on NCCL's proxy thread; the two hand requests and completions over without locks. One
// connection = several TCP streams (one or more per rail); messages are cut into chunks that a weighted
// scheduler spreads over idle streams.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "common/settings.h"
#include "net/devices.h"

namespace wirewise::net {

// Mapped to ncclResult_t by the shims: socket failures are system errors, a peer that closed mid-message
// is a remote error, broken invariants (bad handle, wrong comm) are internal errors.
enum class Status { kOk, kSystemError, kInternalError, kInvalidArgument, kInvalidUsage, kRemoteError };

inline constexpr int kMaxRequests = 32;    // NCCL_NET_MAX_REQUESTS: in flight per comm
inline constexpr int kMaxRecvs = 8;        // buffers per irecv (n), matched to messages by tag
inline constexpr size_t kHandleBytes = 128;  // NCCL_NET_HANDLE_MAXSIZE
inline constexpr int kPtrHost = 0x1;       // NCCL_PTR_HOST
inline constexpr uint64_t kMaxMessageBytes = 1ull << 40;  // maxP2pBytes (NCCL_MAX_NET_SIZE_BYTES)

// The hedging factor the tests and benchmarks use when they turn hedging on.
inline constexpr double kHedgeFactorOn = 4.0;

struct TransportConfig {
  int streamsPerRail = defaults::kNetStreams;  // TCP connections per rail in every send/recv comm
  size_t chunkBytes = defaults::kNetChunkKb << 10;  // messages larger than this are striped in chunks of this size
  // A stream with bytes outstanding and no acknowledgement for this long, while the peer's window is
  // open, is dead: its unacknowledged chunks are resent on the other streams.
  uint64_t railTimeoutMs = defaults::kNetRailTimeoutMs;
  uint64_t queueTargetMs = defaults::kNetQueueMs;  // bytes outstanding per rail: at most this long at its measured rate
  // Copy the chunks queued on a rail that slowed down to the others when it would take this many times
  // longer to deliver them (net/comm.h, "hedging"); 0: never (the default; a setting turns it on).
  double hedgeFactor = defaults::kNetHedge;
};

struct DeviceProps {
  const char* name = nullptr;  // lives as long as the library
  uint64_t guid = 0;
  int speedMbps = 0;
  float latencyUs = 0.0f;
  int maxComms = 0;
  int maxRecvs = kMaxRecvs;
  int ptrSupport = kPtrHost;
  size_t maxP2pBytes = 0;
  size_t maxCollBytes = 0;
  // Net v12's railId: a one-interface device is rail `dev` (interfaces are found in the same order on every
  // host); a device striped over several interfaces belongs to no one rail (-1, NCCL's "undefined").
  int railId = -1;
};

// Per-rail accounting of one send comm: bytes assigned (headers included), chunks, the time the rail had
// bytes outstanding, its measured delivery rate (bytes/s) and current share of new chunks.
struct RailStats {
  uint64_t bytes = 0;
  uint64_t chunks = 0;
  uint64_t busyNs = 0;
  double weight = 0.0;        // the measured delivery rate, bytes/s
  double share = 0.0;
  bool up = true;
  uint32_t rttUs = 0;         // kernel's smoothed RTT (TCP_INFO), worst stream of the rail
  uint64_t retransmits = 0;   // TCP_INFO total retransmitted segments, summed over the rail's streams
};

using LogFn = void (*)(const char* msg);

// Library-wide setup; idempotent and thread-safe. Reads the net face's settings (SettingGroup::Net) once
// here, never on the data path. Devices default to discoverDevices() with the interface setting or
// NCCL_SOCKET_IFNAME.
Status netInit(LogFn log);
// NCCL's INFO level (NCCL_DEBUG=INFO, subsystem NET): one line per send comm when it closes, saying what
// it carried on each rail, what was resent or hedged and which streams were reopened.
void setInfoLog(LogFn log);
// Tests inject their own device list and config; call before or instead of netInit's discovery.
void setDevices(std::vector<Device> devices);
void setConfig(const TransportConfig& config);
TransportConfig currentConfig();  // what new comms get (tests: the settings netInit read)
int deviceCount();
Status getProperties(int dev, DeviceProps* props);

Status listen(int dev, void* handle, void** listenComm);
Status connect(int dev, void* handle, void** sendComm);
Status accept(void* listenComm, void** recvComm);
Status regMr(void* comm, void* data, size_t size, int type, void** mhandle);
Status deregMr(void* comm, void* mhandle);
Status isend(void* sendComm, void* data, size_t size, int tag, void** request);
// n (1..kMaxRecvs) buffers under one request: the next n messages of the connection, each placed in the
// buffer with its tag; test() reports n sizes.
Status irecv(void* recvComm, int n, void** data, const size_t* sizes, const int* tags, void** request);
Status iflush(void* recvComm, void** request);
// sizes: one int per buffer of the request (n for irecv, 1 for isend); may be null.
Status test(void* request, int* done, int* sizes);
Status closeSend(void* sendComm);
Status closeRecv(void* recvComm);
Status closeListen(void* listenComm);

// Introspection for tests; rails of a send comm in rail order. Same thread as the data path (it reads the
// scheduler's working state and calls TCP_INFO).
std::vector<RailStats> sendRailStats(void* sendComm);

// What the runtime may read about a send comm's rails from any thread while the comm is open (for
// `rail_shift` events): relaxed atomic reads refreshed at every rate sample (~10 ms of busy time), no
// allocation, lock or syscall. Times are CLOCK_MONOTONIC nanoseconds.
struct RailTelemetry {
  uint64_t bytesDelivered = 0;   // acknowledged by the peer's kernel (headers included)
  double share = 0.0;            // of new chunks, 0..1 (0 for a rail that is down)
  double rateBytesPerS = 0.0;    // measured delivery rate
  bool up = true;
  // Appended for the runtime's rail model; filled by the registry (net/rail_registry.h, one TCP_INFO per
  // stream on the sampler's thread), left 0 by sendTelemetry, which makes no syscall.
  uint32_t rttUs = 0;            // smallest smoothed RTT over the rail's established streams; 0 = unknown
  uint64_t retransmits = 0;      // segments retransmitted, summed over the rail's streams
};
struct CommTelemetry {
  int rails = 0;
  RailTelemetry rail[4];         // kMaxRails
  uint64_t lastShareChangeNs = 0;  // the last time any rail's share moved by 10 points, or a rail died
  uint64_t resentChunks = 0;
  uint64_t hedgedChunks = 0;     // of resentChunks: copies of chunks stuck on a slow (live) rail
};
// False for a null comm. Safe against concurrent progress; never call it after closeSend. The runtime
// reads it through the registry of open send comms (net/rail_registry.h), which closeSend leaves first.
bool sendTelemetry(void* sendComm, CommTelemetry* out);

}  // namespace wirewise::net
