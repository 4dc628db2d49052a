// Agreement across real processes (harness: multiprocess_fixture.h): the coordinator issues a random table
// at every boundary, with connections cut at random, messages delayed (with and without cuts), a late
// joiner and a member that never joins (nobody waits for either), a coordinator that cannot be reached, one
// that dies, and adversarial clients hammering the coordinator.
#include "tests/control/multiprocess_fixture.h"

#include <cstdlib>
#include <functional>

#include "tests/wait_until.h"

namespace wirewise::control {
namespace {

TEST_F(MultiProcess, EightProcessesFirstToBindHostsRandomTableEveryBoundary) {
  Job job;
  job.port = freePort();
  auto rec = run(job);
  size_t changed = checkIdentical(job, rec);
  EXPECT_GT(changed, static_cast<size_t>(job.comms * job.collectives) / 10) << "random tables never took effect";
  EXPECT_EQ(countLog(job.procs, "\"event\":\"control_start\""), static_cast<size_t>(job.procs));
  EXPECT_EQ(countLog(job.procs, "\"hosting\":true"), 1u);
  // Every process logged every verdict that changed its table: a boundary every 8 collectives from B0,
  // which the members accepted within the first few hundred collectives, and a random table that differs
  // from the one before at all but about one boundary in 16 (two empty tables in a row).
  EXPECT_GE(countLog(job.procs, "\"event\":\"verdict\""),
            static_cast<size_t>(job.procs * job.comms) * static_cast<size_t>((job.collectives - 600) / 8));
}

TEST_F(MultiProcess, DeterministicModeAgrees) {
  Job job;
  job.port = freePort();
  job.sync = "deterministic";
  job.procs = job.ranks = 4;
  checkIdentical(job, run(job));
}

TEST_F(MultiProcess, ConnectionsCutAtRandom) {
  Job job;
  uint16_t coordPort = freePort();
  do job.port = freePort();
  while (job.port == coordPort);
  HostedCoordinator coord(coordPort);
  ASSERT_TRUE(coord.plane->hosting());
  CuttingProxy proxy(job.port, coordPort, 40);
  auto kids = spawn(job);
  expectNoInheritedSockets(kids);
  auto rec = finish(job, kids);
  size_t changed = checkIdentical(job, rec);
  EXPECT_GT(changed, 0u);
  EXPECT_GT(proxy.cuts(), 5);
  EXPECT_GT(countLog(job.procs, "reconnected"), 0u);
  EXPECT_EQ(coord.logged("observe-only"), 0u) << "some member's joins never reached the coordinator";
}

// Delayed messages (docs/control-plane.md, Faults): the proxy holds every chunk of every connection a random
// 0–30 ms (order kept within a connection), and every 500 ms stalls one connection for 200–400 ms. Members
// then reach boundaries before their verdict, wait, and say so; every decision still agrees.
ProxyFaults delays(int cutEveryMs) {
  ProxyFaults f;
  f.maxDelayMs = 30;
  f.burstEveryMs = 500;
  f.burstMinMs = 200;
  f.burstMaxMs = 400;
  f.cutEveryMs = cutEveryMs;
  return f;
}

struct DelayedRun {
  size_t changed = 0;
  size_t waits = 0, waitingProcs = 0;  // members' WARNs "waiting N ms at boundary ..." and the processes with any
  int cuts = 0, bursts = 0;
  uint64_t chunks = 0, delayed = 0;
  int64_t maxHeldMs = 0;
};

class DelayedMessages : public MultiProcess {
 protected:
  DelayedRun runDelayed(Job& job, bool deterministic, int cutEveryMs) {
    uint16_t coordPort = freePort();
    do job.port = freePort();
    while (job.port == coordPort);
    job.sync = deterministic ? "deterministic" : "on";
    job.collectives = 400;  // 42 boundaries per comm: each takes a few round trips of delayed messages
    // Production members wait nowhere before they accept B0, which takes a few round trips of delayed
    // messages (more with connections cut): at a GPU's pace of ~1 ms a round, 1,200 rounds leave the
    // schedule time to start and the proxy time for two bursts (one every 500 ms), however little the
    // members wait at their boundaries.
    if (!deterministic) {
      job.paceUs = 1000;
      job.collectives = 1200;
    }
    job.syncTimeoutMs = "100";  // a wait of 100 ms or more is logged (WARN, stderr)
    DelayedRun r;
    {
      HostedCoordinator coord(coordPort, deterministic);
      EXPECT_TRUE(coord.plane->hosting());
      CuttingProxy proxy(job.port, coordPort, delays(cutEveryMs));
      r.changed = checkIdentical(job, run(job));
      r.cuts = proxy.cuts();
      r.bursts = proxy.bursts();
      r.chunks = proxy.chunks();
      r.delayed = proxy.delayedChunks();
      r.maxHeldMs = proxy.maxHeldMs();
      EXPECT_EQ(coord.logged("observe-only"), 0u) << "some member's joins never reached the coordinator";
    }
    const std::string wait = "for the verdict of coordinator";
    r.waits = countLog(job.procs, wait, "/err", ".txt");
    for (int p = 0; p < job.procs; ++p)
      r.waitingProcs += countLog(p + 1, wait, "/err", ".txt") > countLog(p, wait, "/err", ".txt");
    std::printf("[ delays   ] %zu changed, %llu of %llu chunks held >= 1 ms (longest %lld ms), %d bursts, %d cuts, "
                "%zu waits of >= 100 ms in %zu processes\n",
                r.changed, static_cast<unsigned long long>(r.delayed), static_cast<unsigned long long>(r.chunks),
                static_cast<long long>(r.maxHeldMs), r.bursts, r.cuts, r.waits, r.waitingProcs);
    // The delays really happened: most chunks were held, and bursts held some for 150 ms and more.
    EXPECT_GT(r.delayed, r.chunks / 2);
    EXPECT_GE(r.bursts, 2);
    EXPECT_GE(r.maxHeldMs, 150);
    EXPECT_GT(r.changed, 0u) << "random tables never took effect";
    return r;
  }
};

TEST_F(DelayedMessages, EightProcessesAgree) {
  Job job;
  auto r = runDelayed(job, false, 0);
  // A stalled connection's member reaches its next boundary first, waits and logs it.
  EXPECT_GE(r.waits, 1u);
}

TEST_F(DelayedMessages, EightProcessesAgreeDeterministic) {
  Job job;
  auto r = runDelayed(job, true, 0);
  // The coordinator waits for every report, so one stalled connection makes every member wait.
  EXPECT_EQ(r.waitingProcs, static_cast<size_t>(job.procs));
}

TEST_F(DelayedMessages, EightProcessesAgreeWithConnectionsCut) {
  Job job;
  auto r = runDelayed(job, false, 40);
  EXPECT_GT(r.cuts, 5);
  EXPECT_GT(countLog(job.procs, "reconnected"), 0u);
}

TEST_F(DelayedMessages, EightProcessesAgreeDeterministicWithConnectionsCut) {
  Job job;
  auto r = runDelayed(job, true, 40);
  EXPECT_GT(r.cuts, 5);
  EXPECT_GT(countLog(job.procs, "reconnected"), 0u);
}

// A member that comes 700 ms late: the others run on their static tables meanwhile (nobody waits for it),
// the schedule starts once it has joined, and every decision agrees.
TEST_F(MultiProcess, LateJoinerStartsTheScheduleLateAndNobodyWaitsForIt) {
  Job job;
  job.port = freePort();
  job.barrier = false;
  job.collectives = 6000;
  job.paceUs = 200;
  job.delayMs[5] = 700;
  auto rec = run(job);
  EXPECT_GT(checkIdentical(job, rec), 0u);
  // Before the late member joined (>= 700 ms, at 200 us a round: >= 3,500 collectives) nothing changed.
  for (size_t i = 0; i < 2000 * 3; i += 3)
    ASSERT_TRUE(rec[0][i] == 1 && rec[0][i + 1] == 0 && rec[0][i + 2] == 8) << "collective " << i / 3;
}

// One member of the communicators never loads wirewise (here: agreement off in its process, so it never
// joins): no rank waits (under 1 ms in all per process over 10,000 collectives of 3 comms), nobody diverges,
// nothing changes.
TEST_F(MultiProcess, NeverJoinerMakesNobodyWait) {
  Job job;
  job.port = freePort();
  job.procs = job.ranks = 8;
  job.collectives = 10000;
  job.paceUs = 20;
  job.env[7]["WIREWISE_SYNC"] = "off";
  auto rec = run(job);
  EXPECT_EQ(checkIdentical(job, rec), 0u);  // identical, and nobody changed anything
  for (int p = 0; p < job.procs - 1; ++p) {
    const uint64_t waited = waitedUs(p);
    std::printf("[ waits    ] process %d waited %llu us in all\n", p, static_cast<unsigned long long>(waited));
    EXPECT_LE(waited, 1000u) << "process " << p;
  }
  EXPECT_EQ(countLog(job.procs - 1, "\"waited_us\":"), static_cast<size_t>((job.procs - 1) * job.comms));
}

// The coordinator's address cannot be used: a port bound by another program that does not listen
// (connection refused), or a listener that never accepts (the handshake never completes). Members can
// neither host there nor join, so nobody waits and nothing changes; each process says so once, naming the
// address (for the silent listener after the 2 s a connection gets: that run lasts 3 s).
TEST_F(MultiProcess, UnreachableCoordinatorMakesNobodyWait) {
  for (bool listens : {false, true}) {
    SCOPED_TRACE(listens ? "a listener that never accepts" : "connection refused");
    Job job;
    job.port = freePort();
    job.procs = job.ranks = 4;
    job.collectives = 10000;
    job.paceUs = listens ? 300 : 20;
    asio::io_context io;
    tcp::acceptor squatter(io);
    squatter.open(tcp::v4());
    squatter.bind(tcp::endpoint(asio::ip::make_address("127.0.0.1"), job.port));
    if (listens) squatter.listen(1);
    auto rec = run(job);
    EXPECT_EQ(checkIdentical(job, rec), 0u);
    const std::string warn = "coordinator 127.0.0.1:" + std::to_string(job.port) + " unreachable (";
    for (int p = 0; p < job.procs; ++p) {
      EXPECT_LE(waitedUs(p), 1000u) << "process " << p;
      EXPECT_EQ(countLog(p + 1, warn, "/err", ".txt") - countLog(p, warn, "/err", ".txt"), 1u) << "process " << p;
    }
    std::filesystem::remove_all(dir_);
    std::filesystem::create_directories(dir_);
  }
}

// The coordinator behind a firewall, and at an address nobody answers, in a network namespace of the test's
// own. Firewalled: the job's coordinator listens on 127.0.0.1 there, and an nftables rule drops every SYN
// to its port. Silent: the address lies behind a veth link whose far end has no address (a neighbour
// entry sends the packets there, where nobody takes them): a host that is gone. Members can neither
// host (the port is taken, or the address is not theirs) nor join: nobody waits, nothing changes, and each
// process says once where the coordinator is and how to fix it.
TEST_F(MultiProcess, FirewalledOrSilentCoordinatorMakesNobodyWait) {
  if (geteuid() != 0) GTEST_SKIP() << "needs root for a network namespace and nftables (CI runs as root)";
  auto sh = [](const std::string& cmd) { return std::system((cmd + " >/dev/null 2>&1").c_str()) == 0; };
  const std::string ns = "wwfw" + std::to_string(getpid());
  if (!sh("ip netns add " + ns)) GTEST_SKIP() << "cannot create network namespaces here";
  struct Cleanup {
    std::function<void()> f;
    ~Cleanup() { f(); }
  } cleanup{[&] { sh("ip netns del " + ns); }};
  ASSERT_TRUE(sh("ip -n " + ns + " link set lo up"));
  const std::string ip = "ip -n " + ns + " ";
  ASSERT_TRUE(sh(ip + "link add v0 type veth peer name v1 && " + ip + "addr add 192.0.2.1/24 dev v0 && " + ip +
                 "link set v0 up && " + ip + "link set v1 up && " + ip +
                 "neigh add 192.0.2.2 lladdr 02:00:00:00:00:02 dev v0 nud permanent"));
  for (bool firewalled : {true, false}) {
    SCOPED_TRACE(firewalled ? "SYNs to the port dropped" : "an address nobody answers");
    Job job;
    job.port = freePort();
    job.procs = job.ranks = 4;
    job.collectives = 12000;  // at 250 us a round, 3 s: past the 2 s a connection attempt gets
    job.paceUs = 250;
    job.netns = ns;
    std::unique_ptr<HostedCoordinator> coord;
    std::string address = "127.0.0.1:" + std::to_string(job.port);
    if (firewalled) {
      ASSERT_TRUE(sh("command -v nft")) << "nftables is missing (.ci/install-deps installs it)";
      ASSERT_TRUE(sh("ip netns exec " + ns + " nft add table inet wwfw && ip netns exec " + ns +
                     " nft add chain inet wwfw in '{ type filter hook input priority 0; }' && ip netns exec " + ns +
                     " nft add rule inet wwfw in tcp dport " + std::to_string(job.port) + " tcp flags syn drop"));
      // The job's real coordinator, listening in the namespace (a thread of ours moved there makes it).
      std::thread([&] {
        int fd = open(("/var/run/netns/" + ns).c_str(), O_RDONLY | O_CLOEXEC);
        if (fd >= 0 && setns(fd, CLONE_NEWNET) == 0) coord = std::make_unique<HostedCoordinator>(job.port);
        if (fd >= 0) close(fd);
      }).join();
      ASSERT_TRUE(coord && coord->plane->hosting());
    } else {
      address = "192.0.2.2:" + std::to_string(job.port);
      for (int p = 0; p < job.procs; ++p) job.env[p]["WIREWISE_COORDINATOR"] = address;
    }
    auto rec = run(job);
    EXPECT_EQ(checkIdentical(job, rec), 0u);
    for (int p = 0; p < job.procs; ++p) {
      EXPECT_LE(waitedUs(p), 1000u) << "process " << p;
      const std::string warn = "coordinator " + address + " unreachable (no answer within 2000 ms)";
      EXPECT_EQ(countLog(p + 1, warn, "/err", ".txt") - countLog(p, warn, "/err", ".txt"), 1u)
          << "process " << p << ": one WARN naming the address";
    }
    EXPECT_EQ(countLog(job.procs, "WIREWISE_COORDINATOR=host:port", "/err", ".txt"), static_cast<size_t>(job.procs));
    if (coord) {
      EXPECT_EQ(coord->plane->coordinatorStats().joins, 0u);
    }
    std::filesystem::remove_all(dir_);
    std::filesystem::create_directories(dir_);
  }
}

// PyTorch's process groups: 16 processes, each in 64 communicators - 61 of all 16 ranks, and its pair,
// its quad and its half (subgroups of 2, 4 and 8, as new_group and split make them). Every member of every
// communicator decides the same at every collective, and the subgroups adapt as the world does.
TEST_F(MultiProcess, SubgroupsAndSixtyFourCommunicatorsPerProcess) {
  Job job;
  job.port = freePort();
  job.procs = job.ranks = 16;
  job.comms = 64;
  job.collectives = 300;
  job.paceUs = 500;
  constexpr int kWorld = 61;
  for (int p = 0; p < job.procs; ++p) {
    std::string list;
    for (int c = 0; c < kWorld; ++c) list += std::to_string(c) + "/16,";
    list += std::to_string(100 + p / 2) + "/2," + std::to_string(200 + p / 4) + "/4," + std::to_string(300 + p / 8) +
            "/8";
    job.env[p]["WW_TEST_COMMS"] = list;
  }
  auto rec = run(job);
  const size_t block = static_cast<size_t>(job.collectives) * 3;
  ASSERT_EQ(rec.size(), 16u);
  for (const auto& r : rec) ASSERT_EQ(r.size(), block * 64);
  // Block k of process p against the same block of `peer`, a member of the same communicator.
  auto same = [&](int p, int peer, int k) {
    return std::equal(rec[p].begin() + static_cast<std::ptrdiff_t>(block * k),
                      rec[p].begin() + static_cast<std::ptrdiff_t>(block * (k + 1)),
                      rec[peer].begin() + static_cast<std::ptrdiff_t>(block * k));
  };
  auto changed = [&](int p, int k) {
    size_t n = 0;
    for (size_t i = block * static_cast<size_t>(k); i < block * static_cast<size_t>(k + 1); i += 3)
      n += !(rec[p][i] == 1 && rec[p][i + 1] == 0 && rec[p][i + 2] == 8);
    return n;
  };
  for (int p = 0; p < job.procs; ++p) {
    for (int k = 0; k < kWorld; ++k) EXPECT_TRUE(same(p, 0, k)) << "process " << p << ", world comm " << k;
    EXPECT_TRUE(same(p, p & ~1, kWorld)) << "process " << p << ", its pair";
    EXPECT_TRUE(same(p, p & ~3, kWorld + 1)) << "process " << p << ", its quad";
    EXPECT_TRUE(same(p, p & ~7, kWorld + 2)) << "process " << p << ", its half";
  }
  for (int k : {0, kWorld, kWorld + 1, kWorld + 2}) EXPECT_GT(changed(0, k), 0u) << "comm block " << k << " never adapted";
  EXPECT_EQ(countLog(job.procs, "\"hosting\":true"), 1u);
}

// The coordinator dies mid-run: every member keeps its last agreed table, then waits at the next boundary
// it has no verdict for, logging (every WIREWISE_SYNC_TIMEOUT_MS) the coordinator, communicator, boundary
// and time waited, as documented. Nobody moves on alone, so nobody diverges.
TEST_F(MultiProcess, CoordinatorKilledMembersWaitAndExplain) {
  Job job;
  job.port = freePort();
  job.collectives = 200000;  // far more than can finish before the coordinator goes
  job.syncTimeoutMs = "200";
  auto coord = std::make_unique<HostedCoordinator>(job.port);
  auto kids = spawn(job);
  ASSERT_TRUE(awaitVerdict(job, 20)) << "no progress";
  coord.reset();  // the coordinator's process is gone
  const std::string needle = "for the verdict of coordinator 127.0.0.1:" + std::to_string(job.port);
  auto explained = [&](int p) { return countLog(p + 1, needle, "/err", ".txt") - countLog(p, needle, "/err", ".txt"); };
  auto allExplained = [&] {
    for (int p = 0; p < job.procs; ++p)
      if (explained(p) == 0) return false;
    return true;
  };
  waitUntil(allExplained, std::chrono::seconds(30), std::chrono::milliseconds(20));
  for (pid_t k : kids) kill(k, SIGKILL);
  for (pid_t k : kids) waitpid(k, nullptr, 0);
  for (int p = 0; p < job.procs; ++p) EXPECT_GE(explained(p), 1u) << "process " << p << " did not explain its wait";
}

// Raw client helpers for the adversarial test.
std::vector<uint8_t> handshakeAs(tcp::socket& s, const std::string& key, SessionKeys* keys) {
  Nonce mine = randomNonce();
  asio::write(s, asio::buffer(encodeFrame(MsgType::Hello, 0, encode(Hello{mine}), nullptr)));
  std::vector<uint8_t> hdr(4 + kHeaderBytes + kNonceBytes);
  asio::read(s, asio::buffer(hdr));
  FrameReader r;
  r.append(hdr);
  Frame f;
  Hello h;
  if (r.next(&f) != WireError::None || !decode(f.payload, &h)) return {};
  *keys = deriveSessionKeys({reinterpret_cast<const uint8_t*>(key.data()), key.size()}, h.nonce, mine);
  return hdr;
}

TEST_F(MultiProcess, AdversarialClientsAreRejectedAndTheJobGoesOn) {
  Job job;
  uint16_t coordPort = freePort();
  job.port = coordPort;
  HostedCoordinator coord(coordPort);
  std::atomic<bool> done{false};
  std::thread attacker([&] {
    asio::io_context io;
    tcp::endpoint ep(asio::ip::make_address("127.0.0.1"), coordPort);
    std::mt19937_64 rng(7);
    while (!done.load()) {
      boost::system::error_code ec;
      for (int kind = 0; kind < 4; ++kind) {
        tcp::socket s(io);
        s.connect(ep, ec);
        if (ec) continue;
        SessionKeys k;
        if (kind == 0) {  // garbage
          std::vector<uint8_t> junk(512);
          for (auto& b : junk) b = static_cast<uint8_t>(rng());
          asio::write(s, asio::buffer(junk), ec);
        } else if (kind == 1) {  // oversized
          uint8_t big[8] = {0x7f, 0xff, 0xff, 0xff, 1, 2, 0, 0};
          asio::write(s, asio::buffer(big), ec);
        } else if (kind == 2) {  // wrong key, trying to join a comm of the job
          handshakeAs(s, "not-the-key", &k);
          asio::write(
              s, asio::buffer(encodeFrame(MsgType::Join, 1, encode(Join{0xC0FFEE00ull, 42, 8, 1, 0, 0}), &k.toServer)),
              ec);
        } else {  // right key, but replays its own frame
          handshakeAs(s, kKey, &k);
          auto frame = encodeFrame(MsgType::Leave, 1, encode(Leave{1, 2}), &k.toServer);
          asio::write(s, asio::buffer(frame), ec);
          asio::write(s, asio::buffer(frame), ec);
        }
        uint8_t sink[256];
        s.read_some(asio::buffer(sink), ec);  // the coordinator closes it
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(5));  // the attacker's pace: a try every 5 ms
    }
  });
  auto rec = run(job);
  done = true;
  attacker.join();
  EXPECT_GT(checkIdentical(job, rec), 0u);
  CoordinatorStats st = coord.plane->coordinatorStats();
  EXPECT_GE(st.rejected, 4u);
  EXPECT_GE(coord.logged("dropped connection from"), 4u);
  EXPECT_GE(st.joins, static_cast<uint64_t>(job.procs * job.comms));
}

// A client with the job's key (a derived key is no secret: docs/control-plane.md, Threat model) joins
// the first communicator as a member before the real ones and then never answers. It takes a member's
// place, so that communicator's schedule never starts. The members that accepted the proposal of B0 stop
// there until the coordinator parks it (answerTimeoutMs, 1 s) and releases them: one bounded wait, never
// a hang. The other communicators adapt as usual.
TEST_F(MultiProcess, AJoinedMemberThatNeverAnswersStallsNobody) {
  Job job;
  job.port = freePort();
  job.collectives = 3000;
  job.paceUs = 100;
  HostedCoordinator coord(job.port);
  ASSERT_TRUE(coord.plane->hosting());
  asio::io_context io;
  tcp::socket s(io);
  s.connect(tcp::endpoint(asio::ip::make_address("127.0.0.1"), job.port));
  SessionKeys k;
  ASSERT_FALSE(handshakeAs(s, kKey, &k).empty());
  asio::write(s, asio::buffer(encodeFrame(MsgType::Join, 1,
                                          encode(Join{0xC0FFEE00ull, 0xBAD, static_cast<uint32_t>(job.ranks), 1, 0, 0}),
                                          &k.toServer)));
  ASSERT_TRUE(waitUntil([&] { return coord.plane->coordinatorStats().joins >= 1; }, std::chrono::seconds(10)));
  auto rec = run(job);
  ASSERT_EQ(rec.size(), static_cast<size_t>(job.procs));
  const size_t block = static_cast<size_t>(job.collectives) * 3;
  for (int p = 0; p < job.procs; ++p) {
    ASSERT_EQ(rec[p].size(), block * static_cast<size_t>(job.comms));
    EXPECT_TRUE(std::equal(rec[p].begin(), rec[p].end(), rec[0].begin())) << "process " << p;
    for (size_t i = 0; i < block; i += 3)  // comm 0: NCCL's choice throughout
      ASSERT_TRUE(rec[p][i] == 1 && rec[p][i + 1] == 0 && rec[p][i + 2] == 8) << "process " << p << " collective " << i / 3;
  }
  size_t changedElsewhere = 0;
  for (size_t i = block; i < rec[0].size(); i += 3) changedElsewhere += !(rec[0][i] == 1 && rec[0][i + 1] == 0 && rec[0][i + 2] == 8);
  EXPECT_GT(changedElsewhere, 0u) << "the other communicators never adapted";
  // Comm 0: at most the one wait until the proposal was parked.
  for (int p = 0; p < job.procs; ++p) {
    std::ifstream f(dir_ + "/log" + std::to_string(p) + ".jsonl");
    std::string line;
    while (std::getline(f, line))
      if (line.find("comm_finalize") != std::string::npos && line.find("0x00000000c0ffee00") != std::string::npos) {
        const size_t at = line.find("\"waited_us\":");
        ASSERT_NE(at, std::string::npos) << line;
        EXPECT_LE(std::stoull(line.substr(at + 12)), 1500000u) << "process " << p;
      }
  }
  EXPECT_EQ(coord.logged("did not answer the proposal"), 1u);
  EXPECT_GE(coord.plane->coordinatorStats().proposals, 2u);  // B0, then the one that released the members
}

}  // namespace
}  // namespace wirewise::control
