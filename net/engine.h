// Progress off NCCL's proxy thread: one I/O thread per process (the engine) drives every comm that has
// requests in flight, and requests and completions pass between it and NCCL's proxy threads without locks.
//
// Baton. Every SendComm/RecvComm is wrapped in a core holding an atomic baton. Whoever wins it (one
// compare-exchange, acquire) may call the comm's post/progress/retire and releases it (release store)
// afterwards, so a comm is still single-threaded at any instant (net/comm.h). Nobody waits for a baton on
// the data path: isend/irecv/test try it once and go on without it; only closing a comm and the test-only
// sendRailStats spin for it.
//
// Hand-off. isend/irecv write the request's arguments into the next slot of a fixed per-comm array
// (kMaxSendRequests for a send comm, kMaxRequests for a receive comm) and publish it (release); the slots
// in allocation order form a single-producer ring (NCCL drives a comm from one proxy thread). The baton
// holder drains the ring into comm->post, runs comm->progress, publishes each finished request (sizes,
// then its state with release), and retires and frees the slots test() has reported (retire touches the
// comm, so only under the baton). The slot is the request NCCL holds. isend/irecv answer a null request
// when the next slot is still in use (NCCL's "not now"), never block, and drive the comm themselves when
// the baton is free, as does test() for a request not done yet: a polling proxy keeps its latency.
//
// The engine thread starts with the first comm (never at library load) and sleeps in epoll_pwait2 on an
// eventfd. It drives a comm with work in flight once NCCL's proxy has not touched it (isend/irecv/test)
// for 1 ms: a polling proxy drives the comm itself, and the engine is for the stretches when the proxy is
// busy elsewhere. Then it drives the comm every ~75 us, backing off to 1 ms while nothing completes; it
// sleeps 10 ms when nothing is in flight anywhere. It only ever drives comms with requests
// queued or in flight, and only calls progress then, so a comm nobody uses is left alone (as before: no
// reopen or timer runs on an idle comm). If the thread cannot start, every comm is driven from test() as
// before. A library destructor stops and joins it at unload or exit, while its code is still mapped.
#pragma once

#include <cstddef>

#include "net/transport.h"

namespace wirewise::net {

class SendComm;
class RecvComm;

namespace engine {

// Wraps a new comm (connect/accept) and hands it to the engine thread, starting that on first use. False
// when memory ran out: the comm is then left as it was (the caller deletes it). A WARN goes through `log`
// when the thread cannot start; the comm then works driven by test() alone.
bool attachSend(SendComm* sc, LogFn log);
bool attachRecv(RecvComm* rc, LogFn log);
// Takes the comm from the engine and frees its wrapper; afterwards nothing but the caller touches the comm
// and its requests are gone. May wait for the engine's current pass. Comms never attached are ignored.
void detachSend(SendComm* sc);
void detachRecv(RecvComm* rc);

// The data path of transport.h on an attached comm (arguments already checked there).
Status isend(SendComm* sc, const void* data, size_t size, int tag, void** request);
Status irecv(RecvComm* rc, int n, void* const* data, const size_t* sizes, const int* tags, void** request);
Status test(void* request, int* done, int* sizes);

// Holds the comm's baton for its lifetime (spinning for it), so that the caller may read the comm's
// working state. held() is false for an unknown comm.
class BatonHold {
 public:
  explicit BatonHold(SendComm* sc);
  ~BatonHold();
  BatonHold(const BatonHold&) = delete;
  BatonHold& operator=(const BatonHold&) = delete;
  bool held() const { return core_ != nullptr; }

 private:
  void* core_ = nullptr;
};

// Tests: whether comms attached from now on are driven by the engine thread (default true; false: by
// test() alone, as before the engine), and the CPU time the engine thread has used (0 if not running).
void setEnabled(bool on);
uint64_t threadCpuNs();

}  // namespace engine
}  // namespace wirewise::net
