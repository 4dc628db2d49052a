#include "net/setup.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstring>
#include <new>

namespace wirewise::net {

namespace {

struct ConnectStage {
  struct Stream {
    int fd;
    int rail;
    bool connected;
    size_t helloSent;
    Hello hello;
  };
  std::vector<Stream> streams;
  int nRails = 0;
  ReopenTarget reopen;
};

void tune(int fd) {
  int one = 1;
  setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
}

uint64_t freshConnId() {
  static std::atomic<uint64_t> counter{0};
  return (static_cast<uint64_t>(getpid()) << 40) ^ (monotonicNs() << 8) ^ counter.fetch_add(1);
}

socklen_t toSockaddr(const HandleAddr& a, sockaddr_storage* ss) {
  std::memset(ss, 0, sizeof *ss);
  if (a.family == AF_INET) {
    auto* in = reinterpret_cast<sockaddr_in*>(ss);
    in->sin_family = AF_INET;
    in->sin_port = a.port;
    std::memcpy(&in->sin_addr, a.addr, 4);
    return sizeof(sockaddr_in);
  }
  if (a.family == AF_INET6) {
    auto* in6 = reinterpret_cast<sockaddr_in6*>(ss);
    in6->sin6_family = AF_INET6;
    in6->sin6_port = a.port;
    std::memcpy(&in6->sin6_addr, a.addr, 16);
    return sizeof(sockaddr_in6);
  }
  return 0;
}

bool isLoopback(const sockaddr_storage& ss) {
  if (ss.ss_family != AF_INET) return false;
  return (ntohl(reinterpret_cast<const sockaddr_in*>(&ss)->sin_addr.s_addr) >> 24) == 127;
}

void setStage(void* handle, uint64_t value) {
  std::memcpy(static_cast<char*>(handle) + offsetof(NetHandle, stage), &value, sizeof value);
}

void dropStage(void* handle, ConnectStage* stage) {
  for (auto& s : stage->streams) close(s.fd);
  delete stage;
  setStage(handle, 0);
}

}  // namespace

ListenComm::~ListenComm() {
  for (int fd : fds) close(fd);
  for (Pending& p : pending) close(p.fd);
  for (Group& g : groups)
    for (StreamFd& s : g.fds)
      if (s.fd >= 0) close(s.fd);
}

Status openListen(const Device& dev, const TransportConfig& config, NetHandle* handle, ListenComm** out) {
  auto* lc = new (std::nothrow) ListenComm;
  if (lc == nullptr) return Status::kSystemError;
  lc->railTimeoutNs = config.railTimeoutMs * 1'000'000ull;
  std::memset(handle, 0, sizeof *handle);
  handle->magic = kHandleMagic;
  handle->version = kHandleVersion;
  for (const Rail& rail : dev.rails) {
    if (handle->nRails == kMaxRails) break;
    int fd = socket(rail.addr.ss_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (fd < 0) break;
    lc->fds.push_back(fd);
    int one = 1;
    setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    sockaddr_storage bound = rail.addr;
    socklen_t len = rail.addrLen;
    if (bind(fd, reinterpret_cast<const sockaddr*>(&rail.addr), rail.addrLen) != 0 || ::listen(fd, SOMAXCONN) != 0 ||
        getsockname(fd, reinterpret_cast<sockaddr*>(&bound), &len) != 0) {
      break;
    }
    HandleAddr& a = handle->rails[handle->nRails++];
    a.family = bound.ss_family;
    if (bound.ss_family == AF_INET) {
      auto* in = reinterpret_cast<sockaddr_in*>(&bound);
      a.port = in->sin_port;
      std::memcpy(a.addr, &in->sin_addr, 4);
    } else {
      auto* in6 = reinterpret_cast<sockaddr_in6*>(&bound);
      a.port = in6->sin6_port;
      std::memcpy(a.addr, &in6->sin6_addr, 16);
    }
  }
  if (handle->nRails == 0 || handle->nRails != static_cast<int>(lc->fds.size())) {
    delete lc;
    return Status::kSystemError;
  }
  *out = lc;
  return Status::kOk;
}

Status acceptStep(ListenComm* lc, RecvComm** recvComm) {
  *recvComm = nullptr;
  for (int lfd : lc->fds) {
    for (;;) {
      int fd = accept4(lfd, nullptr, nullptr, SOCK_NONBLOCK | SOCK_CLOEXEC);
      if (fd >= 0) {
        tune(fd);
        lc->pending.push_back({fd, Hello{}, 0});
        continue;
      }
      if (errno == EINTR || errno == ECONNABORTED) continue;
      if (errno == EAGAIN || errno == EWOULDBLOCK) break;
      return Status::kSystemError;
    }
  }
  for (size_t i = 0; i < lc->pending.size();) {
    ListenComm::Pending& p = lc->pending[i];
    ssize_t n = recv(p.fd, reinterpret_cast<char*>(&p.hello) + p.got, sizeof(Hello) - p.got, MSG_DONTWAIT);
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR)) {
      ++i;
      continue;
    }
    if (n > 0) p.got += static_cast<size_t>(n);
    bool complete = p.got == sizeof(Hello);
    const Hello& h = p.hello;
    bool valid = complete && validHello(h) && h.reserved != kHelloReopen;  // reopens go to the recv comm
    if (n > 0 && !complete) continue;  // read the rest of this hello now
    if (!valid) {  // a stranger, a malformed hello or a peer gone mid-setup: drop it, keep listening
      close(p.fd);
      lc->pending.erase(lc->pending.begin() + static_cast<long>(i));
      continue;
    }
    ListenComm::Group* g = nullptr;
    for (auto& grp : lc->groups)
      if (grp.connId == h.connId) g = &grp;
    if (g == nullptr) {
      lc->groups.push_back({h.connId, std::vector<StreamFd>(h.nStreams), 0});
      g = &lc->groups.back();
    }
    if (g->fds.size() != h.nStreams || g->fds[h.streamIndex].fd >= 0) {
      close(p.fd);
    } else {
      g->fds[h.streamIndex] = StreamFd{p.fd, h.rail};
      g->count++;
    }
    lc->pending.erase(lc->pending.begin() + static_cast<long>(i));
  }
  for (size_t i = 0; i < lc->groups.size(); ++i) {
    if (lc->groups[i].count != static_cast<int>(lc->groups[i].fds.size())) continue;
    auto* rc = new (std::nothrow) RecvComm(lc->groups[i].fds, lc->railTimeoutNs, lc->groups[i].connId);
    if (rc == nullptr) return Status::kSystemError;
    lc->groups.erase(lc->groups.begin() + static_cast<long>(i));
    *recvComm = rc;
    return Status::kOk;
  }
  return Status::kOk;
}

