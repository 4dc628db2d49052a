// One rank of the namespace ring (netns_ring.sh): opens the plugin as NCCL does (the loader's
// resolution of NCCL_NET_PLUGIN, then dlsym ncclNetPlugin_vN), picks `wirewise-merged`, listens, swaps
// handles through files, connects to rank+1 and accepts from rank-1, then plays NCCL's proxy progress
// thread: one loop posting isends to the right and multi-buffer irecvs from the left and testing both,
// each with a bounded window, until every message of the schedule is sent and every byte received is
// checked. Exit codes (enum Exit): 0 all verified, 10 a wrong byte or size, others setup or plugin errors.
#include <dlfcn.h>
#include <sched.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdarg>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <memory>
#include <string>
#include <type_traits>
#include <vector>

#include "sim/loader/nccl_loader.h"
#include "tests/net/proxy_driver.h"
#include "tests/net/ring_traffic.h"
#include "tests/wait_until.h"

using namespace wirewise::net::testing;
using Clock = std::chrono::steady_clock;

namespace {

enum Exit { kOk = 0, kUsage = 2, kLoad = 3, kNoMerged = 4, kSetup = 5, kPlugin = 6, kTimeout = 7, kPeer = 8, kData = 10 };

struct Options {
  int rank = -1, nranks = 0, version = 11, small = 5000, timeoutS = 100;
  size_t maxBytes = 64u << 20;
  int gibRank = -1;  // the rank that ends with a 1 GiB message (one such transfer keeps the run short)
  std::string dir;
  uint64_t seed = 0x71e6;
  // WW_RING_CORRUPT="S:M:O": rank S flips byte O of message M after filling it (the negative self-test).
  int corruptRank = -1, corruptMessage = -1;
  size_t corruptOffset = 0;
};

struct Buffer {
  std::unique_ptr<char[]> data;
  size_t cap = 0;
  void* mh = nullptr;
};

constexpr size_t kSlack = 13;                 // receive buffers are this much larger than the message
constexpr size_t kMaxBytesInFlight = 256u << 20;  // per direction; a single bigger message may go alone
constexpr size_t kSendWindow = 32, kRecvWindow = 16;  // the plugin takes 256 isends, 32 irecvs

// NCCL's logger stands in: WARNs (and with WW_RING_LOG=1 INFOs) go to stderr, so a failure's log shows
// what the plugin saw (rails down, resends).
int gRank = -1;
void logger(ncclDebugLogLevel level, unsigned long, const char*, int, const char* fmt, ...) {
  static const bool info = std::getenv("WW_RING_LOG") != nullptr;
  if (level != NCCL_LOG_WARN && !(info && level == NCCL_LOG_INFO)) return;
  char line[512];
  va_list args;
  va_start(args, fmt);
  std::vsnprintf(line, sizeof line, fmt, args);
  va_end(args);
  std::fprintf(stderr, "rank %d: plugin %s: %s\n", gRank, level == NCCL_LOG_WARN ? "WARN" : "INFO", line);
}

bool waitFile(const std::string& path, Clock::time_point deadline) {
  return wirewise::waitUntil([&] { return access(path.c_str(), R_OK) == 0; }, deadline - Clock::now(),
                             std::chrono::milliseconds(20));
}

void writeFile(const std::string& path, const char* data, size_t n) {
  std::ofstream(path + ".tmp", std::ios::binary).write(data, static_cast<std::streamsize>(n));
  std::rename((path + ".tmp").c_str(), path.c_str());
}

// A rank that fails leaves failed.<rank>; the others stop instead of waiting out their timeouts.
int failedPeer(const Options& o) {
  for (int r = 0; r < o.nranks; ++r)
    if (access((o.dir + "/failed." + std::to_string(r)).c_str(), F_OK) == 0) return r;
  return -1;
}

template <typename Net>
ncclResult_t postRecvN(const Net* net, void* comm, int n, void** data, size_t* caps, int* tags, void** mhs,
                       void** req) {
  *req = nullptr;
  if constexpr (requires { net->finalize; }) {
    void* ph[8] = {};
    return net->irecv(comm, n, data, caps, tags, mhs, ph, req);
  } else {
    int sizes[8];
    for (int k = 0; k < n; ++k) sizes[k] = static_cast<int>(caps[k]);
    return net->irecv(comm, n, data, sizes, tags, mhs, req);
  }
}

template <typename Net>
class Ring {
 public:
  // `out`: what this rank sends; `in`: what its left neighbour sends (they differ in the 1 GiB message).
  Ring(const Net* net, void* sc, void* rc, const Options& o, const RingSchedule& out, const RingSchedule& in)
      : net_(net), sc_(sc), rc_(rc), o_(o), out_(out), in_(in), left_((o.rank + o.nranks - 1) % o.nranks) {}

