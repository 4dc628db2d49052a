// The receiver places every chunk exactly once, whatever copies of it arrive on which streams and in what
// order (resends after a stream died, hedged copies of a slow rail's chunks): one bit per chunk of every
// posted buffer. Chunks are written by hand on socketpairs into a real RecvComm, with no cut notices at
// all, so each case is exact: the bitmap alone must keep a message from completing early, keep a late copy
// from writing into a buffer NCCL already has back, and drop any number of copies.
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <memory>
#include <random>
#include <vector>

#include <gtest/gtest.h>

#include "net/comm.h"
#include "net/wire.h"

namespace wirewise::net {
namespace {

class Streams {
 public:
  explicit Streams(int n) {
    std::vector<StreamFd> near;
    for (int i = 0; i < n; ++i) {
      int sv[2];
      EXPECT_EQ(socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK, 0, sv), 0);
      near.push_back({sv[0], i});
      far_.push_back(sv[1]);
    }
    rc = std::make_unique<RecvComm>(near, 1'000'000'000);
  }
  ~Streams() {
    rc.reset();
    for (int fd : far_) close(fd);
  }

  // Writes all of `bytes` on the stream, driving the receiver whenever the socket is full.
  void write(int stream, const void* bytes, size_t n) {
    const char* p = static_cast<const char*>(bytes);
    while (n > 0) {
      ssize_t w = send(far_[static_cast<size_t>(stream)], p, n, MSG_DONTWAIT);
      if (w > 0) {
        p += w;
        n -= static_cast<size_t>(w);
      } else {
        ASSERT_EQ(rc->progress(), Status::kOk);
      }
    }
  }
  // A data chunk's header, then its payload's bytes [0, upTo) (all of it by default).
  void chunk(int stream, uint64_t seq, uint64_t total, uint64_t offset, uint32_t chunkBytes, const char* message,
             size_t upTo = SIZE_MAX) {
    const uint32_t len = static_cast<uint32_t>(std::min<uint64_t>(chunkBytes, total - offset));
    ChunkHeader h{seq, total, offset, len, 0, static_cast<uint16_t>(ChunkKind::kData), 0, chunkBytes};
    write(stream, &h, sizeof h);
    write(stream, message + offset, std::min<size_t>(len, upTo));
  }
  void rest(int stream, const char* bytes, size_t from, size_t to) { write(stream, bytes + from, to - from); }

  std::unique_ptr<RecvComm> rc;

