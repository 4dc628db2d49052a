// The progress engine (net/engine.h): per-comm cores with a baton and a request-slot ring, and the one
// engine thread.
//
// Why epoll and not Boost.Asio: the engine's wake-ups are timers, not readiness. A send completes when
// the peer's kernel acknowledged its bytes (SIOCOUTQ polling, no fd event), dead-rail detection is a
// timeout, and the comms (net/comm.h) keep their fds to themselves. So the thread is a timed loop over
// the comms with work, and the only fd it needs is an eventfd that wakes it when work appears after an
// idle spell. epoll_pwait2 on that eventfd gives microsecond timeouts with one syscall per wake-up and no
// allocation; an io_context would add a steady_timer (a timerfd behind the same epoll), a handler
// allocation and an exception-throwing API per wake-up, and a dependency the transport does not have.
// Measured figures are in docs/net.md ("Progress").
#include "net/engine.h"

#include <pthread.h>
#include <sched.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstdint>
#include <cstring>
#include <mutex>
#include <new>
#include <string>
#include <thread>
#include <vector>

#include "net/comm.h"

namespace wirewise::net::engine {
namespace {

// A slot's life: the proxy fills a free slot and publishes it (kQueued); the baton holder posts it to the
// comm (kPosted), publishes its completion (kDone); test() reports it (kReported); the baton holder
// retires it in the comm and frees the slot (kFree).
enum SlotState : int { kFree = 0, kQueued, kPosted, kDone, kReported };
constexpr uint32_t kReqMagic = 0x57575251;  // "WWRQ": a request of ours

constexpr uint64_t kDriveAfterNs = 75'000;    // a comm with work that nobody drove for this long is due
constexpr uint64_t kMaxBackoffNs = 1'000'000;  // ... backing off to this while nothing completes on it
constexpr uint64_t kMinSleepNs = 50'000;
// The engine leaves a comm to NCCL's proxy while the proxy touched it this recently. Not 75 us: on a box
// with few cores the proxy is descheduled for longer than that all the time, and an engine stepping in
// then (its wake-ups, its syscalls, the baton moving between threads) cost 20-30% of goodput on the
// 2-core test box (bench/net: one rail 84% of iperf3 instead of 117%); 1 ms is a proxy that is busy.
constexpr uint64_t kProxyQuietNs = 1'000'000;
// While the proxy polls, the engine only checks every this often whether it stopped: each wake-up of the
// engine preempts a spinning proxy on a busy box.
constexpr uint64_t kProxyCheckNs = 5'000'000;
constexpr uint64_t kIdleSleepNs = 10'000'000;  // nothing in flight anywhere

class CoreBase;

// What NCCL holds as a request: the public part of a slot.
struct Req {
  uint32_t magic = kReqMagic;
  CoreBase* core = nullptr;
  std::atomic<int> state{kFree};
  int n = 1;                    // sizes test() reports; written with sizes before kDone
  int sizes[kMaxRecvs] = {};
};

class CoreBase {
 public:
  CoreBase() = default;
  virtual ~CoreBase() = default;
  CoreBase(const CoreBase&) = delete;
  CoreBase& operator=(const CoreBase&) = delete;


  bool tryAcquire() {
    bool expected = false;
    return baton_.compare_exchange_strong(expected, true, std::memory_order_acquire, std::memory_order_relaxed);
  }
  void acquireSpin() {
    while (!tryAcquire()) sched_yield();
  }
  void release() { baton_.store(false, std::memory_order_release); }
  // Drives the comm if its baton is free (never waits): the requests completed, or -1 when it is held.
  int tryDrive(bool full, uint64_t nowNs) {
    if (!tryAcquire()) return -1;
    const int completed = driveLocked(full, nowNs);
    release();
    return completed;
  }

  // Baton held. full: drain, progress and publish completions; otherwise only retire what test() reported.
  // Returns how many requests completed. nowNs: the caller's clock reading (one per call into the data path).
  virtual int driveLocked(bool full, uint64_t nowNs) = 0;

  Status test(Req* r, int* done, int* sizes);

