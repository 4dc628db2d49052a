// The wiring map: what `wirewise probe` measured between every pair of GPUs on one host, and what the
// hardware claims for those links. Plain data (no JSON, no CUDA), so the CUDA probe, the analysis, the
// renderers and the plugin's prior all share it. Units: GB/s = 1e9 bytes/s; microseconds. A negative
// figure means "not measured" (the method did not apply or failed; `error` says why).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace wirewise::wiring {

constexpr int kSchemaVersion = 1;

enum class LinkType : uint8_t { kUnknown, kNvlink, kPcie };
const char* linkTypeName(LinkType t);                // "unknown", "nvlink", "pcie"
bool parseLinkType(const std::string& s, LinkType* out);

struct PcieLink {
  int gen = 0, width = 0;        // as trained now (0 = unknown)
  int maxGen = 0, maxWidth = 0;  // what the device and slot support
};

struct GpuInfo {
  int index = 0;               // CUDA device ordinal, with CUDA_DEVICE_ORDER=PCI_BUS_ID
  std::string name;            // "NVIDIA H200"
  std::string pciBusId;        // "0000:19:00.0"
  int ccMajor = 0, ccMinor = 0;
  int sms = 0;
  uint64_t memoryBytes = 0;
  bool present = true;         // false: expected (NVML, or a previous map) but CUDA does not see it
  double selfCopyGbps = -1;    // device-to-device copy on the GPU itself, read + write traffic (2 x bytes / time)
  double selfCopyCeGbps = -1;  // the same through the copy engine (cudaMemcpyAsync)
  double selfCopySmGbps = -1;  // the same through the SM copy kernel
  int nvlinksUp = -1;          // NVML: active NVLinks (-1 = unknown)
  double nvlinkGbpsPerLink = -1;  // NVML: per-link speed per direction (-1 = unknown)
  PcieLink pcie;
  std::string error;           // why something was not measured
};

// One ordered pair: data flows from src to dst. Bidirectional figures and latency belong to the unordered
// pair and are repeated in both entries.
struct PairResult {
  int src = 0, dst = 0;
  bool peerAccess = false;     // cudaDeviceCanAccessPeer(dst -> src memory) and (src -> dst memory)
  LinkType link = LinkType::kUnknown;
  std::string linkSource;      // how `link` was determined: "nvml", "p2p-atomics", "recorded", ""
  int nvlinks = -1;            // links between the two (or to the fabric): -1 unknown
  double ceGbps = -1;          // cudaMemcpyPeerAsync src -> dst
  double smWriteGbps = -1;     // kernel on src writing dst's memory
  double smReadGbps = -1;      // kernel on dst reading src's memory
  double bidirGbps = -1;       // both directions at once, sum of the two (copy engines)
  double bidirSmGbps = -1;     // both directions at once, SM write kernels
  double latencyUs = -1;       // one-way latency: half the ping-pong round trip through peer memory
  std::string verify;          // "ok": the copied data were checked and correct; "failed"; "": not checked
  std::string error;
  // Best unidirectional figure over the methods, -1 when none was measured.
  double bestUniGbps() const;
};

struct ProbeMethod {
  uint64_t bytes = 0;          // buffer per copy
  int warmup = 0, trials = 0;  // figures are medians of `trials` after `warmup` discarded runs
  int latencyIters = 0;        // round trips per latency trial
};

struct WiringMap {
  int schema = kSchemaVersion;
  std::string host, time, tool;  // time: ISO-8601 UTC
  ProbeMethod method;
  std::vector<GpuInfo> gpus;
  std::vector<PairResult> pairs;
  std::vector<std::string> notes;  // what could not be measured and why

  const GpuInfo* gpu(int index) const;
  const PairResult* pair(int src, int dst) const;
};

}  // namespace wirewise::wiring
