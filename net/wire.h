// What crosses the wire and the 128-byte handle NCCL exchanges between ranks. Both ends run the same
// library build, so these are fixed-layout PODs copied with memcpy (never cast from unaligned bytes).
// The parse/validate helpers below are the only places that decide whether peer bytes are acceptable;
// tests/net/fuzz_net_wire.cc drives them (and the code behind them) with arbitrary input.
#pragma once

#include <sys/socket.h>

#include <cstddef>
#include <cstdint>
#include <cstring>

namespace wirewise::net {

inline constexpr uint32_t kHandleMagic = 0x57574e31;  // "WWN1"
inline constexpr uint32_t kHelloMagic = 0x57574831;   // "WWH1"
inline constexpr uint8_t kHandleVersion = 5;          // 5: chunk headers carry the message's chunk size
inline constexpr uint32_t kReopenMagic = 0x57575231;   // "WWR1"
inline constexpr uint16_t kHelloReopen = 1;           // Hello::reserved of a stream that replaces a dead one
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

// The only bytes a receiver ever writes: once, on every stream right after the connection is set up. The
// per-rail ports of the listening sockets the receive comm keeps for the connection's life (0: none), on
// the addresses of the handle. A sender whose stream died connects there again and sends a Hello with
// `reserved` = kHelloReopen, the connection id and a stream index not used before in the connection.
struct ReopenAdvert {
  uint32_t magic;
  uint16_t nRails;
  uint16_t reserved;
  uint16_t ports[kMaxRails];  // network byte order
};
static_assert(sizeof(ReopenAdvert) == 16);

enum class ChunkKind : uint16_t { kData = 1, kCut = 2 };

// A message is cut at multiples of its chunk size, so a chunk is named by its index (offset / chunkBytes)
// and the receiver keeps one bit per chunk: a copy whose bit is set is dropped, and the message is whole
// when every bit is. The bitmap is fixed per posted buffer, so messages have at most kMaxChunksPerMessage
// chunks: larger ones use larger chunks (messageChunkBytes).
inline constexpr uint64_t kMaxChunksPerMessage = 4096;

inline uint64_t chunkCount(uint64_t total, uint64_t chunkBytes) {
  return total == 0 ? 1 : (total + chunkBytes - 1) / chunkBytes;
}

// The sender's chunk size for a message: the configured one, or larger when the message would otherwise
// need more than kMaxChunksPerMessage chunks (1 GiB at 256 KiB). configured is 4 KiB..1 GiB (settings).
inline uint32_t messageChunkBytes(uint64_t size, uint64_t configured) {
  const uint64_t least = (size + kMaxChunksPerMessage - 1) / kMaxChunksPerMessage;
  return static_cast<uint32_t>(configured > least ? configured : least);
}

// Precedes every chunk. seq numbers messages in isend order; a zero-byte message is one chunk of len 0.
// A kCut notice (no payload) tells the receiver that chunks of stream `cutStream` from byte `offset` on are
// resent on other streams. total 0: the stream died at the sender, nothing at or after `offset` may be
// used. total > offset: the stream lives on but was too slow (hedged); the data chunks that start in
// [offset, total) are copies to drop (the stream is still read through them), later ones count again.
struct ChunkHeader {
  uint64_t seq;
  uint64_t total;
  uint64_t offset;
  uint32_t len;
  int32_t tag;
  uint16_t kind;
  uint16_t cutStream;
  uint32_t chunkBytes;  // data: the message's chunk size (every chunk but the last is this long); cut: 0
};
static_assert(sizeof(ChunkHeader) == 40);

// A handle as a peer wrote it: magic, version, 1..kMaxRails rails of a known family. `stage` is ours.
inline bool parseHandle(const void* bytes, NetHandle* out) {
  std::memcpy(out, bytes, sizeof *out);
  if (out->magic != kHandleMagic || out->version != kHandleVersion || out->nRails < 1 || out->nRails > kMaxRails)
    return false;
  for (int r = 0; r < out->nRails; ++r) {
    if (out->rails[r].family != AF_INET && out->rails[r].family != AF_INET6) return false;
    if (out->rails[r].port == 0) return false;
  }
  return true;
}

inline bool validHello(const Hello& h) {
  if (h.reserved == kHelloReopen) return h.magic == kHelloMagic && h.streamIndex < kMaxStreams && h.rail < kMaxRails;
  return h.magic == kHelloMagic && h.nStreams >= 1 && h.nStreams <= kMaxStreams && h.streamIndex < h.nStreams &&
         h.rail < kMaxRails;
}

// Structural checks only; whether the chunk fits the posted buffer is the receiver's business.
inline bool validChunkHeader(const ChunkHeader& h, int nStreams) {
  if (h.kind == static_cast<uint16_t>(ChunkKind::kCut))
    return h.len == 0 && h.cutStream < nStreams && (h.total == 0 || h.total > h.offset);
  if (h.kind != static_cast<uint16_t>(ChunkKind::kData) || h.chunkBytes == 0) return false;
  if (h.total == 0) return h.offset == 0 && h.len == 0;
  if (chunkCount(h.total, h.chunkBytes) > kMaxChunksPerMessage || h.offset >= h.total || h.offset % h.chunkBytes != 0)
    return false;
  const uint64_t rest = h.total - h.offset;
  return h.len == (rest < h.chunkBytes ? rest : h.chunkBytes);  // whole chunks only: one bit names all of it
}

}  // namespace wirewise::net
