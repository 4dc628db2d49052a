// Both ends of stream reopening (see comm.h, "Reopening"): the receiver's listening sockets, their one
// advertisement and the accepted replacements; the sender's non-blocking reconnect with backoff. Every
// step is a non-blocking syscall polled from progress.
#include "net/comm.h"

#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <iterator>

namespace wirewise::net {

// One listening socket per rail, on the rail's local address (that of an accepted stream, i.e. the
// handle's), and its ports written once on every stream. Setup only (allocation-free syscalls).
void RecvComm::openReopenListeners() {
  ReopenAdvert adv{kReopenMagic, static_cast<uint16_t>(kMaxRails), 0, {}};
  for (const Stream& st : streams_) {
    const int r = st.s.rail;
    if (st.s.fd < 0 || r < 0 || r >= kMaxRails || listenFd_[r] >= 0) continue;
    sockaddr_storage addr{};
    socklen_t len = sizeof addr;
    if (getsockname(st.s.fd, reinterpret_cast<sockaddr*>(&addr), &len) != 0) continue;
    if (addr.ss_family == AF_INET) reinterpret_cast<sockaddr_in*>(&addr)->sin_port = 0;
    else if (addr.ss_family == AF_INET6) reinterpret_cast<sockaddr_in6*>(&addr)->sin6_port = 0;
    else continue;  // e.g. socketpairs in tests
    int fd = socket(addr.ss_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (fd < 0) continue;
    if (bind(fd, reinterpret_cast<const sockaddr*>(&addr), len) != 0 || ::listen(fd, 4) != 0 ||
        getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len) != 0) {
      close(fd);
      continue;
    }
    listenFd_[r] = fd;
    adv.ports[r] = addr.ss_family == AF_INET ? reinterpret_cast<sockaddr_in*>(&addr)->sin_port
                                             : reinterpret_cast<sockaddr_in6*>(&addr)->sin6_port;
  }
  // A fresh stream's send buffer is empty, so the 16 bytes go out whole; a failure only means no reopening.
  for (const Stream& st : streams_) {
    if (st.s.fd < 0) continue;
    (void)send(st.s.fd, &adv, sizeof adv, MSG_DONTWAIT | MSG_NOSIGNAL);
    const int one = 1;
    (void)setsockopt(st.s.fd, IPPROTO_TCP, TCP_QUICKACK, &one, sizeof one);
  }
}

// Connections from a sender reopening dead streams: accepted at most every 10 ms, their hello read, and
// the new stream put in the slot of the index it names (fresh, at byte 0). Anything else is dropped.
void RecvComm::acceptReopens(uint64_t nowNs) {
  if (connId_ == 0 || nowNs < nextAcceptNs_) return;
  nextAcceptNs_ = nowNs + 10'000'000;
  for (int lfd : listenFd_) {
    while (lfd >= 0) {
      int fd = accept4(lfd, nullptr, nullptr, SOCK_NONBLOCK | SOCK_CLOEXEC);
      if (fd < 0 && (errno == EINTR || errno == ECONNABORTED)) continue;
      if (fd < 0) break;
      if (nPend_ == kMaxPendingReopens) {
        close(fd);
        continue;
      }
      pend_[nPend_++] = PendingReopen{fd, Hello{}, 0, nowNs};
    }
  }
  for (int i = 0; i < nPend_;) {
    PendingReopen& p = pend_[i];
    ssize_t n = 0;
    while (p.got < sizeof(Hello)) {
      n = recv(p.fd, reinterpret_cast<char*>(&p.hello) + p.got, sizeof(Hello) - p.got, MSG_DONTWAIT);
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) break;
      p.got += static_cast<size_t>(n);
    }
    const bool waiting = p.got < sizeof(Hello) && n < 0 && wouldBlock(errno) && nowNs - p.sinceNs < railTimeoutNs_;
    if (waiting) {
      ++i;
      continue;
    }
    const Hello& h = p.hello;
    const bool ok = p.got == sizeof(Hello) && validHello(h) && h.reserved == kHelloReopen && h.connId == connId_ &&
                    h.streamIndex < streams_.size() && streams_[h.streamIndex].s.fd < 0 &&
                    streams_[h.streamIndex].pos == 0;
    if (ok) {
      Stream& st = streams_[h.streamIndex];
      st.s = StreamFd{p.fd, h.rail};
      tuneStream(p.fd, railTimeoutNs_);
      ++reopened_;
    } else {
      close(p.fd);
    }
    pend_[i] = pend_[--nPend_];
  }
}

// The receiver's advertised reopen ports: the first complete advertisement read from any stream's reverse
// direction (each stream carries the same one; it is the only thing the receiver writes).
bool SendComm::readAdvert() {
  for (Stream& st : streams_) {
    while (!st.advGone && st.s.fd >= 0 && st.advGot < sizeof(ReopenAdvert)) {
      ssize_t n = recv(st.s.fd, reinterpret_cast<char*>(&st.adv) + st.advGot, sizeof(ReopenAdvert) - st.advGot,
                       MSG_DONTWAIT);
      if (n < 0 && errno == EINTR) continue;
      if (n < 0 && wouldBlock(errno)) break;
      if (n <= 0) {
        st.advGone = true;
        break;
      }
      st.advGot += static_cast<size_t>(n);
    }
    if (st.advGot == sizeof(ReopenAdvert)) {
      if (st.adv.magic != kReopenMagic) {
        st.advGone = true;
        continue;
      }
      std::copy(std::begin(st.adv.ports), std::end(st.adv.ports), std::begin(ports_));
      havePorts_ = true;
      return true;
    }
  }
  return false;
}

