// One end of a timed goodput run through the shipped library, driven as NCCL's proxy drives a net plugin
// (dlopen + ncclNetPlugin_v11, non-blocking connect/accept loops, up to WINDOW isend/irecv in flight,
// test() polling). The pattern of tests/net/rail_probe.cc, without its per-byte fill and check: this
// measures the transport, so buffers are filled once and each message only carries its index in its
// first and last 8 bytes, which the receiver checks (order and placement, at no cost to goodput).
//
//   net_bench_driver recv HANDLE_FILE DEVICE SECONDS MESSAGE_BYTES WINDOW   (start first)
//   net_bench_driver send HANDLE_FILE DEVICE SECONDS MESSAGE_BYTES WINDOW
//
// DEVICE is the plugin's device name (an interface, or wirewise-merged). The sender streams for SECONDS
// and ends with an empty message; the receiver prints "bytes=<n> seconds=<s> gbps=<x>" (payload bytes
// from accept to the end marker, as iperf3 counts received bytes over its test time).
#include <dlfcn.h>
#include <sched.h>
#include <unistd.h>

#include <chrono>
#include <cstdarg>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <string>
#include <vector>

#include "common/nccl/net.h"

namespace {

using Clock = std::chrono::steady_clock;
constexpr auto kSetupTimeout = std::chrono::seconds(30);

void logToStderr(ncclDebugLogLevel level, unsigned long, const char*, int, const char* fmt, ...) {
  if (level > NCCL_LOG_WARN) return;
  va_list ap;
  va_start(ap, fmt);
  std::vfprintf(stderr, fmt, ap);
  va_end(ap);
  std::fputc('\n', stderr);
}

int fail(const char* what, int code) {
  std::fprintf(stderr, "net_bench_driver: %s\n", what);
  return code;
}

void stamp(char* buf, size_t size, uint64_t index) {
  if (size < 16) return;
  std::memcpy(buf, &index, 8);
  std::memcpy(buf + size - 8, &index, 8);
}

bool stamped(const char* buf, size_t size, uint64_t index) {
  if (size < 16) return true;
  uint64_t a = 0, b = 0;
  std::memcpy(&a, buf, 8);
  std::memcpy(&b, buf + size - 8, 8);
  return a == index && b == index;
}

struct Slot {
  void* req = nullptr;
  uint64_t index = 0;
};

}  // namespace

