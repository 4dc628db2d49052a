// Measurements with the CUDA runtime: per GPU the self copy, per ordered pair the copy-engine copy and
// the SM write and read, per unordered pair the bidirectional figures and the ping-pong latency. Every
// figure is the median of `trials` timed runs (CUDA events) after `warmup` discarded ones, and every copy
// is verified afterwards (the destination is cleared before, so a copy that did nothing fails).
#include <cuda_runtime.h>

#include <algorithm>
#include <functional>

#include "kernels/probe.h"
#include "kernels/probe_kernels.cuh"
#include "telemetry/wiring/text_util.h"

namespace wirewise::probe {
namespace {

struct Device {
  int index = 0;
  bool usable = false;
  cudaStream_t stream = nullptr;
  uint4* src = nullptr;  // filled with pattern(seed = index + 1)
  uint4* dst = nullptr;  // receives copies
  uint32_t* flag = nullptr;
  unsigned long long* scratch = nullptr;  // [0..1] ping-pong result, [2] mismatches
  CopyGrid grid;
};

uint32_t seedOf(int device) { return static_cast<uint32_t>(device) + 1; }

std::string cudaText(cudaError_t e, const char* what) {
  return std::string(what) + ": " + cudaGetErrorString(e);
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  const size_t n = v.size();
  return n == 0 ? -1 : n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

#define PROBE_TRY(expr, what)                  \
  do {                                         \
    cudaError_t e_ = (expr);                   \
    if (e_ != cudaSuccess) {                   \
      *error = cudaText(e_, what);             \
      return false;                            \
    }                                          \
  } while (0)

// Times `enqueue` (which issues work on `stream` of `device`, possibly waited on by other streams)
// warmup + trials times with events on that stream; fills *ms with the timed trials.
bool timeTrials(int device, cudaStream_t stream, const std::function<cudaError_t()>& enqueue, int warmup, int trials,
                std::vector<double>* ms, std::string* error) {
  PROBE_TRY(cudaSetDevice(device), "cudaSetDevice");
  cudaEvent_t start = nullptr, stop = nullptr;
  PROBE_TRY(cudaEventCreate(&start), "cudaEventCreate");
  if (cudaError_t e = cudaEventCreate(&stop); e != cudaSuccess) {
    cudaEventDestroy(start);
    *error = cudaText(e, "cudaEventCreate");
    return false;
  }
  bool ok = true;
  for (int t = 0; t < warmup + trials && ok; ++t) {
    cudaError_t e = cudaSetDevice(device);
    if (e == cudaSuccess) e = cudaEventRecord(start, stream);
    if (e == cudaSuccess) e = enqueue();
    if (e == cudaSuccess) e = cudaSetDevice(device);
    if (e == cudaSuccess) e = cudaEventRecord(stop, stream);
    if (e == cudaSuccess) e = cudaEventSynchronize(stop);
    float elapsed = 0;
    if (e == cudaSuccess) e = cudaEventElapsedTime(&elapsed, start, stop);
    if (e != cudaSuccess) {
      *error = cudaText(e, "timed run");
      ok = false;
    } else if (t >= warmup) {
      ms->push_back(elapsed);
    }
  }
  cudaSetDevice(device);
  cudaEventDestroy(start);
  cudaEventDestroy(stop);
  return ok;
}

bool clearDst(const Device& d, size_t bytes, std::string* error) {
  PROBE_TRY(cudaSetDevice(d.index), "cudaSetDevice");
  PROBE_TRY(cudaMemsetAsync(d.dst, 0, bytes, d.stream), "cudaMemsetAsync");
  PROBE_TRY(cudaStreamSynchronize(d.stream), "clear destination");
  return true;
}

// Counts elements of `buf` (on device d) that differ from the pattern written on GPU `from`.
bool countMismatches(const Device& d, const uint4* buf, size_t n, int from, unsigned long long* bad, std::string* error) {
  PROBE_TRY(cudaSetDevice(d.index), "cudaSetDevice");
  PROBE_TRY(cudaMemsetAsync(d.scratch + 2, 0, sizeof(unsigned long long), d.stream), "cudaMemsetAsync");
  PROBE_TRY(launchVerify(buf, n, seedOf(from), d.scratch + 2, d.stream), "verify kernel");
  PROBE_TRY(cudaMemcpyAsync(bad, d.scratch + 2, sizeof *bad, cudaMemcpyDeviceToHost, d.stream), "cudaMemcpyAsync");
  PROBE_TRY(cudaStreamSynchronize(d.stream), "verify");
  return true;
}

// "ok", or "failed" with *error naming the count.
std::string verdict(const Device& d, size_t n, int from, std::string* error) {
  unsigned long long bad = 0;
  std::string why;
  if (!countMismatches(d, d.dst, n, from, &bad, &why)) {
    *error += (error->empty() ? "" : "; ") + why;
    return "failed";
  }
  if (bad) {
    *error += (error->empty() ? "" : "; ") + std::to_string(bad) + " of " + std::to_string(n) + " elements wrong";
    return "failed";
  }
  return "ok";
}

double gbps(double bytes, double ms) { return ms > 0 ? bytes / (ms * 1e-3) / 1e9 : -1; }

// Median GB/s of a timed copy whose every trial moves `bytes`; -1 (and *error) on failure.
double measure(int device, cudaStream_t stream, const std::function<cudaError_t()>& enqueue, const ProbeConfig& c,
               double bytes, std::string* error) {
  std::vector<double> ms;
  if (!timeTrials(device, stream, enqueue, c.warmup, c.trials, &ms, error)) return -1;
  return gbps(bytes, median(ms));
}

void appendError(std::string* to, const std::string& what, const std::string& why) {
  if (why.empty()) return;
  *to += (to->empty() ? "" : "; ") + what + ": " + why;
}

bool setUp(Device& d, size_t bytes, std::string* error) {
  PROBE_TRY(cudaSetDevice(d.index), "cudaSetDevice");
  PROBE_TRY(cudaStreamCreateWithFlags(&d.stream, cudaStreamNonBlocking), "cudaStreamCreate");
  PROBE_TRY(cudaMalloc(&d.src, bytes), "cudaMalloc source");
  PROBE_TRY(cudaMalloc(&d.dst, bytes), "cudaMalloc destination");
  PROBE_TRY(cudaMalloc(&d.flag, 64), "cudaMalloc flag");
  PROBE_TRY(cudaMalloc(&d.scratch, 4 * sizeof(unsigned long long)), "cudaMalloc scratch");
  PROBE_TRY(launchFill(d.src, bytes / kVecBytes, seedOf(d.index), d.stream), "fill kernel");
  PROBE_TRY(cudaStreamSynchronize(d.stream), "fill");
  d.grid = copyGrid(d.index);
  d.usable = true;
  return true;
}

void tearDown(Device& d) {
  if (cudaSetDevice(d.index) != cudaSuccess) return;
  cudaFree(d.src);
  cudaFree(d.dst);
  cudaFree(d.flag);
  cudaFree(d.scratch);
  if (d.stream) cudaStreamDestroy(d.stream);
}

// Both directions of a pair need access for SM writes/reads and the ping-pong.
bool enablePeer(int from, int to, std::string* error) {
  int can = 0;
  PROBE_TRY(cudaDeviceCanAccessPeer(&can, from, to), "cudaDeviceCanAccessPeer");
  if (!can) return false;
  PROBE_TRY(cudaSetDevice(from), "cudaSetDevice");
  cudaError_t e = cudaDeviceEnablePeerAccess(to, 0);
  if (e == cudaErrorPeerAccessAlreadyEnabled) {
    cudaGetLastError();  // clear the sticky-free error so later checks do not see it
    e = cudaSuccess;
  }
  PROBE_TRY(e, "cudaDeviceEnablePeerAccess");
  return true;
}

// One-way latency in µs (median over trials) between a and b; -1 and *error on failure or timeout.
double pingPong(const Device& a, const Device& b, const ProbeConfig& c, std::string* error) {
  std::vector<double> us;
  const int warmup = std::max(10, c.latencyIters / 20);
  const unsigned long long timeoutNs = static_cast<unsigned long long>(c.timeoutMs) * 1000000ull;
  for (int t = 0; t < c.latencyTrials; ++t) {
    unsigned long long ra[2] = {0, 0}, rb[2] = {0, 0};
    for (const Device* d : {&a, &b}) {
      if (cudaSetDevice(d->index) != cudaSuccess || cudaMemset(d->flag, 0, 64) != cudaSuccess ||
          cudaDeviceSynchronize() != cudaSuccess) {
        *error = "resetting the ping-pong flags failed";
        return -1;
      }
    }
    // The responder first, so the initiator's first write finds it running in the common case; the
    // timeout covers the rest.
    cudaError_t e = cudaSetDevice(b.index);
    if (e == cudaSuccess)
      e = launchPingPong(b.flag, a.flag, warmup, c.latencyIters, false, timeoutNs, b.scratch, b.stream);
    if (e == cudaSuccess) e = cudaSetDevice(a.index);
    if (e == cudaSuccess)
      e = launchPingPong(a.flag, b.flag, warmup, c.latencyIters, true, timeoutNs, a.scratch, a.stream);
    if (e == cudaSuccess) e = cudaMemcpyAsync(ra, a.scratch, sizeof ra, cudaMemcpyDeviceToHost, a.stream);
    if (e == cudaSuccess) e = cudaStreamSynchronize(a.stream);
    if (e == cudaSuccess) e = cudaSetDevice(b.index);
    if (e == cudaSuccess) e = cudaMemcpyAsync(rb, b.scratch, sizeof rb, cudaMemcpyDeviceToHost, b.stream);
    if (e == cudaSuccess) e = cudaStreamSynchronize(b.stream);
    if (e != cudaSuccess) {
      *error = cudaText(e, "ping-pong");
      return -1;
    }
    if (ra[1] != 0 || rb[1] != 0) {
      *error = "ping-pong timed out after " + std::to_string(c.timeoutMs) + " ms (round " +
               std::to_string(std::max(ra[1], rb[1]) - 1) + ")";
      return -1;
    }
    us.push_back(static_cast<double>(ra[0]) / c.latencyIters / 2.0 / 1000.0);
  }
  return median(us);
}

}  // namespace

bool deviceCount(int* count, std::string* why) {
  cudaError_t e = cudaGetDeviceCount(count);
  if (e != cudaSuccess) {
    *why = std::string("cudaGetDeviceCount: ") + cudaGetErrorString(e);
    *count = 0;
    return false;
  }
  if (*count == 0) {
    *why = "cudaGetDeviceCount: 0 devices";
    return false;
  }
  return true;
}

void measureAll(const ProbeConfig& c, wiring::WiringMap* map, std::vector<std::string>* log) {
  const size_t bytes = c.bytes / kVecBytes * kVecBytes;
  const size_t n = bytes / kVecBytes;
  map->method.bytes = bytes;
  map->method.warmup = c.warmup;
  map->method.trials = c.trials;
  map->method.latencyIters = c.latencyIters;

  std::vector<Device> devs;
  for (int idx : c.devices) {
    Device d;
    d.index = idx;
    wiring::GpuInfo g;
    g.index = idx;
    cudaDeviceProp prop{};
    if (cudaGetDeviceProperties(&prop, idx) == cudaSuccess) {
      g.name = prop.name;
      g.ccMajor = prop.major;
      g.ccMinor = prop.minor;
      g.sms = prop.multiProcessorCount;
      g.memoryBytes = prop.totalGlobalMem;
    }
    char bus[32] = {0};
    if (cudaDeviceGetPCIBusId(bus, sizeof bus, idx) == cudaSuccess) g.pciBusId = bus;
    std::string why;
    if (!setUp(d, bytes, &why)) {
      g.error = why;
      log->push_back("gpu" + std::to_string(idx) + ": " + why);
    }
    devs.push_back(d);
    map->gpus.push_back(std::move(g));
  }
  auto gpuOf = [&](int idx) -> wiring::GpuInfo& {
    for (auto& g : map->gpus)
      if (g.index == idx) return g;
    return map->gpus.front();
  };

  // Self copies: each GPU's own copy bandwidth, the ceiling any link figure is read against.
  for (Device& d : devs) {
    if (!d.usable) continue;
    wiring::GpuInfo& g = gpuOf(d.index);
    std::string why;
    if (clearDst(d, bytes, &why)) {
      g.selfCopyCeGbps = measure(d.index, d.stream, [&] {
        return cudaMemcpyAsync(d.dst, d.src, bytes, cudaMemcpyDeviceToDevice, d.stream);
      }, c, 2.0 * bytes, &why);
      if (g.selfCopyCeGbps > 0 && verdict(d, n, d.index, &why) != "ok") g.selfCopyCeGbps = -1;
    }
    appendError(&g.error, "self copy (copy engine)", why);
    why.clear();
    if (clearDst(d, bytes, &why)) {
      g.selfCopySmGbps = measure(d.index, d.stream, [&] { return launchCopy(d.src, d.dst, n, d.grid, d.stream); }, c,
                                 2.0 * bytes, &why);
      if (g.selfCopySmGbps > 0 && verdict(d, n, d.index, &why) != "ok") g.selfCopySmGbps = -1;
    }
    appendError(&g.error, "self copy (SM)", why);
    g.selfCopyGbps = std::max(g.selfCopyCeGbps, g.selfCopySmGbps);
    log->push_back("gpu" + std::to_string(d.index) + " self copy " + wiring::fixed(g.selfCopyGbps, 1) + " GB/s");
  }

  // Ordered pairs: peer access, link class, copy engine, SM write, SM read.
  for (Device& s : devs) {
    for (Device& d : devs) {
      if (s.index == d.index) continue;
      wiring::PairResult p;
      p.src = s.index;
      p.dst = d.index;
      if (!s.usable || !d.usable) {
        p.error = "a GPU of the pair could not be set up";
        map->pairs.push_back(std::move(p));
        continue;
      }
      std::string why;
      const bool fwd = enablePeer(s.index, d.index, &why);
      const bool back = enablePeer(d.index, s.index, &why);
      appendError(&p.error, "peer access", why);
      p.peerAccess = fwd && back;
      int atomics = 0;
      if (cudaDeviceGetP2PAttribute(&atomics, cudaDevP2PAttrNativeAtomicSupported, s.index, d.index) == cudaSuccess) {
        // Native peer atomics exist over NVLink, not over PCIe; NVML refines this when it is available.
        p.link = atomics ? wiring::LinkType::kNvlink : wiring::LinkType::kPcie;
        p.linkSource = "cuda-p2p-attributes";
      }
      std::vector<std::string> verdicts;
      why.clear();
      if (clearDst(d, bytes, &why)) {
        p.ceGbps = measure(s.index, s.stream, [&] {
          return cudaMemcpyPeerAsync(d.dst, d.index, s.src, s.index, bytes, s.stream);
        }, c, bytes, &why);
        if (p.ceGbps > 0) verdicts.push_back(verdict(d, n, s.index, &why));
      }
      appendError(&p.error, "copy engine", why);
      if (p.peerAccess) {
        why.clear();
        if (clearDst(d, bytes, &why)) {
          p.smWriteGbps = measure(s.index, s.stream, [&] { return launchCopy(s.src, d.dst, n, s.grid, s.stream); }, c,
                                  bytes, &why);
          if (p.smWriteGbps > 0) verdicts.push_back(verdict(d, n, s.index, &why));
        }
        appendError(&p.error, "SM write", why);
        why.clear();
        if (clearDst(d, bytes, &why)) {
          p.smReadGbps = measure(d.index, d.stream, [&] { return launchCopy(s.src, d.dst, n, d.grid, d.stream); }, c,
                                 bytes, &why);
          if (p.smReadGbps > 0) verdicts.push_back(verdict(d, n, s.index, &why));
        }
        appendError(&p.error, "SM read", why);
      }
      if (!verdicts.empty()) {
        p.verify = std::all_of(verdicts.begin(), verdicts.end(), [](const std::string& v) { return v == "ok"; }) ? "ok"
                                                                                                                  : "failed";
      }
      log->push_back("gpu" + std::to_string(s.index) + "->gpu" + std::to_string(d.index) + " ce " +
                     wiring::fixed(p.ceGbps, 1) + " sm-write " + wiring::fixed(p.smWriteGbps, 1) + " sm-read " +
                     wiring::fixed(p.smReadGbps, 1) + " GB/s" + (p.error.empty() ? "" : " (" + p.error + ")"));
      map->pairs.push_back(std::move(p));
    }
  }

  // Unordered pairs: both directions at once, and the latency.
  auto pairAt = [&](int s, int d) -> wiring::PairResult* {
    for (auto& p : map->pairs)
      if (p.src == s && p.dst == d) return &p;
    return nullptr;
  };
  for (size_t i = 0; i < devs.size(); ++i) {
    for (size_t j = i + 1; j < devs.size(); ++j) {
      Device& a = devs[i];
      Device& b = devs[j];
      wiring::PairResult* ab = pairAt(a.index, b.index);
      wiring::PairResult* ba = pairAt(b.index, a.index);
      if (!ab || !ba || !a.usable || !b.usable) continue;
      std::string why, shared;  // problems of the unordered pair, reported in both entries
      cudaEvent_t aStart = nullptr, bDone = nullptr;
      bool events = cudaSetDevice(a.index) == cudaSuccess && cudaEventCreate(&aStart) == cudaSuccess &&
                    cudaSetDevice(b.index) == cudaSuccess && cudaEventCreate(&bDone) == cudaSuccess;
      // b's stream starts when a's does (a's start event) and a's stream ends when b's is done, so a's
      // events time both directions together.
      auto both = [&](const std::function<cudaError_t()>& onA, const std::function<cudaError_t()>& onB) {
        cudaError_t e = cudaSetDevice(a.index);
        if (e == cudaSuccess) e = cudaEventRecord(aStart, a.stream);
        if (e == cudaSuccess) e = cudaSetDevice(b.index);
        if (e == cudaSuccess) e = cudaStreamWaitEvent(b.stream, aStart, 0);
        if (e == cudaSuccess) e = onB();
        if (e == cudaSuccess) e = cudaEventRecord(bDone, b.stream);
        if (e == cudaSuccess) e = cudaSetDevice(a.index);
        if (e == cudaSuccess) e = onA();
        if (e == cudaSuccess) e = cudaStreamWaitEvent(a.stream, bDone, 0);
        return e;
      };
      if (events && clearDst(a, bytes, &why) && clearDst(b, bytes, &why)) {
        const double v = measure(a.index, a.stream, [&] {
          return both([&] { return cudaMemcpyPeerAsync(b.dst, b.index, a.src, a.index, bytes, a.stream); },
                      [&] { return cudaMemcpyPeerAsync(a.dst, a.index, b.src, b.index, bytes, b.stream); });
        }, c, 2.0 * bytes, &why);
        if (v > 0 && verdict(b, n, a.index, &why) == "ok" && verdict(a, n, b.index, &why) == "ok") {
          ab->bidirGbps = ba->bidirGbps = v;
        }
      }
      appendError(&shared, "bidirectional copy engine", why);
      why.clear();
      if (events && ab->peerAccess && clearDst(a, bytes, &why) && clearDst(b, bytes, &why)) {
        const double v = measure(a.index, a.stream, [&] {
          return both([&] { return launchCopy(a.src, b.dst, n, a.grid, a.stream); },
                      [&] { return launchCopy(b.src, a.dst, n, b.grid, b.stream); });
        }, c, 2.0 * bytes, &why);
        if (v > 0 && verdict(b, n, a.index, &why) == "ok" && verdict(a, n, b.index, &why) == "ok") {
          ab->bidirSmGbps = ba->bidirSmGbps = v;
        }
      }
      appendError(&shared, "bidirectional SM", why);
      if (aStart) {
        cudaSetDevice(a.index);
        cudaEventDestroy(aStart);
      }
      if (bDone) {
        cudaSetDevice(b.index);
        cudaEventDestroy(bDone);
      }
      if (ab->peerAccess) {
        why.clear();
        const double us = pingPong(a, b, c, &why);
        if (us > 0) ab->latencyUs = ba->latencyUs = us;
        appendError(&shared, "latency", why);
      }
      appendError(&ab->error, "pair", shared);
      appendError(&ba->error, "pair", shared);
      log->push_back("gpu" + std::to_string(a.index) + "<->gpu" + std::to_string(b.index) + " bidir " +
                     wiring::fixed(ab->bidirGbps, 1) + " GB/s, latency " + wiring::fixed(ab->latencyUs, 2) + " us");
    }
  }
  for (Device& d : devs) tearDown(d);
}

bool runChecks(const ProbeConfig& c, std::vector<std::string>* lines) {
  const size_t bytes = c.bytes / kVecBytes * kVecBytes;
  const size_t n = bytes / kVecBytes;
  const size_t tail = 5;  // copies of n - tail elements must leave exactly `tail` elements untouched
  bool allOk = true;
  auto report = [&](bool ok, const std::string& what, const std::string& detail) {
    lines->push_back(std::string(ok ? "PASS " : "FAIL ") + what + (detail.empty() ? "" : ": " + detail));
    allOk = allOk && ok;
  };
  // After a copy of n - tail elements into a cleared buffer, exactly `tail` elements differ.
  auto expectCopy = [&](const Device& d, int from, const std::string& what, cudaError_t launched) {
    std::string why;
    unsigned long long bad = ~0ull;
    cudaError_t e = launched;
    if (e == cudaSuccess) e = cudaSetDevice(d.index);
    if (e == cudaSuccess) e = cudaDeviceSynchronize();
    if (e != cudaSuccess) return report(false, what, cudaGetErrorString(e));
    if (!countMismatches(d, d.dst, n, from, &bad, &why)) return report(false, what, why);
    report(bad == tail, what, bad == tail ? "" : std::to_string(bad) + " elements differ, expected " + std::to_string(tail));
  };
  if (n <= tail) {
    report(false, "setup", "--bytes too small for the checks");
    return false;
  }
  std::vector<Device> devs;
  for (int idx : c.devices) {
    Device d;
    d.index = idx;
    std::string why;
    if (!setUp(d, bytes, &why)) report(false, "gpu" + std::to_string(idx) + " setup", why);
    devs.push_back(d);
  }
  for (Device& d : devs) {
    if (!d.usable) continue;
    const std::string g = "gpu" + std::to_string(d.index);
    std::string why;
    unsigned long long bad = 0;
    // The verifier itself must reject a buffer nothing was copied into, or every other check is void.
    bool ok = clearDst(d, bytes, &why) && countMismatches(d, d.dst, n, d.index, &bad, &why);
    report(ok && bad == n, g + " verifier rejects an uncopied buffer", ok ? std::to_string(bad) + " of " + std::to_string(n) + " flagged" : why);
    if (clearDst(d, bytes, &why))
      expectCopy(d, d.index, g + " self copy, SM kernel", launchCopy(d.src, d.dst, n - tail, d.grid, d.stream));
    if (clearDst(d, bytes, &why))
      expectCopy(d, d.index, g + " self copy, copy engine",
                 cudaMemcpyAsync(d.dst, d.src, (n - tail) * kVecBytes, cudaMemcpyDeviceToDevice, d.stream));
  }
  for (Device& s : devs) {
    for (Device& d : devs) {
      if (s.index == d.index || !s.usable || !d.usable) continue;
      const std::string pr = "gpu" + std::to_string(s.index) + "->gpu" + std::to_string(d.index);
      std::string why;
      const bool peer = enablePeer(s.index, d.index, &why) && enablePeer(d.index, s.index, &why);
      if (clearDst(d, bytes, &why)) {
        cudaError_t e = cudaSetDevice(s.index);
        if (e == cudaSuccess) e = cudaMemcpyPeerAsync(d.dst, d.index, s.src, s.index, (n - tail) * kVecBytes, s.stream);
        if (e == cudaSuccess) e = cudaStreamSynchronize(s.stream);
        expectCopy(d, s.index, pr + " copy engine", e);
      }
      if (!peer) {
        lines->push_back("SKIP " + pr + " SM write/read and ping-pong: no peer access" + (why.empty() ? "" : " (" + why + ")"));
        continue;
      }
      if (clearDst(d, bytes, &why)) {
        cudaError_t e = cudaSetDevice(s.index);
        if (e == cudaSuccess) e = launchCopy(s.src, d.dst, n - tail, s.grid, s.stream);
        if (e == cudaSuccess) e = cudaStreamSynchronize(s.stream);
        expectCopy(d, s.index, pr + " SM write", e);
      }
      if (clearDst(d, bytes, &why)) {
        cudaError_t e = cudaSetDevice(d.index);
        if (e == cudaSuccess) e = launchCopy(s.src, d.dst, n - tail, d.grid, d.stream);
        expectCopy(d, s.index, pr + " SM read", e);
      }
      if (s.index < d.index) {
        ProbeConfig small = c;
        small.latencyIters = 100;
        small.latencyTrials = 1;
        std::string err;
        const double us = pingPong(s, d, small, &err);
        uint32_t fs = 0, fd = 0;
        const int rounds = std::max(10, small.latencyIters / 20) + small.latencyIters;
        bool read = cudaSetDevice(s.index) == cudaSuccess && cudaMemcpy(&fs, s.flag, 4, cudaMemcpyDeviceToHost) == cudaSuccess &&
                    cudaSetDevice(d.index) == cudaSuccess && cudaMemcpy(&fd, d.flag, 4, cudaMemcpyDeviceToHost) == cudaSuccess;
        // The initiator's flag ends at the last reply (2k+2), the responder's at the last ping (2k+1).
        const bool ok = us > 0 && read && fs == 2u * rounds && fd == 2u * rounds - 1;
        report(ok, "gpu" + std::to_string(s.index) + "<->gpu" + std::to_string(d.index) + " ping-pong",
               ok ? wiring::fixed(us, 2) + " us one way" : err + " flags " + std::to_string(fs) + "/" + std::to_string(fd));
      }
    }
  }
  for (Device& d : devs) tearDown(d);
  return allOk;
}

}  // namespace wirewise::probe
