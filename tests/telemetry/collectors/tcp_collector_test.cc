// TCP_INFO through the production code on real loopback sockets (no root needed).
#include "telemetry/collectors/tcp_collector.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include "tests/wait_until.h"

namespace wirewise::collectors {
namespace {

constexpr int64_t kSec = 1'000'000'000;

struct LoopbackPair {
  int client = -1, server = -1;
  LoopbackPair() {
    int ls = ::socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t len = sizeof a;
    if (::bind(ls, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0 || ::listen(ls, 1) != 0 ||
        ::getsockname(ls, reinterpret_cast<sockaddr*>(&a), &len) != 0) {
      ::close(ls);
      return;
    }
    client = ::socket(AF_INET, SOCK_STREAM, 0);
    if (::connect(client, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0) server = ::accept(ls, nullptr, nullptr);
    ::close(ls);
  }
  ~LoopbackPair() {
    if (client >= 0) ::close(client);
    if (server >= 0) ::close(server);
  }
};

TEST(TcpCollector, ReadsTcpInfoOfARealConnection) {
  LoopbackPair p;
  ASSERT_GE(p.server, 0) << "loopback TCP unavailable";
  auto before = readTcpInfo(p.client);
  ASSERT_TRUE(before.has_value());
  EXPECT_EQ(before->state, 1);  // TCP_ESTABLISHED

  TcpCollector c(0.0);
  c.addSocket(p.client, "client");
  c.addSocket(p.server, "server");
  EXPECT_EQ(c.socketCount(), 2u);
  c.sample(1 * kSec);
  // 4 MiB from client to server, fully read so every byte is acked.
  constexpr size_t kBytes = 4 << 20;
  std::thread reader([&] {
    std::vector<char> buf(1 << 16);
    size_t got = 0;
    while (got < kBytes) {
      ssize_t n = ::read(p.server, buf.data(), buf.size());
      if (n <= 0) break;
      got += static_cast<size_t>(n);
    }
  });
  std::vector<char> data(kBytes, 'x');
  size_t sent = 0;
  while (sent < kBytes) {
    ssize_t n = ::send(p.client, data.data() + sent, kBytes - sent, MSG_NOSIGNAL);
    ASSERT_GT(n, 0);
    sent += static_cast<size_t>(n);
  }
  reader.join();
  // The last ACK may be delayed (delayed-ACK timer): wait until the kernel counts every byte.
  ASSERT_TRUE(waitUntil([&] { return readTcpInfo(p.client)->bytesAcked >= before->bytesAcked + kBytes; },
                        std::chrono::seconds(10)))
      << "4 MiB sent over loopback still not acknowledged after 10 s";
  c.sample(3 * kSec);  // 2 s of injected time
  std::vector<LinkHealth> links = c.links();
  ASSERT_EQ(links.size(), 2u);
  const LinkHealth& cl = links[0];
  EXPECT_EQ(cl.id, "tcp:client");
  // Up, or degraded if the kernel retransmitted (tail-loss probes do fire on a loaded loopback).
  EXPECT_NE(cl.state, LinkState::kDown);
  EXPECT_EQ(cl.state == LinkState::kDegraded, cl.lossPerSec > 0);
  EXPECT_TRUE(cl.rateValid);
  EXPECT_DOUBLE_EQ(cl.txBps, kBytes / 2.0);  // bytes acked over the injected 2 s
  EXPECT_DOUBLE_EQ(links[1].rxBps, kBytes / 2.0);  // bytes received by the server socket
  EXPECT_GT(cl.rttUs, 0.0);
  EXPECT_GT(cl.minRttUs, 0.0);
  EXPECT_GE(cl.rttUs + cl.rttVarUs, cl.minRttUs);
  nlohmann::json j = toJson(cl);
  EXPECT_EQ(j["kind"], "tcp");
  EXPECT_TRUE(j.contains("rtt_us"));

  c.removeSocket(p.server);
  EXPECT_EQ(c.socketCount(), 1u);
}

TEST(TcpCollector, ClosedOrForeignDescriptorsAreNotPresent) {
  EXPECT_FALSE(readTcpInfo(-1).has_value());
  int udp = ::socket(AF_INET, SOCK_DGRAM, 0);
  ASSERT_GE(udp, 0);
  EXPECT_FALSE(readTcpInfo(udp).has_value());
  TcpCollector c(0.0);
  c.addSocket(udp, "udp");
  c.sample(1 * kSec);
  EXPECT_FALSE(c.links()[0].present);
  EXPECT_EQ(c.links()[0].state, LinkState::kDown);
  ::close(udp);
}

}  // namespace
}  // namespace wirewise::collectors