  // Engine thread, under the engine mutex (relaxed: a stale answer costs one pass).
  bool wantsDrive() const {
    return inFlight_.load(std::memory_order_relaxed) > 0 && failed_.load(std::memory_order_relaxed) == Status::kOk;
  }
  bool wantsHousekeeping() const { return reported_.load(std::memory_order_relaxed) > 0; }
  bool hasWork() const { return inFlight_.load(std::memory_order_seq_cst) > 0; }
  uint64_t lastDriveNs() const { return lastDriveNs_.load(std::memory_order_relaxed); }
  uint64_t lastPollNs() const { return lastPollNs_.load(std::memory_order_relaxed); }
  // NCCL's proxy thread is at the comm (isend, irecv, test): it drives the comm itself whenever the baton
  // is free, so the engine stays away while this is recent. nowNs: the call's one clock reading.
  void notePoll(uint64_t nowNs) { lastPollNs_.store(nowNs, std::memory_order_relaxed); }
  uint64_t publishedCount() const { return published_.load(std::memory_order_relaxed); }

  // Engine-thread-only bookkeeping (under the engine mutex).
  uint64_t backoffNs = kDriveAfterNs;
  uint64_t seenPublished = 0;

 protected:
  std::atomic<bool> baton_{false};
  std::atomic<int> inFlight_{0};          // queued or posted, not done yet (never below the truth)
  std::atomic<int> reported_{0};          // reported by test(), not yet retired
  std::atomic<uint64_t> published_{0};    // requests ever published (wakes the engine's backoff)
  std::atomic<Status> failed_{Status::kOk};  // the comm's first failure: sticks, as in the comm
  std::atomic<uint64_t> lastDriveNs_{0};
  std::atomic<uint64_t> lastPollNs_{0};
};

struct SendArgs {
  const void* data = nullptr;
  size_t size = 0;
  int tag = 0;
};

struct RecvArgs {
  int n = 0;
  void* data[kMaxRecvs] = {};
  size_t sizes[kMaxRecvs] = {};
  int tags[kMaxRecvs] = {};
};

SendRequest* postInner(SendComm* c, const SendArgs& a) { return c->post(a.data, a.size, a.tag); }
RecvRequest* postInner(RecvComm* c, const RecvArgs& a) { return c->post(a.n, a.data, a.sizes, a.tags); }

void copyResults(const SendRequest* in, Req* out) {
  out->n = 1;
  out->sizes[0] = static_cast<int>(in->size);
}
void copyResults(const RecvRequest* in, Req* out) {
  out->n = in->n;
  for (int i = 0; i < in->n; ++i) out->sizes[i] = static_cast<int>(in->slots[i].size);
}

template <class Comm, class Inner, class Args, int N>
class Core final : public CoreBase {
 public:
  struct Slot : Req {
    Args args;
    Inner* inner = nullptr;  // baton holder only
  };

  explicit Core(Comm* comm) : comm_(comm) {
    for (Slot& s : slots_) s.core = this;
  }

  // Proxy thread: the next slot in ring order, or null while it is still in use. Slots are taken in
  // order, as the comm takes its own requests, so the ring and the comm's request window stay aligned.
  Slot* allocate() {
    Slot& s = slots_[allocSeq_ % N];
    return s.state.load(std::memory_order_acquire) == kFree ? &s : nullptr;
  }
  // Proxy thread: hand the filled slot to whoever holds the baton next.
  void publish(Slot* s) {
    inFlight_.fetch_add(1, std::memory_order_seq_cst);  // before the slot shows: never below the truth
    s->state.store(kQueued, std::memory_order_release);
    ++allocSeq_;
    published_.fetch_add(1, std::memory_order_relaxed);
  }

  int driveLocked(bool full, uint64_t nowNs) override {
    retireReported();
    if (!full) return 0;
    drain();
    Status s = comm_->progress(nowNs);
    if (s != Status::kOk) {
      Status ok = Status::kOk;
      failed_.compare_exchange_strong(ok, s, std::memory_order_release, std::memory_order_relaxed);
    }
    const int completed = harvest();
    lastDriveNs_.store(nowNs, std::memory_order_relaxed);  // when it began: one clock read per drive
    return completed;
  }