  int run() {
    const auto deadline = Clock::now() + std::chrono::seconds(o_.timeoutS);
    const int nSend = static_cast<int>(out_.messages.size()), nRecv = static_cast<int>(in_.receives.size());
    int idle = 0;
    while (sendsDone_ < nSend || recvsDone_ < nRecv) {
      if (Clock::now() > deadline) {
        std::fprintf(stderr, "rank %d: timed out: %d/%d sent, %d/%d receives done\n", o_.rank, sendsDone_, nSend,
                     recvsDone_, nRecv);
        return kTimeout;
      }
      if (++turns_ % 4096 == 0 && failedPeer(o_) >= 0) {
        std::fprintf(stderr, "rank %d: rank %d failed; stopping\n", o_.rank, failedPeer(o_));
        return kPeer;
      }
      bool progress = false;
      if (int rc = postSends(progress); rc != kOk) return rc;
      if (int rc = postRecvs(progress); rc != kOk) return rc;
      if (int rc = testSends(progress); rc != kOk) return rc;
      if (int rc = testRecvs(progress); rc != kOk) return rc;
      // Three ranks spin on two cores beside the kernel's TCP work: give the core away when nothing moved.
      if (progress) idle = 0;
      else if (++idle > 16) sched_yield();
    }
    return kOk;
  }

  size_t bytesSent() const { return bytesSent_; }
  size_t bytesVerified() const { return bytesVerified_; }
  int messagesVerified() const { return messagesVerified_; }

 private:
  struct Send {
    void* req;
    int index;
    Buffer buf;
  };
  struct Recv {
    void* req;
    int receive;
    std::vector<Buffer> bufs;
  };

  bool alloc(Buffer& b, void* comm, size_t cap) {
    b.cap = cap;
    b.data.reset(new char[cap == 0 ? 1 : cap]);
    return net_->regMr(comm, b.data.get(), cap, NCCL_PTR_HOST, &b.mh) == ncclSuccess && b.mh != nullptr;
  }

  int postSends(bool& progress) {
    const int n = static_cast<int>(out_.messages.size());
    while (nextSend_ < n && sends_.size() < kSendWindow) {
      const RingMessage& m = out_.messages[static_cast<size_t>(nextSend_)];
      if (!sends_.empty() && sendBytes_ + m.size > kMaxBytesInFlight) break;
      if (pending_.data == nullptr) {  // a send NCCL's retry finds unposted keeps its buffer
        if (!alloc(pending_, sc_, m.size)) return fail("regMr (send)");
        fillPattern(pending_.data.get(), m.size, patternKey(o_.seed, o_.rank, nextSend_), false);
        if (o_.corruptRank == o_.rank && o_.corruptMessage == nextSend_ && o_.corruptOffset < m.size)
          pending_.data[o_.corruptOffset] ^= 0x5a;
      }
      void* req = nullptr;
      if (postSend(net_, sc_, pending_.data.get(), m.size, m.tag, pending_.mh, &req) != ncclSuccess)
        return fail("isend");
      if (req == nullptr) break;  // the plugin's window is full: retry on the next turn, as NCCL does
      sendBytes_ += m.size;
      sends_.push_back({req, nextSend_++, std::move(pending_)});
      pending_ = Buffer{};
      progress = true;
    }
    return kOk;
  }

