// Verdict round trip on loopback: N members of one communicator spread over C client connections, a
// coordinator on its own I/O thread (deterministic mode: it waits for every member's report). Each round,
// every member passes boundary B_k at once; the round trip is the time until every member holds verdict
// k+1. Also reports the coordinator thread's and the clients' thread's CPU time per member per round.
//
//   ww_bench_verdict_roundtrip [members=1024] [connections=64] [rounds=200] [tables=random|static]
//
// tables=random: a different table at every verdict (the worst case: every client builds every table);
// static: the table in force repeats (a job's steady state between the policy's rare changes).
// All connections' clients share one thread here: it does the client work of `connections` processes.
#include <pthread.h>
#include <time.h>

#include <algorithm>
#include <atomic>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/post.hpp>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "control/client.h"
#include "control/coordinator.h"

using namespace wirewise::control;
namespace asio = boost::asio;
using Clock = std::chrono::steady_clock;

static double threadCpuMs(pthread_t t) {
  clockid_t id;
  timespec ts{};
  if (pthread_getcpuclockid(t, &id) != 0 || clock_gettime(id, &ts) != 0) return 0;
  return static_cast<double>(ts.tv_sec) * 1e3 + static_cast<double>(ts.tv_nsec) / 1e6;
}

int main(int argc, char** argv) {
  const int members = argc > 1 ? std::atoi(argv[1]) : 1024;
  const int conns = argc > 2 ? std::atoi(argv[2]) : 64;
  const int rounds = argc > 3 ? std::atoi(argv[3]) : 200;
  const bool staticTables = argc > 4 && std::string(argv[4]) == "static";
  std::vector<uint8_t> key{'b', 'e', 'n', 'c', 'h'};
  auto log = [](bool warn, const std::string& s) {
    if (warn) std::fprintf(stderr, "%s\n", s.c_str());
  };

  asio::io_context coordIo;
  asio::ip::tcp::acceptor acc(coordIo, {asio::ip::make_address("127.0.0.1"), 0});
  uint16_t port = acc.local_endpoint().port();
  AgreementParams params;
  params.deterministic = true;
  params.fixedSpacing = 8;
  auto staticRules = [](uint64_t, uint32_t, uint32_t) {
    std::vector<wirewise::TableRule> r(6);
    for (size_t i = 0; i < r.size(); ++i) {
      r[i].coll = static_cast<int>(i % 5);
      r[i].minBytes = uint64_t{1} << (10 + 3 * i);
      r[i].maxBytes = (uint64_t{1} << (13 + 3 * i)) - 1;
      r[i].decision.algo = static_cast<int>(i % 2);
      r[i].decision.proto = static_cast<int>(i % 3);
    }
    return r;
  };
  Coordinator coord(coordIo, std::move(acc), key, params,
                    staticTables ? makeKeepStaticPolicy(staticRules) : makeRandomTablePolicy(1), nullptr, log);
  coord.start();
  std::thread coordThread([&] {
    pthread_setname_np(pthread_self(), "ww-coordinator");
    coordIo.run();
  });

  // The observer is told by the clients' verdict callback (a futex wake when the last member of a round
  // gets its verdict) instead of polling: a polling observer would take CPU from the threads measured.
  std::atomic<uint64_t> got{0};
  std::atomic<int64_t> lastAtNs{0};
  auto onVerdict = [&](const Member&, const Verdict&) {
    uint64_t n = got.fetch_add(1, std::memory_order_acq_rel) + 1;
    if (n % static_cast<uint64_t>(members) == 0) {
      lastAtNs.store(Clock::now().time_since_epoch().count(), std::memory_order_release);
      got.notify_all();
    }
  };
  asio::io_context clientIo;
  std::vector<std::unique_ptr<Client>> clients;
  std::vector<std::shared_ptr<Member>> ms;
  for (int c = 0; c < conns; ++c)
    clients.push_back(std::make_unique<Client>(clientIo, "127.0.0.1", port, key, log, onVerdict));
  for (int m = 0; m < members; ++m) {
    ms.push_back(
        std::make_shared<Member>(0xBE7C4, 1000 + static_cast<uint64_t>(m), static_cast<uint32_t>(members), 1, 0));
    clients[static_cast<size_t>(m % conns)]->add(ms.back());
  }
  for (auto& c : clients) c->start();
  std::thread clientThread([&] {
    pthread_setname_np(pthread_self(), "ww-clients");
    clientIo.run();
  });

  auto waitAll = [&](uint64_t have) {
    const uint64_t want = have * static_cast<uint64_t>(members);
    for (uint64_t n = got.load(std::memory_order_acquire); n < want; n = got.load(std::memory_order_acquire)) got.wait(n);
  };
  waitAll(1);  // verdict 0: everyone joined
  std::vector<double> rtt;
  double cpu0 = threadCpuMs(coordThread.native_handle());
  double clientCpu0 = threadCpuMs(clientThread.native_handle());
  uint64_t boundary = 64;
  for (int k = 0; k < rounds; ++k) {
    for (auto& m : ms) (void)m->tryTake(static_cast<uint64_t>(k), boundary);
    auto t0 = Clock::now();
    for (auto& m : ms) {
      m->passedSeq.store(boundary, std::memory_order_relaxed);
      m->passed.store(static_cast<uint64_t>(k) + 1, std::memory_order_release);
    }
    waitAll(static_cast<uint64_t>(k) + 2);
    rtt.push_back(std::chrono::duration<double, std::milli>(Clock::time_point(Clock::duration(lastAtNs.load())) - t0).count());
    boundary += 8;
  }
  double cpu = threadCpuMs(coordThread.native_handle()) - cpu0;
  double clientCpu = threadCpuMs(clientThread.native_handle()) - clientCpu0;
  std::sort(rtt.begin(), rtt.end());
  auto pct = [&](double q) {
    return rtt[std::min(rtt.size() - 1, static_cast<size_t>(q * static_cast<double>(rtt.size())))];
  };
  std::printf(
      "{\"members\": %d, \"connections\": %d, \"rounds\": %d, \"tables\": \"%s\", \"rtt_p50_ms\": %.3f, "
      "\"rtt_p90_ms\": %.3f, \"rtt_p99_ms\": %.3f, \"rtt_max_ms\": %.3f, "
      "\"coordinator_cpu_us_per_member_round\": %.3f, \"clients_cpu_us_per_member_round\": %.3f}\n",
      members, conns, rounds, staticTables ? "static" : "random", pct(0.5), pct(0.9), pct(0.99), rtt.back(), cpu * 1000.0 / members / rounds,
      clientCpu * 1000.0 / members / rounds);
  asio::post(clientIo, [&] {
    for (auto& c : clients) c->stop();
  });
  asio::post(coordIo, [&] { coord.stop(); });
  clientThread.join();
  coordThread.join();
  return 0;
}