void SendComm::openFailed(uint64_t nowNs) {
  close(opening_.fd);
  opening_.fd = -1;
  Stream& dead = streams_[opening_.dead];
  dead.backoffNs = std::min(kReopenMaxNs, 2 * dead.backoffNs);
  dead.reviveAtNs = nowNs + dead.backoffNs;
}

// Reconnect a dead stream: one attempt in flight at a time, each step a non-blocking syscall. The new
// stream takes the next unused index (so no cut notice or position can be mistaken for the old one's).
void SendComm::reopen(uint64_t nowNs) {
  if (!target_.enabled) return;
  if (opening_.fd >= 0) {
    stepOpening(nowNs);
    return;
  }
  if (streams_.size() >= static_cast<size_t>(kMaxStreams)) return;  // every index of the connection used
  size_t dead = streams_.size();
  for (size_t i = 0; i < streams_.size() && dead == streams_.size(); ++i) {
    const Stream& st = streams_[i];
    if (!st.up && !st.replaced && st.reviveAtNs != 0 && nowNs >= st.reviveAtNs) dead = i;
  }
  if (dead == streams_.size()) return;
  Stream& d = streams_[dead];
  const int rail = d.s.rail;
  if (rail >= target_.nRails || rail >= sched_.rails()) {
    d.replaced = true;  // never reopened
    return;
  }
  if (!havePorts_ && !readAdvert()) {
    d.reviveAtNs = nowNs + d.backoffNs;  // not there yet (or a receiver without listeners): later
    return;
  }
  if (ports_[rail] == 0) {
    d.replaced = true;  // the receiver has no listener on this rail
    return;
  }
  sockaddr_storage peer = target_.peer[rail];
  if (peer.ss_family == AF_INET) reinterpret_cast<sockaddr_in*>(&peer)->sin_port = ports_[rail];
  else reinterpret_cast<sockaddr_in6*>(&peer)->sin6_port = ports_[rail];
  opening_ = Opening{};
  opening_.dead = dead;
  opening_.startNs = nowNs;
  opening_.hello = Hello{kHelloMagic, static_cast<uint16_t>(streams_.size()), static_cast<uint16_t>(kMaxStreams),
                         static_cast<uint16_t>(rail), kHelloReopen, 0, target_.connId};
  opening_.fd = socket(peer.ss_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  if (opening_.fd < 0) {
    d.backoffNs = std::min(kReopenMaxNs, 2 * d.backoffNs);
    d.reviveAtNs = nowNs + d.backoffNs;
    return;
  }
  int one = 1;
  setsockopt(opening_.fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
  if (target_.localLen[rail] > 0)
    (void)bind(opening_.fd, reinterpret_cast<const sockaddr*>(&target_.local[rail]), target_.localLen[rail]);
  if (::connect(opening_.fd, reinterpret_cast<const sockaddr*>(&peer), target_.peerLen[rail]) != 0 &&
      errno != EINPROGRESS) {
    openFailed(nowNs);  // e.g. the rail's link is still down: no route
    return;
  }
  stepOpening(nowNs);
}

void SendComm::stepOpening(uint64_t nowNs) {
  if (!opening_.connected) {
    pollfd p{opening_.fd, POLLOUT, 0};
    if (poll(&p, 1, 0) <= 0) {
      if (nowNs - opening_.startNs > opt_.railTimeoutNs) openFailed(nowNs);  // SYNs unanswered
      return;
    }
    int err = 0;
    socklen_t len = sizeof err;
    if (getsockopt(opening_.fd, SOL_SOCKET, SO_ERROR, &err, &len) != 0 || err != 0) {
      openFailed(nowNs);
      return;
    }
    opening_.connected = true;
  }
  while (opening_.helloSent < sizeof(Hello)) {
    ssize_t w = send(opening_.fd, reinterpret_cast<const char*>(&opening_.hello) + opening_.helloSent,
                     sizeof(Hello) - opening_.helloSent, MSG_NOSIGNAL | MSG_DONTWAIT);
    if (w < 0 && errno == EINTR) continue;
    if (w < 0 && wouldBlock(errno)) return;
    if (w < 0) {
      openFailed(nowNs);
      return;
    }
    opening_.helloSent += static_cast<size_t>(w);
  }
  // Up: a fresh stream at byte 0 (the hello is not counted, as at setup); it carries only new chunks.
  // The old stream ends: its receiver reads what it needs (up to the cut position, all acknowledged) and
  // then sees the end of the stream instead of idling on it. shutdown, not close: the fd number stays
  // ours until the comm closes (the rail registry reads TCP_INFO on the fds it saw at setup).
  Stream& old = streams_[opening_.dead];
  const int rail = old.s.rail;
  old.replaced = true;
  old.advGone = true;
  (void)shutdown(old.s.fd, SHUT_WR);
  Stream& st = streams_.emplace_back();  // reserved: no allocation
  st.s = StreamFd{opening_.fd, rail};
  st.lastProgressNs = nowNs;
  st.advGone = true;  // the receiver advertises on its first streams only
  tuneStream(st.s.fd, opt_.railTimeoutNs);
  opening_.fd = -1;
  ++streamsUp_;
  sched_.markUp(rail, nowNs);
  published_.store(streams_.size(), std::memory_order_release);
  reopened_.store(reopened_.load(std::memory_order_relaxed) + 1, std::memory_order_relaxed);  // one writer
}

}  // namespace wirewise::net
