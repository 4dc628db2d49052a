// wirewise's TCP transport: the one internal API that every ncclNet_vN shim converts into.
//
// Semantics follow NCCL's net plugin contract (nccl-abi.md §5): listen/connect/accept never block
// (connect and accept return a null comm until the connection is complete), isend/irecv return a null
// request when a comm already has kMaxRequests in flight, progress is driven from test() on NCCL's
// proxy progress thread, and no call ever throws or aborts. One connection = several TCP streams (one or
// more per rail); messages are cut into chunks that a weighted scheduler spreads over idle streams.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "net/devices.h"

namespace wirewise::net {

// Mapped to ncclResult_t by the shims: socket failures are system errors, a peer that closed mid-message
// is a remote error, broken invariants (bad handle, wrong comm) are internal errors.
enum class Status { kOk, kSystemError, kInternalError, kInvalidArgument, kInvalidUsage, kRemoteError };

inline constexpr int kMaxRequests = 32;    // NCCL_NET_MAX_REQUESTS: in flight per comm
inline constexpr int kMaxRecvs = 1;        // grouped receives per irecv (n); tags are carried on the wire
inline constexpr size_t kHandleBytes = 128;  // NCCL_NET_HANDLE_MAXSIZE
inline constexpr int kPtrHost = 0x1;       // NCCL_PTR_HOST

struct TransportConfig {
  int streamsPerRail = 1;          // TCP connections per rail in every send/recv comm
  size_t chunkBytes = 256 << 10;   // messages larger than this are striped in chunks of this size
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
};

// Per-rail accounting of one send comm (bytes handed to the kernel and the time chunks spent queued on
// the stream), the raw material for throughput-following weights.
struct RailStats {
  uint64_t bytes = 0;
  uint64_t chunks = 0;
  uint64_t busyNs = 0;
  double weight = 0.0;
  uint32_t rttUs = 0;         // kernel's smoothed RTT (TCP_INFO), worst stream of the rail
  uint64_t retransmits = 0;   // TCP_INFO total retransmitted segments, summed over the rail's streams
};

using LogFn = void (*)(const char* msg);

// Library-wide setup; idempotent and thread-safe. Reads WIREWISE_NET_STREAMS and WIREWISE_NET_CHUNK_KB
// once here (never on the data path). Devices default to discoverDevices().
Status netInit(LogFn log);
// Tests inject their own device list and config; call before or instead of netInit's discovery.
void setDevices(std::vector<Device> devices);
void setConfig(const TransportConfig& config);
int deviceCount();
Status getProperties(int dev, DeviceProps* props);

Status listen(int dev, void* handle, void** listenComm);
Status connect(int dev, void* handle, void** sendComm);
Status accept(void* listenComm, void** recvComm);
Status regMr(void* comm, void* data, size_t size, int type, void** mhandle);
Status deregMr(void* comm, void* mhandle);
Status isend(void* sendComm, void* data, size_t size, int tag, void** request);
Status irecv(void* recvComm, int n, void** data, const size_t* sizes, const int* tags, void** request);
Status iflush(void* recvComm, void** request);
// sizes: one int per buffer of the request (n for irecv, 1 for isend); may be null.
Status test(void* request, int* done, int* sizes);
Status closeSend(void* sendComm);
Status closeRecv(void* recvComm);
Status closeListen(void* listenComm);

// Introspection for tests and telemetry; rails of a send comm in rail order.
std::vector<RailStats> sendRailStats(void* sendComm);

}  // namespace wirewise::net