 private:
  static constexpr int kWords = (N + 63) / 64;

  static void set(uint64_t* bits, int i) { bits[i / 64] |= 1ull << (i % 64); }
  static void clear(uint64_t* bits, int i) { bits[i / 64] &= ~(1ull << (i % 64)); }
  template <class F>
  static void forEach(const uint64_t* bits, F&& f) {
    for (int w = 0; w < kWords; ++w) {
      uint64_t b = bits[w];
      while (b != 0) {
        const int i = w * 64 + __builtin_ctzll(b);
        b &= b - 1;
        f(i);
      }
    }
  }

  // Published slots, in order, into the comm. A comm whose window is still full (a slot freed out of
  // order, which the comm retires in order) keeps the rest queued until a later drive.
  void drain() {
    for (;;) {
      const int i = static_cast<int>(drainSeq_ % N);
      Slot& s = slots_[i];
      if (s.state.load(std::memory_order_acquire) != kQueued) return;
      Inner* in = postInner(comm_, s.args);
      if (in == nullptr) return;
      s.inner = in;
      s.state.store(kPosted, std::memory_order_relaxed);
      set(posted_, i);
      ++drainSeq_;
    }
  }

  int harvest() {
    int completed = 0;
    forEach(posted_, [&](int i) {
      Slot& s = slots_[i];
      if (!s.inner->complete) return;
      copyResults(s.inner, &s);
      s.state.store(kDone, std::memory_order_release);
      clear(posted_, i);
      set(done_, i);
      inFlight_.fetch_sub(1, std::memory_order_relaxed);
      ++completed;
    });
    return completed;
  }

  void retireReported() {
    if (reported_.load(std::memory_order_acquire) == 0) return;
    forEach(done_, [&](int i) {
      Slot& s = slots_[i];
      if (s.state.load(std::memory_order_acquire) != kReported) return;
      comm_->retire(s.inner);
      s.inner = nullptr;
      clear(done_, i);
      reported_.fetch_sub(1, std::memory_order_relaxed);
      s.state.store(kFree, std::memory_order_release);
    });
  }

