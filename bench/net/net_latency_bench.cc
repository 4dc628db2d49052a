// Small-message round trips over loopback: raw TCP beside the transport with one and four rails.
//
// NCCL's LL and LL128 protocols move small messages, and a send completes only when the peer's kernel has
// acknowledged its bytes (net/comm.h: a dead rail's chunks are resent from NCCL's buffer), so what the
// transport adds per message, and any acknowledgement the kernel holds back, lands on every step. One
// thread plays both ends as NCCL's proxies would: post the receive, send, test both until done, then the
// same the other way. Raw TCP does the same with two plain sockets (TCP_NODELAY, non-blocking). Real time
// per iteration = one round trip. Figures are for loopback on this machine; a wire adds its own RTT.
#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdio>
#include <vector>

#include <benchmark/benchmark.h>

#include "net/devices.h"
#include "net/transport.h"

namespace {

namespace wn = wirewise::net;

// A connected loopback TCP pair (real kernel TCP, not a socketpair).
bool tcpPair(int* a, int* b) {
  int l = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof addr;
  if (l < 0 || bind(l, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0 || listen(l, 1) != 0 ||
      getsockname(l, reinterpret_cast<sockaddr*>(&addr), &len) != 0) {
    if (l >= 0) close(l);
    return false;
  }
  *a = socket(AF_INET, SOCK_STREAM, 0);
  const bool ok = *a >= 0 && connect(*a, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0 &&
                  (*b = accept(l, nullptr, nullptr)) >= 0;
  close(l);
  if (!ok) return false;
  const int one = 1;
  for (int fd : {*a, *b}) {
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK);
  }
  return true;
}

// Moves `size` bytes from `out` to `in`, interleaving non-blocking writes and reads so that a message
// larger than the socket buffers cannot deadlock one thread.
bool tcpMove(int out, int in, char* src, char* dst, size_t size) {
  size_t sent = 0, got = 0;
  while (got < size) {
    if (sent < size) {
      ssize_t n = send(out, src + sent, size - sent, MSG_NOSIGNAL);
      if (n > 0) sent += static_cast<size_t>(n);
      else if (n < 0 && errno != EAGAIN && errno != EINTR) return false;
    }
    ssize_t n = recv(in, dst + got, size - got, 0);
    if (n > 0) got += static_cast<size_t>(n);
    else if (n == 0 || (n < 0 && errno != EAGAIN && errno != EINTR)) return false;
  }
  return true;
}

void BM_RawTcpRoundTrip(benchmark::State& state) {
  const size_t size = static_cast<size_t>(state.range(0));
  int ab[2], ba[2];
  if (!tcpPair(&ab[0], &ab[1]) || !tcpPair(&ba[0], &ba[1])) {
    state.SkipWithError("loopback TCP unavailable");
    return;
  }
  std::vector<char> x(size + 1, 'x'), y(size + 1);
  for (auto _ : state) {
    if (!tcpMove(ab[0], ab[1], x.data(), y.data(), size) || !tcpMove(ba[0], ba[1], y.data(), x.data(), size)) {
      state.SkipWithError("TCP transfer failed");
      break;
    }
  }
  for (int fd : {ab[0], ab[1], ba[0], ba[1]}) close(fd);
}

struct Conn {
  void* listen = nullptr;
  void* send = nullptr;
  void* recv = nullptr;
};

bool connectTransport(int dev, Conn* c) {
  char handle[wn::kHandleBytes];
  if (wn::listen(dev, handle, &c->listen) != wn::Status::kOk) return false;
  const auto start = std::chrono::steady_clock::now();
  while (c->send == nullptr || c->recv == nullptr) {
    if (c->send == nullptr && wn::connect(dev, handle, &c->send) != wn::Status::kOk) return false;
    if (c->recv == nullptr && wn::accept(c->listen, &c->recv) != wn::Status::kOk) return false;
    if (std::chrono::steady_clock::now() - start > std::chrono::seconds(20)) return false;
  }
  return true;
}

void closeTransport(Conn& c) {
  if (c.send != nullptr) wn::closeSend(c.send);
  if (c.recv != nullptr) wn::closeRecv(c.recv);
  if (c.listen != nullptr) wn::closeListen(c.listen);
}

// One message through one connection: the receive posted first, as NCCL posts ahead, then both tested.
bool transportMove(Conn& c, char* src, char* dst, size_t size) {
  void* rreq = nullptr;
  void* sreq = nullptr;
  void* data[1] = {dst};
  const size_t sizes[1] = {size + 1};
  const int tags[1] = {1};
  if (wn::irecv(c.recv, 1, data, sizes, tags, &rreq) != wn::Status::kOk || rreq == nullptr) return false;
  if (wn::isend(c.send, src, size, 1, &sreq) != wn::Status::kOk || sreq == nullptr) return false;
  int sendDone = 0, recvDone = 0;
  while (!sendDone || !recvDone) {
    if (!sendDone && wn::test(sreq, &sendDone, nullptr) != wn::Status::kOk) return false;
    if (!recvDone && wn::test(rreq, &recvDone, nullptr) != wn::Status::kOk) return false;
  }
  return true;
}

// range(0): message bytes; range(1): rails (device 0 has one loopback rail, device 1 four).
void BM_WirewiseRoundTrip(benchmark::State& state) {
  const size_t size = static_cast<size_t>(state.range(0));
  const int dev = state.range(1) == 1 ? 0 : 1;
  Conn ab, ba;
  if (!connectTransport(dev, &ab) || !connectTransport(dev, &ba)) {
    state.SkipWithError("transport connection failed");
    closeTransport(ab);
    closeTransport(ba);
    return;
  }
  std::vector<char> x(size + 1, 'x'), y(size + 1);
  for (auto _ : state) {
    if (!transportMove(ab, x.data(), y.data(), size) || !transportMove(ba, y.data(), x.data(), size)) {
      state.SkipWithError("transport transfer failed");
      break;
    }
  }
  closeTransport(ab);
  closeTransport(ba);
}

void sizes(benchmark::internal::Benchmark* b, bool withRails) {
  for (int64_t size : {8, 4096, 65536, 1 << 20}) {
    if (withRails) {
      b->Args({size, 1});
      b->Args({size, 4});
    } else {
      b->Args({size});
    }
  }
  b->UseRealTime()->Unit(benchmark::kMicrosecond);
}

BENCHMARK(BM_RawTcpRoundTrip)->Apply([](benchmark::internal::Benchmark* b) { sizes(b, false); });
BENCHMARK(BM_WirewiseRoundTrip)->Apply([](benchmark::internal::Benchmark* b) { sizes(b, true); });

}  // namespace

int main(int argc, char** argv) {
  // The library's defaults (chunk size, engine on), on loopback devices instead of discovered interfaces.
  wn::setDevices({wn::loopbackDevice(1), wn::loopbackDevice(4)});
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