  int postRecvs(bool& progress) {
    const int n = static_cast<int>(in_.receives.size());
    while (nextRecv_ < n && recvs_.size() < kRecvWindow) {
      const RingReceive& r = in_.receives[static_cast<size_t>(nextRecv_)];
      size_t bytes = 0;
      for (int k = 0; k < r.count; ++k) bytes += in_.messages[static_cast<size_t>(r.takes[static_cast<size_t>(k)])].size;
      if (!recvs_.empty() && recvBytes_ + bytes > kMaxBytesInFlight) break;
      Recv post{nullptr, nextRecv_, std::vector<Buffer>(static_cast<size_t>(r.count))};
      void* data[8];
      size_t caps[8];
      int tags[8];
      void* mhs[8];
      for (int k = 0; k < r.count; ++k) {
        const int msg = r.takes[static_cast<size_t>(k)];
        Buffer& b = post.bufs[static_cast<size_t>(k)];
        if (!alloc(b, rc_, in_.messages[static_cast<size_t>(msg)].size + kSlack)) return fail("regMr (recv)");
        fillPattern(b.data.get(), b.cap, patternKey(o_.seed, left_, msg), true);
        data[k] = b.data.get();
        caps[k] = b.cap;
        tags[k] = r.tags[static_cast<size_t>(k)];
        mhs[k] = b.mh;
      }
      if (postRecvN(net_, rc_, r.count, data, caps, tags, mhs, &post.req) != ncclSuccess) return fail("irecv");
      if (post.req == nullptr) {  // full: these buffers go, the next turn posts fresh ones
        for (Buffer& b : post.bufs) net_->deregMr(rc_, b.mh);
        break;
      }
      recvBytes_ += bytes;
      recvs_.push_back(std::move(post));
      ++nextRecv_;
      progress = true;
    }
    return kOk;
  }

  int testSends(bool& progress) {
    for (size_t i = 0; i < sends_.size();) {
      int done = 0, size = -1;
      if (net_->test(sends_[i].req, &done, &size) != ncclSuccess) return fail("test (send)", sends_[i].index);
      if (!done) {
        ++i;
        continue;
      }
      const size_t bytes = out_.messages[static_cast<size_t>(sends_[i].index)].size;
      sendBytes_ -= bytes;
      bytesSent_ += bytes;
      net_->deregMr(sc_, sends_[i].buf.mh);
      sends_.erase(sends_.begin() + static_cast<long>(i));
      ++sendsDone_;
      progress = true;
    }
    return kOk;
  }

  int testRecvs(bool& progress) {
    for (size_t i = 0; i < recvs_.size();) {
      Recv& post = recvs_[i];
      const RingReceive& r = in_.receives[static_cast<size_t>(post.receive)];
      int done = 0, sizes[8] = {-1, -1, -1, -1, -1, -1, -1, -1};
      if (net_->test(post.req, &done, sizes) != ncclSuccess) return fail("test (recv)", r.first);
      if (!done) {
        ++i;
        continue;
      }
      for (int k = 0; k < r.count; ++k) {
        const int msg = r.takes[static_cast<size_t>(k)];
        const size_t want = in_.messages[static_cast<size_t>(msg)].size;
        const Buffer& b = post.bufs[static_cast<size_t>(k)];
        if (sizes[k] < 0 || static_cast<size_t>(sizes[k]) != want) {
          std::fprintf(stderr, "rank %d: DATA message %d from rank %d: size %d, want %zu\n", o_.rank, msg, left_,
                       sizes[k], want);
          return kData;
        }
        const uint64_t key = patternKey(o_.seed, left_, msg);
        long bad = patternMismatch(b.data.get(), 0, want, key, false);
        const bool inMessage = bad >= 0;
        if (!inMessage) bad = patternMismatch(b.data.get(), want, b.cap, key, true);  // written past its end?
        if (bad >= 0) {
          std::fprintf(stderr, "rank %d: DATA message %d from rank %d: wrong byte at %ld of %zu%s\n", o_.rank, msg,
                       left_, bad, want, inMessage ? "" : " (past the message's end)");
          if (inMessage) describe(b.data.get(), want, key);
          return kData;
        }
        bytesVerified_ += want;
        ++messagesVerified_;
        net_->deregMr(rc_, b.mh);
      }
      recvBytes_ -= [&] {
        size_t bytes = 0;
        for (int msg : r.takes) bytes += in_.messages[static_cast<size_t>(msg)].size;
        return bytes;
      }();
      recvs_.erase(recvs_.begin() + static_cast<long>(i));
      ++recvsDone_;
      progress = true;
    }
    return kOk;
  }

  // Where the wrong bytes are and whether they are the receiver's poison (never written by the plugin).
  void describe(const char* buf, size_t size, uint64_t key) const {
    size_t wrong = 0, poison = 0, first = size, last = 0;
    for (size_t at = 0; at < size;) {
      long bad = patternMismatch(buf, at, size, key, false);
      if (bad < 0) break;
      const size_t b = static_cast<size_t>(bad);
      ++wrong;
      poison += patternMismatch(buf, b, b + 1, key, true) < 0;
      first = std::min(first, b);
      last = b;
      at = b + 1;
    }
    std::fprintf(stderr, "rank %d:   %zu wrong bytes in [%zu, %zu], %zu of them still the receiver's poison\n",
                 o_.rank, wrong, first, last, poison);
  }