 private:
  std::vector<int> far_;
};

std::vector<char> pattern(size_t n, int seed) {
  std::vector<char> v(n);
  std::mt19937 rng(static_cast<unsigned>(seed));
  for (char& c : v) c = static_cast<char>(rng());
  return v;
}

RecvRequest* postOne(RecvComm& rc, std::vector<char>& buf) {
  void* data[1] = {buf.data()};
  size_t cap[1] = {buf.size()};
  int tag[1] = {0};
  return rc.post(1, data, cap, tag);
}

// The old byte count took three copies of chunk 0 for the whole message: it must wait for chunks 1 and 2.
TEST(ExactlyOnce, CopiesOfAPlacedChunkNeverCompleteAMessage) {
  Streams s(2);
  const auto msg = pattern(3 * 4096, 1);
  std::vector<char> buf(msg.size());
  RecvRequest* r = postOne(*s.rc, buf);
  ASSERT_NE(r, nullptr);
  s.chunk(0, 0, msg.size(), 0, 4096, msg.data());
  s.chunk(1, 0, msg.size(), 0, 4096, msg.data());
  s.chunk(0, 0, msg.size(), 0, 4096, msg.data());
  s.chunk(1, 0, msg.size(), 4096, 4096, msg.data());
  for (int i = 0; i < 4; ++i) ASSERT_EQ(s.rc->progress(), Status::kOk);
  EXPECT_FALSE(r->complete);
  EXPECT_EQ(s.rc->duplicatesDropped(), 2u);
  s.chunk(0, 0, msg.size(), 8192, 4096, msg.data());
  ASSERT_EQ(s.rc->progress(), Status::kOk);
  ASSERT_TRUE(r->complete);
  EXPECT_EQ(r->slots[0].size, msg.size());
  EXPECT_EQ(buf, msg);
}

// A copy half read when the other copy completes the message is drained from then on: NCCL may already
// have reused the buffer, so not one of its remaining bytes may land there.
TEST(ExactlyOnce, ACopyStillBeingReadStopsWritingWhenTheOtherCopyCompletesIt) {
  Streams s(2);
  const auto msg = pattern(8192, 2);
  const auto other = pattern(8192, 3);  // what the late copy's rest carries, to see any write
  std::vector<char> buf(msg.size());
  RecvRequest* r = postOne(*s.rc, buf);
  s.chunk(0, 0, msg.size(), 0, 8192, msg.data(), 4096);
  ASSERT_EQ(s.rc->progress(), Status::kOk);
  EXPECT_FALSE(r->complete);
  s.chunk(1, 0, msg.size(), 0, 8192, msg.data());
  ASSERT_EQ(s.rc->progress(), Status::kOk);
  ASSERT_TRUE(r->complete);
  EXPECT_EQ(buf, msg);
  s.rc->retire(r);
  std::fill(buf.begin(), buf.end(), '\xee');  // NCCL's next use of the buffer
  s.rest(0, other.data(), 4096, 8192);
  ASSERT_EQ(s.rc->progress(), Status::kOk);
  EXPECT_TRUE(std::all_of(buf.begin(), buf.end(), [](char c) { return c == '\xee'; }));
  EXPECT_EQ(s.rc->duplicatesDropped(), 1u);
  // The stream is still in step: the next message on it is placed.
  const auto next = pattern(100, 4);
  std::vector<char> buf2(100);
  RecvRequest* r2 = postOne(*s.rc, buf2);
  s.chunk(0, 1, next.size(), 0, 8192, next.data());
  ASSERT_EQ(s.rc->progress(), Status::kOk);
  ASSERT_TRUE(r2->complete);
  EXPECT_EQ(buf2, next);
}

// Every chunk of 200 messages arrives three times (once per stream) in random order and interleaving:
// 12,800 copies dropped, far beyond any bounded memory of sent copies. A message is complete exactly
// once its last distinct chunk was read, and every byte is right.
TEST(ExactlyOnce, EveryChunkThreeTimesInRandomOrder) {
  Streams s(3);
  constexpr int kMsgs = 200, kChunks = 64;
  constexpr uint32_t kChunk = 512;
  std::mt19937 rng(7);
  for (int m = 0; m < kMsgs; ++m) {
    const size_t size = (kChunks - 1) * kChunk + 1 + rng() % kChunk;  // a short last chunk
    const auto msg = pattern(size, 100 + m);
    std::vector<char> buf(size);
    RecvRequest* r = postOne(*s.rc, buf);
    ASSERT_NE(r, nullptr);
    std::vector<std::pair<int, int>> copies;  // (stream, chunk)
    for (int c = 0; c < kChunks; ++c)
      for (int st = 0; st < 3; ++st) copies.emplace_back(st, c);
    std::shuffle(copies.begin(), copies.end(), rng);
    std::vector<bool> sent(kChunks, false);
    int distinct = 0;
    for (auto [st, c] : copies) {
      s.chunk(st, static_cast<uint64_t>(m), size, static_cast<uint64_t>(c) * kChunk, kChunk, msg.data());
      if (!sent[static_cast<size_t>(c)]) {
        sent[static_cast<size_t>(c)] = true;
        ++distinct;
      }
      if (rng() % 4 == 0) {
        ASSERT_EQ(s.rc->progress(), Status::kOk);
      }
      ASSERT_TRUE(!r->complete || distinct == kChunks) << "message " << m << " complete with " << distinct << " chunks";
    }
    for (int i = 0; i < 8 && !r->complete; ++i) ASSERT_EQ(s.rc->progress(), Status::kOk);
    ASSERT_TRUE(r->complete) << "message " << m;
    ASSERT_EQ(buf, msg) << "message " << m;
    // Copies still in the sockets belong to a retired message: drained, never placed.
    s.rc->retire(r);
  }
  for (int i = 0; i < 8; ++i) ASSERT_EQ(s.rc->progress(), Status::kOk);
  EXPECT_EQ(s.rc->duplicatesDropped(), static_cast<uint64_t>(kMsgs) * kChunks * 2);
}

// The receiver reads each stream through a stage (comm.h): a small chunk's header and payload in one read,
// a longer payload's rest straight into the buffer. Whatever pieces the bytes arrive in (a header cut
// anywhere, several chunks in one read, payloads longer than the stage), every message lands whole.
TEST(StagedReads, AStreamArrivingInPiecesOfAnySizeIsPlacedWhole) {
  Streams s(1);
  std::mt19937 rng(11);
  constexpr int kMsgs = 24;
  std::vector<char> wire;
  std::vector<std::vector<char>> msgs, bufs;
  for (int m = 0; m < kMsgs; ++m) {
    const size_t size = m % 6 == 0 ? 0 : rng() % (3 * 8192 + 1);
    const uint32_t chunk = m % 2 == 0 ? 4096 : 65536;
    msgs.push_back(pattern(size, 300 + m));
    uint64_t off = 0;
    do {
      const uint32_t len = static_cast<uint32_t>(std::min<uint64_t>(chunk, size - off));
      ChunkHeader h{static_cast<uint64_t>(m), size, off, len, 0, static_cast<uint16_t>(ChunkKind::kData), 0, chunk};
      const char* hb = reinterpret_cast<const char*>(&h);
      wire.insert(wire.end(), hb, hb + sizeof h);
      wire.insert(wire.end(), msgs.back().begin() + static_cast<long>(off), msgs.back().begin() + static_cast<long>(off + len));
      off += len;
    } while (off < size);
  }
  std::vector<RecvRequest*> reqs;
  bufs.reserve(kMsgs);
  for (int m = 0; m < kMsgs; ++m) {
    bufs.emplace_back(std::max<size_t>(msgs[static_cast<size_t>(m)].size(), 1), '\xee');
    reqs.push_back(postOne(*s.rc, bufs.back()));
    ASSERT_NE(reqs.back(), nullptr);
  }
  for (size_t at = 0; at < wire.size();) {
    const size_t piece = std::min<size_t>(wire.size() - at, rng() % 3 == 0 ? 1 + rng() % 60 : 1 + rng() % 20000);
    s.rest(0, wire.data(), at, at + piece);
    at += piece;
    ASSERT_EQ(s.rc->progress(), Status::kOk);
  }
  for (int m = 0; m < kMsgs; ++m) {
    const auto& msg = msgs[static_cast<size_t>(m)];
    ASSERT_TRUE(reqs[static_cast<size_t>(m)]->complete) << "message " << m;
    EXPECT_EQ(reqs[static_cast<size_t>(m)]->slots[0].size, msg.size());
    EXPECT_TRUE(std::equal(msg.begin(), msg.end(), bufs[static_cast<size_t>(m)].begin())) << "message " << m;
    s.rc->retire(reqs[static_cast<size_t>(m)]);
  }

  // Two messages in one read, neither receive posted yet: the second waits in the stage, not in the
  // kernel, and is placed once its receive is posted, with no more bytes arriving.
  const auto a = pattern(100, 400), b = pattern(200, 401);
  std::vector<char> both;
  for (uint64_t m = 0; m < 2; ++m) {
    const auto& msg = m == 0 ? a : b;
    ChunkHeader h{kMsgs + m, msg.size(), 0, static_cast<uint32_t>(msg.size()), 0, static_cast<uint16_t>(ChunkKind::kData), 0, 4096};
    const char* hb = reinterpret_cast<const char*>(&h);
    both.insert(both.end(), hb, hb + sizeof h);
    both.insert(both.end(), msg.begin(), msg.end());
  }
  s.rest(0, both.data(), 0, both.size());
  ASSERT_EQ(s.rc->progress(), Status::kOk);
  std::vector<char> bufA(a.size()), bufB(b.size());
  RecvRequest* ra = postOne(*s.rc, bufA);
  ASSERT_EQ(s.rc->progress(), Status::kOk);
  ASSERT_TRUE(ra->complete);
  EXPECT_EQ(bufA, a);
  RecvRequest* rb = postOne(*s.rc, bufB);
  ASSERT_EQ(s.rc->progress(), Status::kOk);
  ASSERT_TRUE(rb->complete);
  EXPECT_EQ(bufB, b);

  // A read that ends inside the next header, after a payload: the header's first bytes stay staged
  // behind the consumed payload, and the next read must join them with the rest.
  const auto c = pattern(100, 402), d = pattern(300, 403);
  std::vector<char> cd;
  for (uint64_t m = 0; m < 2; ++m) {
    const auto& msg = m == 0 ? c : d;
    ChunkHeader h{kMsgs + 2 + m, msg.size(), 0, static_cast<uint32_t>(msg.size()), 0, static_cast<uint16_t>(ChunkKind::kData), 0, 4096};
    const char* hb = reinterpret_cast<const char*>(&h);
    cd.insert(cd.end(), hb, hb + sizeof h);
    cd.insert(cd.end(), msg.begin(), msg.end());
  }
  std::vector<char> bufC(c.size()), bufD(d.size());
  RecvRequest* rc = postOne(*s.rc, bufC);
  RecvRequest* rd = postOne(*s.rc, bufD);
  const size_t cut = sizeof(ChunkHeader) + c.size() + 10;
  s.rest(0, cd.data(), 0, cut);
  ASSERT_EQ(s.rc->progress(), Status::kOk);
  ASSERT_TRUE(rc->complete);
  EXPECT_EQ(bufC, c);
  EXPECT_FALSE(rd->complete);
  s.rest(0, cd.data(), cut, cd.size());
  ASSERT_EQ(s.rc->progress(), Status::kOk);
  ASSERT_TRUE(rd->complete);
  EXPECT_EQ(bufD, d);
}

// Headers that would let one bit stand for a partial chunk, or a message change its chunking, are refused.
TEST(ExactlyOnce, ChunksOffTheMessagesGridAreRefused) {
  auto data = [](uint64_t total, uint64_t offset, uint32_t len, uint32_t chunkBytes) {
    return ChunkHeader{0, total, offset, len, 0, static_cast<uint16_t>(ChunkKind::kData), 0, chunkBytes};
  };
  EXPECT_TRUE(validChunkHeader(data(10000, 4096, 4096, 4096), 1));
  EXPECT_TRUE(validChunkHeader(data(10000, 8192, 1808, 4096), 1));  // the short last chunk
  EXPECT_TRUE(validChunkHeader(data(0, 0, 0, 4096), 1));
  EXPECT_FALSE(validChunkHeader(data(10000, 4000, 4096, 4096), 1));  // off the grid
  EXPECT_FALSE(validChunkHeader(data(10000, 4096, 1000, 4096), 1));  // a partial chunk
  EXPECT_FALSE(validChunkHeader(data(10000, 0, 4096, 0), 1));        // no chunk size
  EXPECT_FALSE(validChunkHeader(data(10000, 10000, 0, 4096), 1));    // past the end
  EXPECT_FALSE(validChunkHeader(data(4097 * 16, 0, 16, 16), 1));     // more chunks than bits
  // Large messages get larger chunks: never more than kMaxChunksPerMessage.
  EXPECT_EQ(messageChunkBytes(1ull << 30, 256 << 10), 256u << 10);
  EXPECT_EQ(messageChunkBytes(4ull << 30, 256 << 10), 1u << 20);
  EXPECT_EQ(chunkCount((1ull << 40) + 1, messageChunkBytes((1ull << 40) + 1, 4096)), kMaxChunksPerMessage);
  EXPECT_EQ(chunkCount(0, 4096), 1u);

  Streams s(2);
  const auto msg = pattern(8192, 5);
  std::vector<char> buf(msg.size());
  postOne(*s.rc, buf);
  s.chunk(0, 0, msg.size(), 0, 4096, msg.data());
  ASSERT_EQ(s.rc->progress(), Status::kOk);
  s.chunk(1, 0, msg.size(), 0, 8192, msg.data());  // the same message with another chunk size
  EXPECT_EQ(s.rc->progress(), Status::kInternalError);
}

}  // namespace
}  // namespace wirewise::net
