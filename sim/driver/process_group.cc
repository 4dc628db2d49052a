#include "sim/driver/process_group.h"

#include <dirent.h>
#include <poll.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <csignal>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <stdexcept>

namespace wirewise::sim {
namespace {

using Clock = std::chrono::steady_clock;

// A frame: u32 payload length (host order: both ends are this machine), u8 type, payload.
constexpr size_t kHeader = 5;
constexpr uint32_t kMaxPayload = 64u << 20;

std::string frame(char type, const std::string& payload) {
  std::string f(kHeader, '\0');
  const uint32_t n = static_cast<uint32_t>(payload.size());
  std::memcpy(f.data(), &n, 4);
  f[4] = type;
  return f + payload;
}

// Takes one whole frame off the front of buf; false when buf does not hold one yet.
bool takeFrame(std::string* buf, char* type, std::string* payload) {
  if (buf->size() < kHeader) return false;
  uint32_t n = 0;
  std::memcpy(&n, buf->data(), 4);
  if (n > kMaxPayload)
    throw std::runtime_error("simulator processes: a malformed frame (length " + std::to_string(n) + ")");
  if (buf->size() < kHeader + n) return false;
  *type = (*buf)[4];
  payload->assign(*buf, kHeader, n);
  buf->erase(0, kHeader + n);
  return true;
}

// false when the peer is gone. MSG_NOSIGNAL: a dead peer must give EPIPE, not kill this process.
bool sendAll(int fd, const std::string& data) {
  size_t off = 0;
  while (off < data.size()) {
    const ssize_t n = ::send(fd, data.data() + off, data.size() - off, MSG_NOSIGNAL);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    off += static_cast<size_t>(n);
  }
  return true;
}

// Appends what can be read now. Returns false at end of file (or a broken channel).
bool readSome(int fd, std::string* buf) {
  char tmp[4096];
  for (;;) {
    const ssize_t n = ::recv(fd, tmp, sizeof tmp, MSG_DONTWAIT);
    if (n > 0) {
      buf->append(tmp, static_cast<size_t>(n));
      if (static_cast<size_t>(n) < sizeof tmp) return true;
      continue;
    }
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) return true;
    return false;
  }
}

int threadCount() {
  DIR* d = ::opendir("/proc/self/task");
  if (d == nullptr) return 1;  // cannot tell: assume the caller knows
  int n = 0;
  while (const dirent* e = ::readdir(d))
    if (e->d_name[0] != '.') ++n;
  ::closedir(d);
  return n;
}

std::string statusText(int status) {
  if (WIFEXITED(status)) return "exited with status " + std::to_string(WEXITSTATUS(status));
  if (WIFSIGNALED(status)) {
    const char* name = ::strsignal(WTERMSIG(status));
    return "was killed by signal " + std::to_string(WTERMSIG(status)) +
           (name != nullptr ? std::string(" (") + name + ")" : "");
  }
  return "ended (status " + std::to_string(status) + ")";
}

}  // namespace

ProcessGroup::ProcessGroup(int procs, int watchdogSeconds) : procs_(procs), watchdogSeconds_(watchdogSeconds) {
  if (procs < 1) throw std::runtime_error("procs must be at least 1");
  pids_.assign(static_cast<size_t>(procs), 0);
  pids_[0] = ::getpid();
  if (procs == 1) return;
  if (const int t = threadCount(); t > 1)
    throw std::runtime_error("procs > 1 forks, and this process already runs " + std::to_string(t) +
                             " threads (fork copies only the caller); run the simulation from a single-threaded "
                             "process");
  // Buffered output would otherwise be written once by every process.
  std::fflush(nullptr);
  for (int p = 1; p < procs; ++p) {
    int sv[2];
    if (::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) != 0) {
      const std::string why = std::strerror(errno);
      killAll();
      throw std::runtime_error("simulator processes: socketpair failed: " + why);
    }
    const pid_t pid = ::fork();
    if (pid < 0) {
      const std::string why = std::strerror(errno);
      ::close(sv[0]);
      ::close(sv[1]);
      killAll();
      throw std::runtime_error("simulator processes: fork failed: " + why);
    }
    if (pid == 0) {
      // The child: only its own end. Holding a sibling's parent end would hide that sibling's death.
      for (Child& c : children_) ::close(c.fd);
      children_.clear();
      ::close(sv[0]);
      parentFd_ = sv[1];
      index_ = p;
      pids_[static_cast<size_t>(p)] = ::getpid();
      // Process 0 gone (killed, crashed) means nobody will ever read this child's frames.
      ::prctl(PR_SET_PDEATHSIG, SIGKILL);
      if (::getppid() != pids_[0]) exitChild(1);
      return;
    }
    ::close(sv[1]);
    pids_[static_cast<size_t>(p)] = pid;
    Child c;
    c.pid = pid;
    c.fd = sv[0];
    children_.push_back(std::move(c));
  }
  watchdog_ = std::thread([this] { watch(); });
}