  int fail(const char* what, int message = -1) {
    std::fprintf(stderr, "rank %d: %s failed (message %d)\n", o_.rank, what, message);
    return kPlugin;
  }

  const Net* net_;
  void *sc_, *rc_;
  const Options& o_;
  const RingSchedule& out_;
  const RingSchedule& in_;
  const int left_;
  std::vector<Send> sends_;
  std::vector<Recv> recvs_;
  Buffer pending_;
  long turns_ = 0;
  int nextSend_ = 0, nextRecv_ = 0, sendsDone_ = 0, recvsDone_ = 0, messagesVerified_ = 0;
  size_t sendBytes_ = 0, recvBytes_ = 0, bytesSent_ = 0, bytesVerified_ = 0;
};

template <typename Net>
int runRank(const Net* net, const Options& o) {
  void* ctx = nullptr;
  if constexpr (requires { net->finalize; }) {
    if (net->init(&ctx, 0x71e6, nullptr, logger, nullptr) != ncclSuccess) return kLoad;
  } else {
    if (net->init(logger) != ncclSuccess) return kLoad;
  }
  int ndev = 0, dev = -1;
  if (net->devices(&ndev) != ncclSuccess) return kLoad;
  std::string names;
  for (int d = 0; d < ndev; ++d) {
    std::conditional_t<requires { net->finalize; }, ncclNetProperties_v11_t, ncclNetProperties_v8_t> p;
    if (net->getProperties(d, &p) != ncclSuccess) return kLoad;
    names += std::string(names.empty() ? "" : ", ") + p.name;
    if (std::strcmp(p.name, "wirewise-merged") == 0) dev = d;
  }
  if (dev < 0) {
    std::fprintf(stderr, "rank %d: no wirewise-merged among %d devices (%s)\n", o.rank, ndev, names.c_str());
    return kNoMerged;
  }
  const auto setupDeadline = Clock::now() + std::chrono::seconds(30);
  char handle[NCCL_NET_HANDLE_MAXSIZE] = {}, right[NCCL_NET_HANDLE_MAXSIZE] = {};
  void *lc = nullptr, *sc = nullptr, *rc = nullptr;
  ncclResult_t lr;
  if constexpr (requires { net->finalize; }) lr = net->listen(ctx, dev, handle, &lc);
  else lr = net->listen(dev, handle, &lc);
  if (lr != ncclSuccess) return kSetup;
  writeFile(o.dir + "/handle." + std::to_string(o.rank), handle, sizeof handle);
  const std::string rightPath = o.dir + "/handle." + std::to_string((o.rank + 1) % o.nranks);
  if (!waitFile(rightPath, setupDeadline)) return kSetup;
  std::ifstream(rightPath, std::ios::binary).read(right, sizeof right);
  // Connect to the right and accept from the left in one loop, as NCCL's proxy service thread
  // interleaves them: neither call blocks.
  while (sc == nullptr || rc == nullptr) {
    if (Clock::now() > setupDeadline) {
      std::fprintf(stderr, "rank %d: setup timed out (send %p, recv %p)\n", o.rank, sc, rc);
      return kSetup;
    }
    ncclNetDeviceHandle_v11_t* devComm = nullptr;
    if (sc == nullptr && callConnect(net, ctx, dev, right, &sc) != ncclSuccess) return kSetup;
    if (rc == nullptr && net->accept(lc, &rc, &devComm) != ncclSuccess) return kSetup;
    if (sc == nullptr || rc == nullptr) usleep(1000);  // NCCL's connect and accept are polled, as NCCL does
  }
  const int left = (o.rank + o.nranks - 1) % o.nranks;
  const RingSchedule sched = makeRingSchedule(o.seed, o.maxBytes, o.small, o.gibRank == o.rank);
  const RingSchedule inSched = makeRingSchedule(o.seed, o.maxBytes, o.small, o.gibRank == left);
  Ring<Net> ring(net, sc, rc, o, sched, inSched);
  const auto start = Clock::now();
  const int result = ring.run();
  const double secs = std::chrono::duration<double>(Clock::now() - start).count();
  if (result != kOk) {
    // Sends may still be in flight on the plugin's engine thread: close the comms (which detach them from
    // that thread) before the ring frees their buffers, as NCCL closes a comm before it frees its buffers.
    net->closeSend(sc);
    net->closeRecv(rc);
    return result;
  }
  std::printf("rank %d/%d v%d dev %s: sent %zu messages (%zu B), verified %d messages (%zu B) from rank %d in %.2f s\n",
              o.rank, o.nranks, o.version, names.c_str(), sched.messages.size(), ring.bytesSent(),
              ring.messagesVerified(), ring.bytesVerified(), (o.rank + o.nranks - 1) % o.nranks, secs);
  std::fflush(stdout);
  // Close only once every rank is done, so that no rank sees its peer's end of stream under a posted receive.
  writeFile(o.dir + "/done." + std::to_string(o.rank), "1", 1);
  const auto closeDeadline = Clock::now() + std::chrono::seconds(o.timeoutS);
  for (int r = 0; r < o.nranks; ++r) {
    while (access((o.dir + "/done." + std::to_string(r)).c_str(), F_OK) != 0) {
      if (failedPeer(o) >= 0) {
        std::fprintf(stderr, "rank %d: rank %d failed; stopping\n", o.rank, failedPeer(o));
        return kPeer;
      }
      if (Clock::now() > closeDeadline) return kTimeout;
      usleep(20000);  // a condition wait with two ends (the peer's file, or a peer failed): polled by hand
    }
  }
  if (net->closeSend(sc) != ncclSuccess || net->closeRecv(rc) != ncclSuccess || net->closeListen(lc) != ncclSuccess)
    return kPlugin;
  if constexpr (requires { net->finalize; }) {
    if (net->finalize(ctx) != ncclSuccess) return kPlugin;
  }
  return kOk;
}

bool parse(int argc, char** argv, Options& o) {
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string k = argv[i];
    const char* v = argv[i + 1];
    if (k == "--rank") o.rank = std::atoi(v);
    else if (k == "--nranks") o.nranks = std::atoi(v);
    else if (k == "--dir") o.dir = v;
    else if (k == "--version") o.version = std::atoi(v);
    else if (k == "--max-bytes") o.maxBytes = std::strtoull(v, nullptr, 10);
    else if (k == "--small") o.small = std::atoi(v);
    else if (k == "--gib") o.gibRank = std::atoi(v);
    else if (k == "--timeout") o.timeoutS = std::atoi(v);
    else return false;
  }
  if (const char* c = std::getenv("WW_RING_CORRUPT"))
    if (std::sscanf(c, "%d:%d:%zu", &o.corruptRank, &o.corruptMessage, &o.corruptOffset) != 3) return false;
  return argc % 2 == 1 && o.nranks >= 2 && o.rank >= 0 && o.rank < o.nranks && !o.dir.empty() &&
         (o.version == 11 || o.version == 8);
}

}  // namespace

