// The harness of the multi-process agreement tests: N child processes (control_member_driver) each load the
// real plugin through the NCCL-faithful loader and run several communicators' collective sequences; the
// checker proves that every member of each communicator made the identical decision at every collective.
#pragma once

#include <gtest/gtest.h>
#include <signal.h>
#include <stdio.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/read.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/write.hpp>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <random>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "control/control_plane.h"
#include "control/wire.h"

namespace wirewise::control {

namespace asio = boost::asio;
using asio::ip::tcp;

inline const char* kKey = "multiprocess-test-key";

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

  // Runs the job to completion; returns per process the recorded decisions (empty on failure).
  std::vector<std::vector<uint8_t>> run(const Job& job) { return finish(job, spawn(job)); }

  std::vector<pid_t> spawn(const Job& job) {
    std::vector<pid_t> kids;
    for (int p = 0; p < job.procs; ++p) {
      pid_t pid = fork();
      if (pid == 0) {
        setenv("WIREWISE_SYNC", job.sync.c_str(), 1);
        setenv("WIREWISE_COORDINATOR", ("127.0.0.1:" + std::to_string(job.port)).c_str(), 1);
        setenv("WIREWISE_JOB_KEY", kKey, 1);
        setenv("WIREWISE_POLICY", "random-test", 1);
        setenv("WIREWISE_BOUNDARY_SPACING", job.spacing.c_str(), 1);
        setenv("WIREWISE_JOIN_TIMEOUT_MS", job.joinTimeoutMs.c_str(), 1);
        setenv("WIREWISE_SYNC_TIMEOUT_MS", "2000", 1);
        setenv("WIREWISE_LOG", (dir_ + "/log" + std::to_string(p) + ".jsonl").c_str(), 1);
        unsetenv("WIREWISE_CONFIG");
        if (!job.syncTimeoutMs.empty()) setenv("WIREWISE_SYNC_TIMEOUT_MS", job.syncTimeoutMs.c_str(), 1);
        if (FILE* err = std::freopen((dir_ + "/err" + std::to_string(p) + ".txt").c_str(), "w", stderr)) (void)err;
        std::string delay = std::to_string(job.delayMs.count(p) ? job.delayMs.at(p) : 0);
        std::string o = out(p), comms = std::to_string(job.comms), ranks = std::to_string(job.ranks),
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
      while (!std::filesystem::exists(out(p)) && std::chrono::steady_clock::now() < deadline)
        std::this_thread::sleep_for(std::chrono::milliseconds(5));
    for (int p = 0; p < job.procs; ++p) std::ofstream(out(p) + ".go") << "go";
    std::vector<std::vector<uint8_t>> rec;
    for (int p = 0; p < job.procs; ++p) {
      int status = 0;
      if (std::chrono::steady_clock::now() >= deadline) kill(kids[static_cast<size_t>(p)], SIGKILL);
      waitpid(kids[static_cast<size_t>(p)], &status, 0);
      EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << "process " << p << " status " << status;
      std::ifstream f(out(p), std::ios::binary);
      rec.emplace_back(std::istreambuf_iterator<char>(f), std::istreambuf_iterator<char>());
    }
    return rec;
  }

  // Every member of every comm made the same decisions; returns how many collectives (per comm and
  // process) differ from NCCL's own choice, to show that tables really changed.
  size_t checkIdentical(const Job& job, const std::vector<std::vector<uint8_t>>& rec) {
    const size_t perProc = static_cast<size_t>(job.comms) * static_cast<size_t>(job.collectives) * 3;
    size_t changed = 0;
    for (size_t p = 0; p < rec.size(); ++p) {
      EXPECT_EQ(rec[p].size(), perProc) << "process " << p;
      if (rec[p].size() != perProc || rec[0].size() != perProc) return 0;
      for (size_t i = 0; i < perProc; i += 3) {
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

  size_t countLog(int procs, const std::string& needle, const char* file = "/log", const char* ext = ".jsonl") const {
    size_t n = 0;
    for (int p = 0; p < procs; ++p) {
      std::ifstream f(dir_ + file + std::to_string(p) + ext);
      std::string line;
      while (std::getline(f, line)) n += line.find(needle) != std::string::npos;
    }
    return n;
  }

  std::string dir_;
};

// A coordinator hosted by the test process itself (the members cannot bind its port, so they connect).
struct HostedCoordinator {
  explicit HostedCoordinator(uint16_t port) {
    ControlOptions o;
    o.host = "127.0.0.1";
    o.port = port;
    o.jobKey.assign(kKey, kKey + std::strlen(kKey));
    o.policy = "random-test";
    o.params.useFixedSpacing = true;
    o.params.fixedSpacing = 8;
    plane = std::make_unique<ControlPlane>(std::move(o));
  }
  std::unique_ptr<ControlPlane> plane;
};

// Forwards member connections to the coordinator and cuts a random one every few milliseconds.
class CuttingProxy {
 public:
  CuttingProxy(uint16_t listen, uint16_t target, int cutEveryMs)
      : acceptor_(io_, tcp::endpoint(asio::ip::make_address("127.0.0.1"), listen)),
        target_(asio::ip::make_address("127.0.0.1"), target),
        timer_(io_),
        cutEveryMs_(cutEveryMs) {
    accept();
    arm();
    thread_ = std::thread([this] { io_.run(); });
  }
  ~CuttingProxy() {
    asio::post(io_, [this] {
      stopped_ = true;
      acceptor_.close();
      timer_.cancel();
      for (auto& p : pairs_) closePair(p);
    });
    thread_.join();
  }
  int cuts() const { return cuts_.load(); }

 private:
  struct Pair {
    tcp::socket a, b;
    std::array<uint8_t, 8192> ab{}, ba{};
    explicit Pair(asio::io_context& io) : a(io), b(io) {}
  };
  static void closePair(const std::shared_ptr<Pair>& p) {
    boost::system::error_code ec;
    p->a.close(ec);
    p->b.close(ec);
  }
  void pump(std::shared_ptr<Pair> p, tcp::socket& from, tcp::socket& to, std::array<uint8_t, 8192>& buf) {
    from.async_read_some(asio::buffer(buf), [this, p, &from, &to, &buf](boost::system::error_code ec, size_t n) {
      if (ec) return closePair(p);
      asio::async_write(to, asio::buffer(buf.data(), n),
                        [this, p, &from, &to, &buf](boost::system::error_code wec, size_t) {
                          if (wec) return closePair(p);
                          pump(p, from, to, buf);
                        });
    });
  }
  void accept() {
    auto p = std::make_shared<Pair>(io_);
    acceptor_.async_accept(p->a, [this, p](boost::system::error_code ec) {
      if (stopped_) return;
      if (!ec) {
        p->b.async_connect(target_, [this, p](boost::system::error_code cec) {
          if (cec) return closePair(p);
          pairs_.push_back(p);
          pump(p, p->a, p->b, p->ab);
          pump(p, p->b, p->a, p->ba);
        });
      }
      accept();
    });
  }
  void arm() {
    timer_.expires_after(std::chrono::milliseconds(cutEveryMs_));
    timer_.async_wait([this](boost::system::error_code ec) {
      if (ec || stopped_) return;
      std::erase_if(pairs_, [](const std::shared_ptr<Pair>& p) { return !p->a.is_open(); });
      if (!pairs_.empty()) {
        closePair(pairs_[rng_() % pairs_.size()]);
        ++cuts_;
      }
      arm();
    });
  }
  asio::io_context io_;
  tcp::acceptor acceptor_;
  tcp::endpoint target_;
  asio::steady_timer timer_;
  int cutEveryMs_;
  bool stopped_ = false;
  std::mt19937 rng_{12345};
  std::vector<std::shared_ptr<Pair>> pairs_;
  std::atomic<int> cuts_{0};
  std::thread thread_;
};

}  // namespace wirewise::control
