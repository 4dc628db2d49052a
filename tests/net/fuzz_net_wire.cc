// libFuzzer target for everything the net plugin parses from peers: the 128-byte handle (parseHandle and
// the addresses it yields), the per-stream hello through the real acceptStep (bytes arrive on socketpairs
// standing in for accepted connections), and the chunk/cut-notice stream through a real RecvComm with
// posted multi-receives. Arbitrary bytes must never crash, hang or write outside the posted buffers.
#include <arpa/inet.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <vector>

#include "net/comm.h"
#include "net/setup.h"
#include "net/wire.h"
#include "tests/common/fuzz_input.h"

using namespace wirewise::net;

namespace {

using wirewise::fuzz::Input;

// Feeds `in` to the far ends of `fds` in pieces whose sizes come from the input, then hangs up.
void feed(Input& in, const std::vector<int>& far) {
  size_t k = 0;
  while (in.n > 0) {
    size_t piece = std::min<size_t>(in.n, 1 + in.byte() % 64);
    ssize_t w = send(far[k % far.size()], in.p, piece, MSG_DONTWAIT | MSG_NOSIGNAL);
    if (w <= 0) break;
    in.p += w;
    in.n -= static_cast<size_t>(w);
    ++k;
  }
  for (int fd : far) close(fd);
}

void fuzzHandle(Input in) {
  char buf[kHandleBytes] = {};
  std::memcpy(buf, in.p, std::min(in.n, sizeof buf));
  NetHandle h;
  if (!parseHandle(buf, &h)) return;
  for (int r = 0; r < h.nRails; ++r) {
    char text[INET6_ADDRSTRLEN];
    (void)inet_ntop(h.rails[r].family, h.rails[r].addr, text, sizeof text);
  }
}

void fuzzHello(Input in) {
  ListenComm lc;
  lc.railTimeoutNs = 1'000'000'000;
  std::vector<int> far;
  const int streams = 1 + in.byte() % 4;
  for (int i = 0; i < streams; ++i) {
    int sv[2];
    if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK, 0, sv) != 0) break;
    lc.pending.push_back({sv[0], Hello{}, 0});
    far.push_back(sv[1]);
  }
  if (far.empty()) return;
  feed(in, far);
  for (int step = 0; step < 8; ++step) {
    RecvComm* rc = nullptr;
    if (acceptStep(&lc, &rc) != Status::kOk) break;
    delete rc;
  }
}

void fuzzChunks(Input in) {
  std::vector<StreamFd> near;
  std::vector<int> far;
  const int streams = 1 + in.byte() % 3;
  for (int i = 0; i < streams; ++i) {
    int sv[2];
    if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK, 0, sv) != 0) break;
    near.push_back({sv[0], i});
    far.push_back(sv[1]);
  }
  if (far.empty()) return;
  RecvComm rc(near, 1'000'000'000);
  // Up to four receives of up to kMaxRecvs small buffers, tags 0..3.
  std::vector<std::vector<char>> bufs;
  bufs.reserve(4 * kMaxRecvs);
  std::vector<RecvRequest*> reqs;
  const int nReqs = 1 + in.byte() % 4;
  for (int q = 0; q < nReqs; ++q) {
    int n = 1 + in.byte() % kMaxRecvs;
    void* data[kMaxRecvs];
    size_t caps[kMaxRecvs];
    int tags[kMaxRecvs];
    for (int i = 0; i < n; ++i) {
      caps[i] = in.byte() * 16u;
      bufs.emplace_back(caps[i]);
      data[i] = bufs.back().data();
      tags[i] = in.byte() % 4;
    }
    if (RecvRequest* r = rc.post(n, data, caps, tags)) reqs.push_back(r);
  }
  feed(in, far);
  for (int step = 0; step < 16; ++step)
    if (rc.progress() != Status::kOk) break;
  for (RecvRequest* r : reqs)
    if (r->complete) rc.retire(r);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  Input in{data, size};
  switch (in.byte() % 3) {
    case 0: fuzzHandle(in); break;
    case 1: fuzzHello(in); break;
    default: fuzzChunks(in); break;
  }
  return 0;
}