int main(int argc, char** argv) {
  Options o;
  const bool parsed = parse(argc, argv, o);
  gRank = o.rank;
  if (!parsed) {
    std::fprintf(stderr,
                 "usage: %s --rank R --nranks N --dir DIR [--version 11|8] [--max-bytes B] [--small COUNT] "
                 "[--gib RANK] [--timeout S]   (env WW_RING_CORRUPT=S:M:O flips one sent byte)\n",
                 argv[0]);
    return kUsage;
  }
  // As NCCL with NCCL_NET_PLUGIN set to the library's path (or to what the caller set it to): NCCL's
  // resolution dlopens exactly that name.
  const char* plugin = std::getenv("NCCL_NET_PLUGIN") != nullptr ? std::getenv("NCCL_NET_PLUGIN") : WW_NET_SO;
  wirewise::loader::OpenResult lib = wirewise::loader::openPlugin(wirewise::loader::PluginKind::Net, plugin, nullptr);
  if (lib.handle == nullptr) {
    std::fprintf(stderr, "rank %d: cannot open %s: %s\n", o.rank, plugin, lib.error.c_str());
    return kLoad;
  }
  const std::string symbol = "ncclNetPlugin_v" + std::to_string(o.version);
  void* table = dlsym(lib.handle, symbol.c_str());
  if (table == nullptr) {
    std::fprintf(stderr, "rank %d: %s not found\n", o.rank, symbol.c_str());
    return kLoad;
  }
  const int rc = o.version == 11 ? runRank(static_cast<const ncclNet_v11_t*>(table), o)
                                 : runRank(static_cast<const ncclNet_v8_t*>(table), o);
  if (rc != kOk) {
    std::fprintf(stderr, "rank %d: exit %d\n", o.rank, rc);
    writeFile(o.dir + "/failed." + std::to_string(o.rank), "1", 1);
  }
  return rc;
}