Status connectStep(const Device& local, const TransportConfig& config, void* handle, SendComm** sendComm) {
  *sendComm = nullptr;
  NetHandle h;
  if (!parseHandle(handle, &h)) return Status::kInternalError;
  auto* stage = reinterpret_cast<ConnectStage*>(h.stage);
  if (stage == nullptr) {
    stage = new (std::nothrow) ConnectStage;
    if (stage == nullptr) return Status::kSystemError;
    stage->nRails = h.nRails;
    setStage(handle, reinterpret_cast<uint64_t>(stage));
    uint64_t connId = freshConnId();
    if (connId == 0) connId = 1;  // 0 means "no reopening" to the receive comm
    stage->reopen.enabled = true;
    stage->reopen.connId = connId;
    stage->reopen.nRails = h.nRails;
    const int perRail = std::max(1, std::min(config.streamsPerRail, kMaxStreams / h.nRails));
    const int n = perRail * h.nRails;
    for (int i = 0; i < n; ++i) {
      const int rail = i % h.nRails;
      sockaddr_storage peer;
      socklen_t peerLen = toSockaddr(h.rails[rail], &peer);
      if (peerLen == 0) {
        dropStage(handle, stage);
        return Status::kInternalError;
      }
      int fd = socket(peer.ss_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
      if (fd < 0) {
        dropStage(handle, stage);
        return Status::kSystemError;
      }
      Hello hello{kHelloMagic, static_cast<uint16_t>(i), static_cast<uint16_t>(n), static_cast<uint16_t>(rail), 0, 0,
                  connId};
      stage->streams.push_back({fd, rail, false, 0, hello});
      tune(fd);
      stage->reopen.peer[rail] = peer;
      stage->reopen.peerLen[rail] = peerLen;
      // Leave through this rail's own interface when the local device has a matching one.
      if (local.rails.size() > 1 && rail < static_cast<int>(local.rails.size()) &&
          local.rails[rail].addr.ss_family == peer.ss_family && !isLoopback(local.rails[rail].addr)) {
        (void)bind(fd, reinterpret_cast<const sockaddr*>(&local.rails[rail].addr), local.rails[rail].addrLen);
        stage->reopen.local[rail] = local.rails[rail].addr;
        stage->reopen.localLen[rail] = local.rails[rail].addrLen;
      }
      if (::connect(fd, reinterpret_cast<const sockaddr*>(&peer), peerLen) != 0 && errno != EINPROGRESS) {
        dropStage(handle, stage);
        return Status::kSystemError;
      }
    }
  }
  bool all = true;
  for (auto& s : stage->streams) {
    if (!s.connected) {
      pollfd p{s.fd, POLLOUT, 0};
      if (poll(&p, 1, 0) <= 0) {
        all = false;
        continue;
      }
      int err = 0;
      socklen_t len = sizeof err;
      if (getsockopt(s.fd, SOL_SOCKET, SO_ERROR, &err, &len) != 0 || err != 0) {
        dropStage(handle, stage);
        return Status::kSystemError;
      }
      s.connected = true;
    }
    while (s.helloSent < sizeof(Hello)) {
      ssize_t w = send(s.fd, reinterpret_cast<const char*>(&s.hello) + s.helloSent, sizeof(Hello) - s.helloSent,
                       MSG_NOSIGNAL | MSG_DONTWAIT);
      if (w < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR)) break;
      if (w < 0) {
        dropStage(handle, stage);
        return Status::kSystemError;
      }
      s.helloSent += static_cast<size_t>(w);
    }
    all = all && s.helloSent == sizeof(Hello);
  }
  if (!all) return Status::kOk;
  std::vector<StreamFd> fds;
  for (auto& s : stage->streams) fds.push_back({s.fd, s.rail});
  // Link speeds (Mb/s -> bytes/s) are only the starting point: the scheduler measures every rail.
  std::vector<double> rates;
  for (int r = 0; r < stage->nRails; ++r)
    rates.push_back(r < static_cast<int>(local.rails.size()) ? local.rails[r].speedMbps * 125000.0 : 0.0);
  CommOptions opt;
  opt.chunkBytes = config.chunkBytes;
  opt.railTimeoutNs = config.railTimeoutMs * 1'000'000ull;
  opt.sched.queueTargetNs = config.queueTargetMs * 1'000'000ull;
  opt.hedgeFactor = config.hedgeFactor;
  auto* sc = new (std::nothrow) SendComm(fds, stage->nRails, rates, opt);
  if (sc == nullptr) return Status::kSystemError;
  sc->enableReopen(stage->reopen);
  stage->streams.clear();  // the fds now belong to the comm
  dropStage(handle, stage);
  *sendComm = sc;
  return Status::kOk;
}

}  // namespace wirewise::net
