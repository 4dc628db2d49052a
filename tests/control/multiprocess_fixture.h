// The harness of the multi-process agreement tests: N child processes (control_member_driver) each load the
// real plugin through the NCCL-faithful loader and run several communicators' collective sequences; the
// checker proves that every member of each communicator made the identical decision at every collective.
#pragma once

#include <gtest/gtest.h>
#include <signal.h>
#include <stdio.h>
#include <sys/wait.h>
#include <fcntl.h>
#include <sched.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/read.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/write.hpp>
#include <chrono>
#include <cstring>
#include <deque>
#include <filesystem>
#include <fstream>
#include <map>
#include <mutex>
#include <random>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include <nlohmann/json.hpp>

#include "control/control_plane.h"
#include "control/wire.h"
#include "tests/wait_until.h"

namespace wirewise::control {

namespace asio = boost::asio;
using asio::ip::tcp;

inline const char* kKey = "multiprocess-test-key";

// A child must not keep the test process's sockets (the proxy's, the hosted coordinator's). Otherwise a
// connection the proxy accepted before the child was forked stays open in that child after the proxy cuts it:
// no FIN reaches the member, which then waits for verdicts on a dead connection until the child exits (the
// intermittent hang of the 32-process cut test: early members' connections were held by later children).
inline void closeInheritedFds() {
#if defined(__GLIBC__) && (__GLIBC__ > 2 || (__GLIBC__ == 2 && __GLIBC_MINOR__ >= 34))
  closefrom(3);
#else
  long max = sysconf(_SC_OPEN_MAX);
  for (long fd = 3; fd < (max > 0 && max < 65536 ? max : 65536); ++fd) close(static_cast<int>(fd));
#endif
}

inline uint16_t freePort() {
  asio::io_context io;
  tcp::acceptor a(io, tcp::endpoint(asio::ip::make_address("127.0.0.1"), 0));
  return a.local_endpoint().port();
}

struct Job {
  int procs = 8, comms = 3, ranks = 8;
  long collectives = 2000;
  uint16_t port = 0;  // members' WIREWISE_COORDINATOR port
  std::string sync = "on";
  std::string spacing = "8";
  std::string joinTimeoutMs = "10000";
  std::map<int, long> delayMs;  // process -> start delay
  std::string syncTimeoutMs;
  std::string policy = "random-test";  // empty: WIREWISE_POLICY unset (the plugin's default)
  // As NCCL: every process's communicators exist before any runs a collective (ncclCommInitRank returns
  // together); off for tests of members that come late or never.
  bool barrier = true;
  long paceUs = 50;  // between rounds of collectives (a GPU's pace, not a tight loop)
  // Launcher-only: no WIREWISE_COORDINATOR or WIREWISE_JOB_KEY (the rendezvous and key come from the
  // launcher's variables in `env`); sync empty: WIREWISE_SYNC unset (the plugin's default).
  bool launcher = false;
  int first = 0;  // the processes' file numbers start here (two jobs in one test directory)
  std::string netns;  // run the processes in this network namespace (ip netns add): the test's own network
  std::map<int, std::map<std::string, std::string>> env;  // process -> extra environment
};

class MultiProcess : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/ww-mp-XXXXXX";
    ASSERT_NE(mkdtemp(tmpl), nullptr);
    dir_ = tmpl;
  }
  void TearDown() override {
    if (std::getenv("WW_KEEP_TEST_DIR") == nullptr) std::filesystem::remove_all(dir_);
  }

  std::string out(int p) const { return dir_ + "/rank" + std::to_string(p) + ".bin"; }

  // The driver's timing of process p: microseconds to the end of its communicators' init, and from then to
  // its 1,000th round.
  std::pair<int64_t, int64_t> timing(int p) const {
    std::ifstream f(out(p) + ".timing");
    int64_t init = -1, to1000 = -1;
    f >> init >> to1000;
    return {init, to1000};
  }

  // What waited_us says in process p's comm_finalize lines, summed: the time its getCollInfo calls waited.
  uint64_t waitedUs(int p) const {
    std::ifstream f(dir_ + "/log" + std::to_string(p) + ".jsonl");
    std::string line;
    uint64_t total = 0;
    const std::string key = "\"waited_us\":";
    while (std::getline(f, line))
      if (size_t at = line.find(key); at != std::string::npos) total += std::stoull(line.substr(at + key.size()));
    return total;
  }

  // Runs the job to completion; returns per process the recorded decisions (empty on failure).
  std::vector<std::vector<uint8_t>> run(const Job& job) { return finish(job, spawn(job)); }

  std::vector<pid_t> spawn(const Job& job) {
    std::vector<pid_t> kids;
    for (int p = 0; p < job.procs; ++p) {
      pid_t pid = fork();
      if (pid == 0) {
        closeInheritedFds();
        if (!job.netns.empty()) {
          int fd = open(("/var/run/netns/" + job.netns).c_str(), O_RDONLY | O_CLOEXEC);
          if (fd < 0 || setns(fd, CLONE_NEWNET) != 0) _exit(126);
        }
        const int f = job.first + p;
        if (job.sync.empty())
          unsetenv("WIREWISE_SYNC");
        else
          setenv("WIREWISE_SYNC", job.sync.c_str(), 1);
        if (!job.launcher) {
          setenv("WIREWISE_COORDINATOR", ("127.0.0.1:" + std::to_string(job.port)).c_str(), 1);
          setenv("WIREWISE_JOB_KEY", kKey, 1);
        } else {
          for (const char* v : {"WIREWISE_COORDINATOR", "WIREWISE_JOB_KEY", "WIREWISE_JOB_KEY_FILE", "MASTER_ADDR",
                                "MASTER_PORT", "TORCHELASTIC_RUN_ID", "SLURM_JOB_ID", "SLURM_STEP_ID",
                                "SLURM_JOB_NODELIST", "OMPI_MCA_ess_base_jobid", "PMIX_NAMESPACE"})
            unsetenv(v);
        }
        if (job.policy.empty())
          unsetenv("WIREWISE_POLICY");
        else
          setenv("WIREWISE_POLICY", job.policy.c_str(), 1);
        setenv("WIREWISE_BOUNDARY_SPACING", job.spacing.c_str(), 1);
        setenv("WIREWISE_JOIN_TIMEOUT_MS", job.joinTimeoutMs.c_str(), 1);
        setenv("WIREWISE_SYNC_TIMEOUT_MS", "2000", 1);
        setenv("WIREWISE_LOG", (dir_ + "/log" + std::to_string(f) + ".jsonl").c_str(), 1);
        if (job.barrier)
          setenv("WW_TEST_BARRIER", (dir_ + ":" + std::to_string(job.first) + ":" + std::to_string(job.procs)).c_str(),
                 1);
        setenv("WW_TEST_PACE_US", std::to_string(job.paceUs).c_str(), 1);
        unsetenv("WIREWISE_CONFIG");
        if (!job.syncTimeoutMs.empty()) setenv("WIREWISE_SYNC_TIMEOUT_MS", job.syncTimeoutMs.c_str(), 1);
        if (job.env.count(p))
          for (const auto& [k, v] : job.env.at(p)) setenv(k.c_str(), v.c_str(), 1);
        if (FILE* err = std::freopen((dir_ + "/err" + std::to_string(f) + ".txt").c_str(), "w", stderr)) (void)err;
        std::string delay = std::to_string(job.delayMs.count(p) ? job.delayMs.at(p) : 0);
        std::string o = out(f), comms = std::to_string(job.comms), ranks = std::to_string(job.ranks),
                    coll = std::to_string(job.collectives);
        execl(WW_MEMBER_DRIVER, WW_MEMBER_DRIVER, WW_TUNER_SO, o.c_str(), comms.c_str(), ranks.c_str(), coll.c_str(),
              delay.c_str(), static_cast<char*>(nullptr));
        _exit(127);
      }
      kids.push_back(pid);
    }
    return kids;
  }

  std::vector<std::vector<uint8_t>> finish(const Job& job, const std::vector<pid_t>& kids) {
    // Every output written, then the job ends together.
    const char* limit = std::getenv("WW_MP_DEADLINE_S");
    auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(limit ? std::atoi(limit) : 150);
    for (int p = 0; p < job.procs; ++p)
      waitUntil([&] { return std::filesystem::exists(out(job.first + p)); }, deadline - std::chrono::steady_clock::now(),
                std::chrono::milliseconds(5));
    for (int p = 0; p < job.procs; ++p) std::ofstream(out(job.first + p) + ".go") << "go";
    std::vector<std::vector<uint8_t>> rec;
    for (int p = 0; p < job.procs; ++p) {
      int status = 0;
      if (std::chrono::steady_clock::now() >= deadline) kill(kids[static_cast<size_t>(p)], SIGKILL);
      waitpid(kids[static_cast<size_t>(p)], &status, 0);
      EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << "process " << p << " status " << status;
      std::ifstream f(out(job.first + p), std::ios::binary);
      rec.emplace_back(std::istreambuf_iterator<char>(f), std::istreambuf_iterator<char>());
    }
    return rec;
  }

  // Every member of every comm made the same decisions (from collective `from` of each comm on); returns
  // how many collectives (per comm and process) differ from NCCL's own choice, to show that tables really
  // changed.
  size_t checkIdentical(const Job& job, const std::vector<std::vector<uint8_t>>& rec, long from = 0) {
    const size_t perProc = static_cast<size_t>(job.comms) * static_cast<size_t>(job.collectives) * 3;
    size_t changed = 0;
    for (size_t p = 0; p < rec.size(); ++p) {
      EXPECT_EQ(rec[p].size(), perProc) << "process " << p;
      if (rec[p].size() != perProc || rec[0].size() != perProc) return 0;
      for (size_t i = 0; i < perProc; i += 3) {
        if (static_cast<long>((i / 3) % static_cast<size_t>(job.collectives)) < from) continue;
        if (rec[p][i] != rec[0][i] || rec[p][i + 1] != rec[0][i + 1] || rec[p][i + 2] != rec[0][i + 2]) {
          size_t coll = i / 3;
          ADD_FAILURE() << "divergence: process " << p << ", comm " << coll / static_cast<size_t>(job.collectives)
                        << ", collective " << coll % static_cast<size_t>(job.collectives);
          return 0;
        }
        // NCCL alone: ring (1), LL (0), 8 channels.
        if (p == 0 && !(rec[0][i] == 1 && rec[0][i + 1] == 0 && rec[0][i + 2] == 8)) ++changed;
      }
    }
    return changed;
  }

  // Socket inodes ("socket:[N]") open in process `pid` ("self": this one).
  static std::set<std::string> socketsOf(const std::string& pid) {
    std::set<std::string> out;
    std::error_code ec;
    for (const auto& e : std::filesystem::directory_iterator("/proc/" + pid + "/fd", ec)) {
      std::error_code lec;
      std::string target = std::filesystem::read_symlink(e.path(), lec).string();
      if (!lec && target.rfind("socket:", 0) == 0) out.insert(target);
    }
    return out;
  }

  // No child holds a socket of this process (the proxy's, the hosted coordinator's): a copy of a proxied
  // connection would hide the proxy's cut from its member.
  void expectNoInheritedSockets(const std::vector<pid_t>& kids) {
    const auto mine = socketsOf("self");
    ASSERT_FALSE(mine.empty());
    for (size_t p = 0; p < kids.size(); ++p) {
      const std::string pid = std::to_string(kids[p]);
      // Once the child runs the driver it has closed what it inherited (that happens before exec).
      auto running = [&] {
        std::ifstream f("/proc/" + pid + "/cmdline");
        std::string cmd((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
        return cmd.find("control_member_driver") != std::string::npos;
      };
      waitUntil(running, std::chrono::seconds(10));
      for (const auto& s : socketsOf(pid)) EXPECT_EQ(mine.count(s), 0u) << "process " << p << " holds our " << s;
    }
  }

  // Waits (up to 30 s) until every process has logged, for every comm, a verdict with index `index` or
  // later; false if they did not. A process logs a verdict only when it changes the table (the random
  // test policy's: at most boundaries), so "or later".
  bool awaitVerdict(const Job& job, int index) const {
    const auto reached = [&] {
      for (int p = 0; p < job.procs; ++p) {
        std::set<std::string> comms;
        std::ifstream f(dir_ + "/log" + std::to_string(p) + ".jsonl");
        std::string line;
        while (std::getline(f, line)) {
          if (line.find("\"event\":\"verdict\"") == std::string::npos) continue;
          const auto e = nlohmann::json::parse(line, nullptr, false);
          if (e.is_object() && e.value("index", -1) >= index) comms.insert(e.value("comm", ""));
        }
        if (comms.size() < static_cast<size_t>(job.comms)) return false;
      }
      return true;
    };
    return waitUntil(reached, std::chrono::seconds(30), std::chrono::milliseconds(20));
  }

  size_t countLog(int procs, const std::string& needle, const char* file = "/log", const char* ext = ".jsonl",
                  int first = 0) const {
    size_t n = 0;
    for (int p = first; p < first + procs; ++p) {
      std::ifstream f(dir_ + file + std::to_string(p) + ext);
      std::string line;
      while (std::getline(f, line)) n += line.find(needle) != std::string::npos;
    }
    return n;
  }

  std::string dir_;
};

// A coordinator hosted by the test process itself (the members cannot bind its port, so they connect). Its
// log lines are kept: the coordinator logs (and must be able to log) observe-only comms and dropped clients.
class HostedCoordinator {
 public:
  explicit HostedCoordinator(uint16_t port, bool deterministic = false, const char* key = kKey) {
    ControlOptions o;
    o.host = "127.0.0.1";
    o.port = port;
    o.jobKey.assign(key, key + std::strlen(key));
    o.policy = PolicyKind::RandomTest;
    o.params.deterministic = deterministic;
    o.params.useFixedSpacing = true;
    o.params.fixedSpacing = 8;
    o.log = [this](bool, const std::string& line) {
      std::lock_guard<std::mutex> lock(mu_);
      lines_.push_back(line);
    };
    plane = std::make_unique<ControlPlane>(std::move(o));
  }
  HostedCoordinator(const HostedCoordinator&) = delete;
  HostedCoordinator& operator=(const HostedCoordinator&) = delete;
  // Coordinator log lines that contain `needle`.
  size_t logged(const std::string& needle) {
    std::lock_guard<std::mutex> lock(mu_);
    size_t n = 0;
    for (const auto& l : lines_) n += l.find(needle) != std::string::npos;
    return n;
  }

 private:
  std::mutex mu_;
  std::vector<std::string> lines_;

 public:
  std::unique_ptr<ControlPlane> plane;  // last: stopped before the log it writes to goes
};

// What the proxy does to the connections it forwards.
struct ProxyFaults {
  int cutEveryMs = 0;                      // cut a random connection this often; 0: never
  int maxDelayMs = 0;                      // hold each chunk a random 0..maxDelayMs ms; 0: no hold
  int burstEveryMs = 0;                    // this often stall a random connection, both directions; 0: never
  int burstMinMs = 200, burstMaxMs = 400;  // a stall's length, uniform in [min, max]
  uint32_t seed = 12345;
};

inline ProxyFaults cutsEvery(int everyMs) {
  ProxyFaults f;
  f.cutEveryMs = everyMs;
  return f;
}

// Forwards member connections to the coordinator; cuts a random one every few milliseconds and/or delays
// bytes. A delayed chunk is held until its due time, never before the chunk read before it on the same
// connection and direction: TCP's order holds, only timing changes, as on a congested or lossy network.
class CuttingProxy {
 public:
  CuttingProxy(uint16_t listen, uint16_t target, int cutEveryMs)
      : CuttingProxy(listen, target, cutsEvery(cutEveryMs)) {}
  CuttingProxy(uint16_t listen, uint16_t target, ProxyFaults faults)
      : acceptor_(io_, tcp::endpoint(asio::ip::make_address("127.0.0.1"), listen)),
        target_(asio::ip::make_address("127.0.0.1"), target),
        cutTimer_(io_),
        burstTimer_(io_),
        faults_(faults),
        rng_(faults.seed) {
    accept();
    if (faults_.cutEveryMs > 0) armCut();
    if (faults_.burstEveryMs > 0) armBurst();
    thread_ = std::thread([this] { io_.run(); });
  }
  ~CuttingProxy() {
    asio::post(io_, [this] {
      stopped_ = true;
      boost::system::error_code ec;
      acceptor_.close(ec);
      cutTimer_.cancel();
      burstTimer_.cancel();
      for (auto& p : pairs_) closePair(p);
    });
    thread_.join();
  }
  int cuts() const { return cuts_.load(); }
  // Chunks forwarded; of those, held at least 1 ms; bursts started; the longest hold (ms).
  uint64_t chunks() const { return chunks_.load(); }
  uint64_t delayedChunks() const { return delayed_.load(); }
  int bursts() const { return bursts_.load(); }
  int64_t maxHeldMs() const { return maxHeldMs_.load(); }

 private:
  using Clock = std::chrono::steady_clock;
  struct Chunk {
    std::vector<uint8_t> bytes;
    Clock::time_point read, due;
  };
  struct Direction {
    tcp::socket* from;
    tcp::socket* to;
    std::array<uint8_t, 8192> buf{};
    std::deque<Chunk> queue;  // delayed mode only
    Clock::time_point lastDue{};
    bool writing = false;
    asio::steady_timer timer;
    Direction(asio::io_context& io, tcp::socket* f, tcp::socket* t) : from(f), to(t), timer(io) {}
  };
  struct Pair {
    tcp::socket a, b;
    Direction ab, ba;
    Clock::time_point holdUntil{};  // a burst stalls both directions until then
    explicit Pair(asio::io_context& io) : a(io), b(io), ab(io, &a, &b), ba(io, &b, &a) {}
  };
  static void closePair(const std::shared_ptr<Pair>& p) {
    boost::system::error_code ec;
    p->a.close(ec);
    p->b.close(ec);
    p->ab.timer.cancel();
    p->ba.timer.cancel();
  }
  bool delaying() const { return faults_.maxDelayMs > 0 || faults_.burstEveryMs > 0; }
  void noteHeld(Clock::duration held) {
    ++chunks_;
    auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(held).count();
    if (ms >= 1) ++delayed_;
    if (ms > maxHeldMs_.load()) maxHeldMs_ = ms;
  }
  // Without delays: read, write, read (the peer's pace). With delays: reading never waits for writing.
  void pump(std::shared_ptr<Pair> p, Direction& d) {
    d.from->async_read_some(asio::buffer(d.buf), [this, p, &d](boost::system::error_code ec, size_t n) {
      if (ec || stopped_) return closePair(p);
      if (!delaying()) {
        noteHeld({});
        asio::async_write(*d.to, asio::buffer(d.buf.data(), n),
                          [this, p, &d](boost::system::error_code wec, size_t) {
                            if (wec) return closePair(p);
                            pump(p, d);
                          });
        return;
      }
      auto now = Clock::now();
      auto delay = std::chrono::milliseconds(faults_.maxDelayMs > 0 ? rng_() % (faults_.maxDelayMs + 1) : 0);
      d.lastDue = std::max(now + delay, d.lastDue);
      d.queue.push_back({std::vector<uint8_t>(d.buf.begin(), d.buf.begin() + static_cast<std::ptrdiff_t>(n)), now,
                         d.lastDue});
      if (!d.writing) writeDue(p, d);
      pump(p, d);
    });
  }
  // Writes the queue's front once it is due and no burst holds the connection, then the next.
  void writeDue(const std::shared_ptr<Pair>& p, Direction& d) {
    if (d.queue.empty() || !d.to->is_open()) {
      d.writing = false;
      return;
    }
    d.writing = true;
    auto when = std::max(d.queue.front().due, p->holdUntil);
    if (Clock::now() < when) {
      d.timer.expires_at(when);
      d.timer.async_wait([this, p, &d](boost::system::error_code ec) {
        if (ec || stopped_) return closePair(p);
        writeDue(p, d);
      });
      return;
    }
    noteHeld(Clock::now() - d.queue.front().read);
    asio::async_write(*d.to, asio::buffer(d.queue.front().bytes),
                      [this, p, &d](boost::system::error_code wec, size_t) {
                        if (wec || stopped_) return closePair(p);
                        d.queue.pop_front();
                        writeDue(p, d);
                      });
  }
  void accept() {
    auto p = std::make_shared<Pair>(io_);
    acceptor_.async_accept(p->a, [this, p](boost::system::error_code ec) {
      if (stopped_) return;
      if (!ec) {
        p->b.async_connect(target_, [this, p](boost::system::error_code cec) {
          if (cec || stopped_) return closePair(p);
          pairs_.push_back(p);
          pump(p, p->ab);
          pump(p, p->ba);
        });
      }
      accept();
    });
  }
  // A random open connection; `unheld`: not one that a burst stalls now (a cut would end the stall early, and
  // the two faults are meant to add up, not cancel).
  std::shared_ptr<Pair> randomOpenPair(bool unheld) {
    std::erase_if(pairs_, [](const std::shared_ptr<Pair>& p) { return !p->a.is_open(); });
    std::vector<std::shared_ptr<Pair>> pick;
    auto now = Clock::now();
    for (const auto& p : pairs_)
      if (!unheld || p->holdUntil <= now) pick.push_back(p);
    return pick.empty() ? nullptr : pick[rng_() % pick.size()];
  }
  void armCut() {
    cutTimer_.expires_after(std::chrono::milliseconds(faults_.cutEveryMs));
    cutTimer_.async_wait([this](boost::system::error_code ec) {
      if (ec || stopped_) return;
      if (auto p = randomOpenPair(true)) {
        closePair(p);
        ++cuts_;
      }
      armCut();
    });
  }
  void armBurst() {
    burstTimer_.expires_after(std::chrono::milliseconds(faults_.burstEveryMs));
    burstTimer_.async_wait([this](boost::system::error_code ec) {
      if (ec || stopped_) return;
      if (auto p = randomOpenPair(false)) {
        int span = std::max(0, faults_.burstMaxMs - faults_.burstMinMs);
        auto len = std::chrono::milliseconds(faults_.burstMinMs + static_cast<int>(rng_() % (span + 1u)));
        p->holdUntil = std::max(p->holdUntil, Clock::now() + len);
        ++bursts_;
      }
      armBurst();
    });
  }

  asio::io_context io_;
  tcp::acceptor acceptor_;
  tcp::endpoint target_;
  asio::steady_timer cutTimer_, burstTimer_;
  ProxyFaults faults_;
  bool stopped_ = false;
  std::mt19937 rng_;
  std::vector<std::shared_ptr<Pair>> pairs_;
  std::atomic<int> cuts_{0}, bursts_{0};
  std::atomic<uint64_t> chunks_{0}, delayed_{0};
  std::atomic<int64_t> maxHeldMs_{0};
  std::thread thread_;
};

}  // namespace wirewise::control