int main(int argc, char** argv) {
  if (argc != 7) {
    std::fprintf(stderr, "usage: %s send|recv HANDLE_FILE DEVICE SECONDS MESSAGE_BYTES WINDOW\n", argv[0]);
    return 2;
  }
  const bool sender = std::strcmp(argv[1], "send") == 0;
  const std::string path = argv[2];
  const std::string devName = argv[3];
  const double seconds = std::atof(argv[4]);
  const size_t bytes = std::strtoull(argv[5], nullptr, 10);
  const int window = std::atoi(argv[6]);
  if (window < 1 || window > 32 || bytes < 16) return fail("WINDOW must be 1..32 and MESSAGE_BYTES >= 16", 2);

  void* lib = dlopen(WW_NET_SO, RTLD_NOW | RTLD_LOCAL);
  auto* net = lib == nullptr ? nullptr : static_cast<const ncclNet_v11_t*>(dlsym(lib, "ncclNetPlugin_v11"));
  void* ctx = nullptr;
  int ndev = 0;
  if (net == nullptr || net->init(&ctx, 1, nullptr, logToStderr, nullptr) != ncclSuccess ||
      net->devices(&ndev) != ncclSuccess)
    return fail("cannot load the plugin", 3);
  int dev = -1;
  std::string seen;
  for (int d = 0; d < ndev; ++d) {
    ncclNetProperties_v11_t p;
    if (net->getProperties(d, &p) != ncclSuccess) continue;
    seen += std::string(seen.empty() ? "" : ", ") + p.name;
    if (devName == p.name) dev = d;
  }
  if (dev < 0) return fail(("no device " + devName + " among: " + seen).c_str(), 4);

  std::vector<std::vector<char>> bufs(static_cast<size_t>(window), std::vector<char>(bytes, 'w'));
  std::vector<Slot> slots(static_cast<size_t>(window));
  char handle[NCCL_NET_HANDLE_MAXSIZE] = {};
  void *lc = nullptr, *comm = nullptr;
  auto setupStart = Clock::now();
  if (!sender) {
    if (net->listen(ctx, dev, handle, &lc) != ncclSuccess) return fail("listen failed", 5);
    std::ofstream(path + ".tmp", std::ios::binary).write(handle, sizeof handle);
    std::rename((path + ".tmp").c_str(), path.c_str());
    while (comm == nullptr) {
      ncclNetDeviceHandle_v11_t* devComm = nullptr;
      if (net->accept(lc, &comm, &devComm) != ncclSuccess) return fail("accept failed", 6);
      if (Clock::now() - setupStart > kSetupTimeout) return fail("accept timed out", 6);
    }
  } else {
    while (access(path.c_str(), R_OK) != 0) {
      if (Clock::now() - setupStart > kSetupTimeout) return fail("no handle file", 7);
      usleep(20000);
    }
    std::ifstream(path, std::ios::binary).read(handle, sizeof handle);
    while (comm == nullptr) {
      ncclNetDeviceHandle_v11_t* devComm = nullptr;
      if (net->connect(ctx, dev, handle, &comm, &devComm) != ncclSuccess) return fail("connect failed", 7);
      if (Clock::now() - setupStart > kSetupTimeout) return fail("connect timed out", 7);
    }
  }
  void* mh = nullptr;
  if (net->regMr(comm, bufs[0].data(), bytes, NCCL_PTR_HOST, &mh) != ncclSuccess) return fail("regMr failed", 8);

  // Requests are posted into a ring and tested oldest first, as NCCL's proxy does: the receiver stops at
  // the end marker without ever testing the receives posted after it (the sender is gone by then).
  const auto start = Clock::now();
  const auto stopSending = start + std::chrono::duration<double>(seconds);
  uint64_t posted = 0, retired = 0, payload = 0;
  bool endPosted = false, endSeen = false;
  while (sender ? (!endPosted || retired < posted) : !endSeen) {
    if (Clock::now() - start > std::chrono::duration<double>(seconds + 60)) return fail("run timed out", 9);
    bool idle = true;
    if (posted - retired < static_cast<uint64_t>(window) && !endPosted) {
      idle = false;
      const size_t s = posted % slots.size();
      char* buf = bufs[s].data();
      void* req = nullptr;
      ncclResult_t r;
      if (sender) {
        const bool last = Clock::now() >= stopSending;
        if (!last) stamp(buf, bytes, posted);
        r = net->isend(comm, buf, last ? 0 : bytes, 0, mh, nullptr, &req);
        if (r == ncclSuccess && req != nullptr) endPosted = last;
      } else {
        size_t sizes[1] = {bytes};
        int tags[1] = {0};
        void* datas[1] = {buf};
        void* mhs[1] = {mh};
        void* ph[1] = {nullptr};
        r = net->irecv(comm, 1, datas, sizes, tags, mhs, ph, &req);
      }
      if (r != ncclSuccess) return fail("post failed", 10);
      if (req != nullptr) slots[s] = {req, posted++};
      else idle = true;
    }
    if (retired == posted) continue;
    Slot& head = slots[retired % slots.size()];
    int done = 0, size = -1;
    if (net->test(head.req, &done, &size) != ncclSuccess) return fail("test failed", 11);
    if (!done) {
      if (idle) sched_yield();  // as NCCL's progress thread: nothing progressed, let others run
      continue;
    }
    if (!sender) {
      if (size == 0) endSeen = true;
      else if (static_cast<size_t>(size) != bytes || !stamped(bufs[retired % slots.size()].data(), bytes, head.index))
        return fail(("message " + std::to_string(head.index) + " arrived wrong").c_str(), 12);
    }
    if (size > 0) payload += static_cast<uint64_t>(size);
    head = Slot{};
    ++retired;
  }
  const double elapsed = std::chrono::duration<double>(Clock::now() - start).count();
  if (!sender) std::printf("bytes=%llu seconds=%.4f gbps=%.4f\n", static_cast<unsigned long long>(payload), elapsed,
                           payload * 8.0 / elapsed / 1e9);
  // The receiver still has receives posted past the end marker: leave the comms to process exit (a
  // benchmark, not a test of close semantics). The sender waits for that (the receiver removes the
  // handle file) so that its exit never races the receiver's last test.
  if (!sender) {
    std::remove(path.c_str());
  } else {
    for (auto t = Clock::now(); access(path.c_str(), F_OK) == 0 && Clock::now() - t < kSetupTimeout;) usleep(10000);
  }
  return 0;
}