ProcessGroup::~ProcessGroup() {
  if (!parent()) return;
  stopWatchdog();
  for (Child& c : children_) {
    if (c.fd >= 0) ::close(c.fd);
    c.fd = -1;
  }
  // Children read end of file and leave; one stuck in the plugin is killed.
  const auto deadline = Clock::now() + std::chrono::seconds(2);
  for (Child& c : children_) {
    while (!c.reaped) {
      const pid_t r = ::waitpid(c.pid, &c.status, WNOHANG);
      if (r == c.pid || (r < 0 && errno != EINTR)) {
        c.reaped = true;
      } else if (Clock::now() >= deadline) {
        ::kill(c.pid, SIGKILL);
        while (::waitpid(c.pid, &c.status, 0) < 0 && errno == EINTR) {
        }
        c.reaped = true;
      } else {
        ::usleep(2000);
      }
    }
  }
}

void ProcessGroup::killAll() {
  for (Child& c : children_) {
    if (c.reaped) continue;
    ::kill(c.pid, SIGKILL);
    while (::waitpid(c.pid, &c.status, 0) < 0 && errno == EINTR) {
    }
    c.reaped = true;
    if (c.fd >= 0) ::close(c.fd);
    c.fd = -1;
  }
}

void ProcessGroup::exitChild(int code) { ::_exit(code); }

void ProcessGroup::abort() {
  if (!parent()) return;
  noticed_ = true;
  stopWatchdog();
  killAll();
}

void ProcessGroup::send(char type, const std::string& payload) {
  if (!sendAll(parentFd_, frame(type, payload)))
    throw std::runtime_error("simulator process " + std::to_string(index_) + ": process 0 is gone");
}

std::string ProcessGroup::receive(char type) {
  char t = 0;
  std::string payload;
  bool open = true;
  while (!takeFrame(&parentIn_, &t, &payload)) {
    if (!open || ::getppid() != pids_[0])
      throw std::runtime_error("simulator process " + std::to_string(index_) + ": process 0 is gone");
    pollfd pf{parentFd_, POLLIN, 0};
    const int r = ::poll(&pf, 1, 1000);
    if (r < 0 && errno != EINTR) throw std::runtime_error("simulator process: poll failed");
    if (r > 0) open = readSome(parentFd_, &parentIn_);
  }
  if (t != type)
    throw std::runtime_error("simulator process " + std::to_string(index_) + ": expected frame '" +
                             std::string(1, type) + "', got '" + std::string(1, t) + "'");
  return payload;
}

void ProcessGroup::broadcast(char type, const std::string& payload) {
  const std::string f = frame(type, payload);
  for (size_t i = 0; i < children_.size(); ++i)
    if (!sendAll(children_[i].fd, f)) fail(static_cast<int>(i) + 1, "closed its channel");
}

std::vector<std::string> ProcessGroup::gather(char type) {
  const size_t n = children_.size();
  std::vector<std::string> out(n);
  std::vector<char> have(n, 0);
  size_t missing = n;
  std::vector<pollfd> pfs;
  std::vector<size_t> which;
  auto lastProgress = Clock::now();
  for (;;) {
    for (size_t i = 0; i < n; ++i) {
      if (have[i]) continue;
      const int p = static_cast<int>(i) + 1;
      char t = 0;
      if (!takeFrame(&children_[i].in, &t, &out[i])) {
        // Frames it sent before closing come first: a last 'E' frame says more than the exit status.
        if (children_[i].closed) fail(p, "closed its channel");
        continue;
      }
      if (t == 'E') fail(p, "failed: " + out[i]);
      if (t != type) fail(p, std::string("sent frame '") + t + "' where '" + type + "' was due");
      have[i] = 1;
      --missing;
    }
    if (missing == 0) return out;
    pfs.clear();
    which.clear();
    for (size_t i = 0; i < n; ++i)
      if (!have[i]) {
        pfs.push_back({children_[i].fd, POLLIN, 0});
        which.push_back(i);
      }
    const int r = ::poll(pfs.data(), pfs.size(), 1000);
    if (r < 0 && errno != EINTR) throw std::runtime_error("simulator processes: poll failed");
    for (size_t j = 0; r > 0 && j < pfs.size(); ++j) {
      if (pfs[j].revents == 0) continue;
      Child& c = children_[which[j]];
      const size_t before = c.in.size();
      c.closed = !readSome(c.fd, &c.in);
      if (c.in.size() != before) lastProgress = Clock::now();
    }
    if (Clock::now() - lastProgress > std::chrono::seconds(kStallSeconds)) {
      std::string who;
      for (size_t i : which) who += (who.empty() ? "" : ", ") + std::to_string(i + 1);
      noticed_ = true;
      killAll();
      throw std::runtime_error("simulator process(es) " + who + " sent nothing for " + std::to_string(kStallSeconds) +
                               " s (blocked in the plugin? its WARNs and the adaptation log say where)");
    }
  }
}