  Comm* comm_;
  Slot slots_[N];
  uint64_t allocSeq_ = 0;   // proxy thread only
  uint64_t drainSeq_ = 0;   // baton holder only, as are the masks below
  uint64_t posted_[kWords] = {};
  uint64_t done_[kWords] = {};
};

using SendCore = Core<SendComm, SendRequest, SendArgs, kMaxSendRequests>;
using RecvCore = Core<RecvComm, RecvRequest, RecvArgs, kMaxRequests>;

Status CoreBase::test(Req* r, int* done, int* sizes) {
  const uint64_t now = monotonicNs();
  notePoll(now);
  int st = r->state.load(std::memory_order_acquire);
  if (st == kQueued || st == kPosted) {
    (void)tryDrive(true, now);
    st = r->state.load(std::memory_order_acquire);
    if (st == kQueued || st == kPosted) return failed_.load(std::memory_order_acquire);
  }
  if (st != kDone && st != kReported) return Status::kInternalError;  // freed: tested after it was done
  *done = 1;
  if (sizes != nullptr)
    for (int i = 0; i < r->n; ++i) sizes[i] = r->sizes[i];
  if (st == kDone) {
    reported_.fetch_add(1, std::memory_order_relaxed);  // before the state: never below the truth
    r->state.store(kReported, std::memory_order_release);
    (void)tryDrive(false, now);  // if the baton is held, its holder retires it
  }
  return Status::kOk;
}

// Process-wide; never destroyed (NCCL may call in while the process exits), so the engine thread never
// touches a destroyed static. The thread itself is joined by the library destructor below.
struct Engine {
  std::mutex mu;                   // comms, thread start/stop; never taken by isend/irecv/test
  std::vector<CoreBase*> comms;    // driven by the thread
  bool enabled = true;
  bool startTried = false;
  bool stopped = false;            // the library is going away: never start again
  std::thread thread;
  std::atomic<bool> running{false};
  std::atomic<bool> stop{false};
  std::atomic<bool> sleeping{false};  // in a long (idle) sleep: new work must wake it
  int efd = -1;
  int epfd = -1;
};

Engine& engine() {
  // In the library's static storage, not on the heap: made on first use (the destructor below may be that
  // use), never destroyed, and gone with the library's image at dlclose instead of a heap block leaked per load.
  alignas(Engine) static unsigned char storage[sizeof(Engine)];
  static Engine* e = new (storage) Engine;
  return *e;
}

void wake(Engine& e) {
  if (e.efd < 0) return;
  uint64_t one = 1;
  ssize_t n = write(e.efd, &one, sizeof one);
  (void)n;  // a full counter already wakes it
}

// New work on a comm: only the idle (long) sleep needs a wake-up; a busy engine looks again within 1 ms.
void noteWork(Engine& e) {
  if (e.sleeping.load(std::memory_order_seq_cst) && e.sleeping.exchange(false, std::memory_order_acq_rel)) wake(e);
}

void sleepFor(Engine& e, uint64_t ns) {
  epoll_event ev[1];
  int n = -1;
#ifdef SYS_epoll_pwait2
  static std::atomic<bool> noPwait2{false};
  if (!noPwait2.load(std::memory_order_relaxed)) {
    timespec ts{static_cast<time_t>(ns / 1'000'000'000), static_cast<long>(ns % 1'000'000'000)};
    n = static_cast<int>(syscall(SYS_epoll_pwait2, e.epfd, ev, 1, &ts, nullptr, 0));
    if (n < 0 && errno == ENOSYS) noPwait2.store(true, std::memory_order_relaxed);
  }
#endif
  if (n < 0 && errno != EINTR) n = epoll_wait(e.epfd, ev, 1, static_cast<int>((ns + 999'999) / 1'000'000));
  if (n > 0) {
    uint64_t v = 0;
    ssize_t r = read(e.efd, &v, sizeof v);
    (void)r;
  }
}

// One pass over the comms: drive those with work that nobody drove lately. Returns how long to sleep;
// *idle: nothing is in flight anywhere (the long sleep, which new work must interrupt).
uint64_t pass(Engine& e, bool* idle) {
  std::lock_guard<std::mutex> lock(e.mu);
  uint64_t now = monotonicNs();
  uint64_t sleep = kIdleSleepNs;
  *idle = true;
  for (CoreBase* c : e.comms) {
    if (c->wantsDrive() || c->wantsHousekeeping()) *idle = false;
    if (c->wantsDrive()) {
      const uint64_t polled = c->lastPollNs();
      if (now - polled < kProxyQuietNs) {  // the proxy is at it and drives it itself: look much later
        sleep = std::min(sleep, kProxyCheckNs);
        continue;
      }
      if (c->publishedCount() != c->seenPublished) {  // new requests: look closely again
        c->seenPublished = c->publishedCount();
        c->backoffNs = kDriveAfterNs;
      }
      uint64_t last = c->lastDriveNs();
      // Due within the shortest sleep counts as due now: comms due at nearby times share one wake-up.
      if (now + kMinSleepNs - last >= c->backoffNs) {
        const int completed = c->tryDrive(true, now);
        if (completed < 0) {
          // The proxy is inside a long pass (on veth or loopback, a write runs the peer's receive path
          // too): it is being driven. Look again as if it were polling, not every 50 us.
          sleep = std::min(sleep, kProxyCheckNs);
          continue;
        }
        // Nothing finished: back off (an irecv posted long before its sender sends costs ~1 us a drive).
        c->backoffNs = completed > 0 ? kDriveAfterNs : std::min(kMaxBackoffNs, c->backoffNs * 2);
        now = monotonicNs();
        last = now;
      }
      const uint64_t due = last + c->backoffNs;
      sleep = std::min(sleep, due > now ? due - now : kMinSleepNs);
    } else if (c->wantsHousekeeping()) {
      // Only what test() reported and could not retire itself; whoever holds the baton retires it too.
      if (c->tryDrive(false, now) < 0) sleep = std::min(sleep, kDriveAfterNs);
    }
  }
  return std::max(sleep, kMinSleepNs);
}

bool anyWork(Engine& e) {
  std::lock_guard<std::mutex> lock(e.mu);
  for (CoreBase* c : e.comms)
    if (c->hasWork() || c->wantsHousekeeping()) return true;
  return false;
}

void run(Engine& e) {
  try {
    pthread_setname_np(pthread_self(), "ww-net-engine");
    while (!e.stop.load(std::memory_order_acquire)) {
      bool idle = false;
      uint64_t ns = pass(e, &idle);
      if (idle) {
        // Announce the long sleep, then look once more: a request published meanwhile either sees the
        // flag (and wakes us) or is seen here (both sides are sequentially consistent).
        e.sleeping.store(true, std::memory_order_seq_cst);
        if (anyWork(e)) {
          e.sleeping.store(false, std::memory_order_relaxed);
          continue;
        }
      }
      sleepFor(e, ns);
      e.sleeping.store(false, std::memory_order_relaxed);
    }
  } catch (...) {
    // Nothing in the loop throws; if something ever does, test() keeps driving every comm.
  }
  e.running.store(false, std::memory_order_release);
}

// Under e.mu. False (with a WARN) when the thread cannot start; comms then run on test() alone.
void startLocked(Engine& e, LogFn log) {
  if (e.startTried || e.stopped) return;
  e.startTried = true;
  std::string why;
  e.efd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
  e.epfd = epoll_create1(EPOLL_CLOEXEC);
  epoll_event ev{};
  ev.events = EPOLLIN;
  if (e.efd < 0 || e.epfd < 0 || epoll_ctl(e.epfd, EPOLL_CTL_ADD, e.efd, &ev) != 0) {
    why = std::string("eventfd/epoll: ") + std::strerror(errno);
  } else {
    try {
      e.running.store(true, std::memory_order_relaxed);
      e.thread = std::thread([&e] { run(e); });
      return;
    } catch (const std::exception& ex) {
      e.running.store(false, std::memory_order_relaxed);
      why = ex.what();
    }
  }
  if (e.efd >= 0) close(e.efd);
  if (e.epfd >= 0) close(e.epfd);
  e.efd = e.epfd = -1;
  if (log != nullptr)
    log(("wirewise net: progress thread could not start (" + why + "); progress runs in test() only").c_str());
}

// The comm finds its core through its own pointer (set here, before NCCL ever sees the comm).
bool attach(CoreBase* c, LogFn log) {
  Engine& e = engine();
  std::lock_guard<std::mutex> lock(e.mu);
  try {
    if (e.enabled) {
      e.comms.push_back(c);
      startLocked(e, log);
    }
  } catch (const std::bad_alloc&) {
    return false;
  }
  return true;
}

void detach(CoreBase* c) {
  Engine& e = engine();
  {
    // The thread drives comms under this mutex, so once it is ours the thread is out of every comm.
    std::lock_guard<std::mutex> lock(e.mu);
    for (size_t i = 0; i < e.comms.size(); ++i)
      if (e.comms[i] == c) {
        e.comms[i] = e.comms.back();
        e.comms.pop_back();
        break;
      }
  }
  c->acquireSpin();  // a test() still inside (NCCL's contract says none is) finishes first
  delete c;
}

// At unload (dlclose) or exit: stop the thread while its code is still mapped. The comms stay usable,
// driven by test() alone.
__attribute__((destructor)) void stopAtUnload() {
  Engine& e = engine();
  std::thread t;
  {
    std::lock_guard<std::mutex> lock(e.mu);
    e.stopped = true;
    if (!e.thread.joinable()) return;
    t = std::move(e.thread);
  }
  e.stop.store(true, std::memory_order_release);
  wake(e);
  t.join();
}

}  // namespace

bool attachSend(SendComm* sc, LogFn log) {
  auto* c = new (std::nothrow) SendCore(sc);
  if (c == nullptr || !attach(c, log)) {
    delete c;
    return false;
  }
  sc->setEngineCore(c);
  return true;
}

bool attachRecv(RecvComm* rc, LogFn log) {
  auto* c = new (std::nothrow) RecvCore(rc);
  if (c == nullptr || !attach(c, log)) {
    delete c;
    return false;
  }
  rc->setEngineCore(c);
  return true;
}

void detachSend(SendComm* sc) {
  if (auto* c = static_cast<CoreBase*>(sc->engineCore())) {
    sc->setEngineCore(nullptr);
    detach(c);
  }
}

void detachRecv(RecvComm* rc) {
  if (auto* c = static_cast<CoreBase*>(rc->engineCore())) {
    rc->setEngineCore(nullptr);
    detach(c);
  }
}

// isend and irecv: a slot of the comm's ring (null while the next one is in use), its arguments, then
// published for whoever holds the baton next. A send is driven here at once if the baton is free, so its
// bytes leave now; a receive is not: NCCL posts receives ahead and tests them next, and test() drives the
// comm, so a drive here would only add a read that finds nothing (one system call per message).
template <class CoreT, class Fill>
Status submit(CoreT* c, void** request, bool driveNow, Fill&& fill) {
  if (c == nullptr) return Status::kInternalError;
  const uint64_t now = monotonicNs();
  typename CoreT::Slot* s = c->allocate();
  if (s == nullptr && c->tryDrive(false, now) >= 0) s = c->allocate();  // the next slot may only wait to be retired
  *request = s;
  if (s == nullptr) return Status::kOk;  // NCCL retries later
  fill(s->args);
  c->publish(s);
  c->notePoll(now);
  noteWork(engine());
  if (driveNow) (void)c->tryDrive(true, now);  // a failure sticks to the comm and surfaces from test()
  return Status::kOk;
}

Status isend(SendComm* sc, const void* data, size_t size, int tag, void** request) {
  return submit(static_cast<SendCore*>(static_cast<CoreBase*>(sc->engineCore())), request, true,
                [&](SendArgs& a) { a = SendArgs{data, size, tag}; });
}

Status irecv(RecvComm* rc, int n, void* const* data, const size_t* sizes, const int* tags, void** request) {
  return submit(static_cast<RecvCore*>(static_cast<CoreBase*>(rc->engineCore())), request, false, [&](RecvArgs& a) {
    a.n = n;
    for (int i = 0; i < n; ++i) {
      a.data[i] = data[i];
      a.sizes[i] = sizes[i];
      a.tags[i] = tags != nullptr ? tags[i] : 0;
    }
  });
}

Status test(void* request, int* done, int* sizes) {
  auto* r = static_cast<Req*>(request);
  if (r->magic != kReqMagic || r->core == nullptr) return Status::kInternalError;
  return r->core->test(r, done, sizes);
}

BatonHold::BatonHold(SendComm* sc) {
  auto* c = static_cast<CoreBase*>(sc->engineCore());
  if (c == nullptr) return;
  c->acquireSpin();
  core_ = c;
}

BatonHold::~BatonHold() {
  if (core_ != nullptr) static_cast<CoreBase*>(core_)->release();
}

void setEnabled(bool on) {
  Engine& e = engine();
  std::lock_guard<std::mutex> lock(e.mu);
  e.enabled = on;
}

uint64_t threadCpuNs() {
  Engine& e = engine();
  std::lock_guard<std::mutex> lock(e.mu);
  if (!e.thread.joinable() || !e.running.load(std::memory_order_acquire)) return 0;
  clockid_t id;
  if (pthread_getcpuclockid(e.thread.native_handle(), &id) != 0) return 0;
  timespec ts{};
  if (clock_gettime(id, &ts) != 0) return 0;
  return static_cast<uint64_t>(ts.tv_sec) * 1'000'000'000ull + static_cast<uint64_t>(ts.tv_nsec);
}

}  // namespace wirewise::net::engine
