// The simulator's ranks spread over several real processes (SimOptions::procs): the fork, one channel between
// process 0 (the caller) and each child, and the supervision that turns a child's death into an error rather
// than a hang. Messages are frames of a type letter and a payload; the driver's lock-step protocol on top of
// them is in engine.cc. See docs/simulator.md ("Several processes").
#pragma once

#include <sys/types.h>

#include <atomic>
#include <condition_variable>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

namespace wirewise::sim {

class ProcessGroup {
 public:
  // Forks procs - 1 children; each returns from here with index() 1..procs-1, the caller with index() 0.
  // fork copies only the calling thread, so the caller must run a single thread (no plugin loaded yet):
  // throws std::runtime_error otherwise, and when a fork or channel fails (children already forked are
  // killed). procs 1: nothing is forked. watchdogSeconds: see stopWatchdog.
  explicit ProcessGroup(int procs, int watchdogSeconds = kWatchdogSeconds);
  // Process 0: stops the watchdog, closes the channels and reaps every child not yet reaped (SIGKILL after
  // a grace period). Children never run it: they leave through exitChild.
  ~ProcessGroup();
  ProcessGroup(const ProcessGroup&) = delete;
  ProcessGroup& operator=(const ProcessGroup&) = delete;

  int size() const { return procs_; }
  int index() const { return index_; }
  bool parent() const { return index_ == 0; }
  pid_t pid(int p) const { return pids_[static_cast<size_t>(p)]; }  // process 0: every pid; a child: 0 and its own

  // A child: one frame to process 0, and the next frame from it. receive throws std::runtime_error when
  // process 0 is gone or the frame has another type.
  void send(char type, const std::string& payload);
  std::string receive(char type);
  // A child leaves here (no destructors, no atexit handlers: they belong to process 0).
  [[noreturn]] static void exitChild(int code);

  // Process 0: the same frame to every child; one frame of `type` from every child (index p - 1 for child
  // p). Both throw std::runtime_error naming the child when one has died (with its exit status), sent an
  // 'E' frame (its error message), or sent nothing for stallSeconds while process 0 waited for it.
  void broadcast(char type, const std::string& payload);
  std::vector<std::string> gather(char type);
  // Process 0, once every child has sent its last frame: waits for each to exit; throws unless all exit 0.
  void finish();
  // Process 0 giving up on the run: kills and reaps every child now (before its own plugin goes, so that
  // the children do not wait for the coordinator, or warn that it is gone).
  void abort();

  // Process 0 may block inside the plugin (a rank waiting at a boundary for a verdict that needs a dead
  // child's report), where gather cannot notice the death. The watchdog thread then ends the process:
  // when a child has been dead for watchdogSeconds without process 0 noticing, it writes why to stderr,
  // kills the other children and calls _exit(2). Started by the constructor; stopped here (before the
  // children are expected to exit) or by the destructor.
  void stopWatchdog();

  static constexpr int kStallSeconds = 120;
  static constexpr int kWatchdogSeconds = 15;

 private:
  struct Child {
    pid_t pid = 0;
    int fd = -1;
    std::string in;  // bytes received, not yet taken as frames
    bool closed = false;  // end of file seen
    bool reaped = false;
    int status = 0;
  };
  std::string describe(int p);  // "process p (pid N) exited with status 3", reaping it if it has exited
  [[noreturn]] void fail(int p, const std::string& what);
  void watch();
  void killAll();

  int procs_ = 1;
  int index_ = 0;
  int watchdogSeconds_ = kWatchdogSeconds;
  std::vector<pid_t> pids_;
  std::vector<Child> children_;  // process 0: index p - 1 for child p
  int parentFd_ = -1;            // a child: its end of the channel
  std::string parentIn_;

  std::thread watchdog_;
  std::mutex watchMu_;
  std::condition_variable watchCv_;
  bool watchStop_ = false;
  std::atomic<bool> noticed_{false};  // process 0 has noticed a dead child itself
};

}  // namespace wirewise::sim
