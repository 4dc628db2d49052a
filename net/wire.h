// What crosses the wire and the 128-byte handle NCCL exchanges between ranks. Both ends run the same
// library build, so these are fixed-layout PODs copied with memcpy (never cast from unaligned bytes).
#pragma once

#include <cstddef>
#include <cstdint>

namespace wirewise::net {

inline constexpr uint32_t kHandleMagic = 0x57574e31;  // "WWN1"
inline constexpr uint32_t kHelloMagic = 0x57574831;   // "WWH1"
inline constexpr int kMaxRails = 4;
inline constexpr int kMaxStreams = 16;

struct HandleAddr {
  uint16_t family;   // AF_INET or AF_INET6
  uint16_t port;     // network byte order
  uint8_t addr[16];  // in_addr or in6_addr bytes
};

// listen() fills everything but `stage`, which it zeroes: the connector keeps its in-progress connect
// there between calls, as NCCL hands connect() the same handle buffer each time.
struct NetHandle {
  uint32_t magic;
  uint8_t version;
  uint8_t nRails;
  uint8_t reserved[2];
  uint64_t stage;
  HandleAddr rails[kMaxRails];
};
static_assert(sizeof(NetHandle) <= 128, "NCCL_NET_HANDLE_MAXSIZE");

// First bytes on every stream of a connection: lets the acceptor group streams into one recv comm.
struct Hello {
  uint32_t magic;
  uint16_t streamIndex;
  uint16_t nStreams;
  uint16_t rail;
  uint16_t reserved;
  uint32_t reserved2;
  uint64_t connId;
};
static_assert(sizeof(Hello) == 24);

// Precedes every chunk. seq numbers messages in isend order; a zero-byte message is one chunk of len 0.
struct ChunkHeader {
  uint64_t seq;
  uint64_t total;
  uint64_t offset;
  uint32_t len;
  int32_t tag;
};
static_assert(sizeof(ChunkHeader) == 32);

}  // namespace wirewise::net