std::string ProcessGroup::describe(int p) {
  Child& c = children_[static_cast<size_t>(p) - 1];
  // The channel closes as the process exits: give it a moment to be reaped, for its status.
  const auto deadline = Clock::now() + std::chrono::seconds(2);
  while (!c.reaped && Clock::now() < deadline) {
    const pid_t r = ::waitpid(c.pid, &c.status, WNOHANG);
    if (r == c.pid) c.reaped = true;
    else if (r < 0 && errno != EINTR) break;
    else ::usleep(2000);
  }
  const std::string who = "simulator process " + std::to_string(p) + " (pid " + std::to_string(c.pid) + ")";
  return c.reaped ? who + " " + statusText(c.status) : who;
}

void ProcessGroup::fail(int p, const std::string& what) {
  noticed_ = true;
  const std::string why = describe(p) + ": " + what;
  // The run is lost: the others go now, before process 0's plugin (and the coordinator) does.
  killAll();
  throw std::runtime_error(why);
}

void ProcessGroup::finish() {
  stopWatchdog();
  for (size_t i = 0; i < children_.size(); ++i) {
    Child& c = children_[i];
    const auto deadline = Clock::now() + std::chrono::seconds(30);
    while (!c.reaped) {
      const pid_t r = ::waitpid(c.pid, &c.status, WNOHANG);
      if (r == c.pid) {
        c.reaped = true;
      } else if (r < 0 && errno == ECHILD) {
        c.reaped = true;  // SIGCHLD ignored by the caller: reaped by the kernel, status unknown
        c.status = 0;
      } else if (r < 0 && errno != EINTR) {
        throw std::runtime_error("simulator processes: waitpid failed");
      } else if (Clock::now() >= deadline) {
        fail(static_cast<int>(i) + 1, "did not exit after its last frame");
      } else {
        ::usleep(1000);
      }
    }
    if (!WIFEXITED(c.status) || WEXITSTATUS(c.status) != 0)
      throw std::runtime_error("simulator process " + std::to_string(i + 1) + " (pid " + std::to_string(c.pid) + ") " +
                               statusText(c.status));
  }
}

void ProcessGroup::stopWatchdog() {
  {
    std::lock_guard<std::mutex> lock(watchMu_);
    watchStop_ = true;
  }
  watchCv_.notify_all();
  if (watchdog_.joinable()) watchdog_.join();
}

void ProcessGroup::watch() {
  std::vector<Clock::time_point> deadSince(children_.size());
  std::vector<char> dead(children_.size(), 0);
  std::unique_lock<std::mutex> lock(watchMu_);
  while (!watchStop_) {
    watchCv_.wait_for(lock, std::chrono::milliseconds(200), [this] { return watchStop_; });
    if (watchStop_ || noticed_) return;
    for (size_t i = 0; i < children_.size(); ++i) {
      siginfo_t si{};
      // WNOWAIT: only look; the main thread reaps (and reads the status) when it notices.
      if (dead[i] || ::waitid(P_PID, static_cast<id_t>(children_[i].pid), &si, WEXITED | WNOHANG | WNOWAIT) != 0 ||
          si.si_pid == 0)
        continue;
      dead[i] = 1;
      deadSince[i] = Clock::now();
    }
    for (size_t i = 0; i < children_.size(); ++i) {
      if (!dead[i] || Clock::now() - deadSince[i] < std::chrono::seconds(watchdogSeconds_) || noticed_) continue;
      std::fprintf(stderr,
                   "wirewise simulate: simulator process %zu (pid %d) died %d s ago and process 0 is blocked in the "
                   "plugin (a rank waiting for a verdict that needs the dead process's report); giving up\n",
                   i + 1, static_cast<int>(children_[i].pid), watchdogSeconds_);
      for (const Child& c : children_) ::kill(c.pid, SIGKILL);
      ::_exit(2);
    }
  }
}

}  // namespace wirewise::sim
