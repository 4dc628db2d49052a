// NVLink and PCIe health from NVML, opened with dlopen (library name injectable; default
// "libnvidia-ml.so.1"). Per GPU and pass: one batched nvmlDeviceGetFieldValues (per-link throughput,
// replay/recovery/CRC counters, speed; PCIe byte counters), one nvmlDeviceGetNvLinkState per link and
// nvmlDeviceGetPcieReplayCounter. nvmlDeviceGetPcieThroughput samples for ~20 ms inside the driver, so
// it is only called when enabled. NVML calls are serialised by the caller (one sampler thread).
#pragma once

#include <string>
#include <vector>

#include "telemetry/collectors/link_health.h"
#include "telemetry/collectors/nvml_api.h"
#include "telemetry/collectors/sysfs_util.h"

namespace wirewise::collectors {

class NvmlCollector {
 public:
  NvmlCollector(double tauSeconds, bool pcieThroughput) : tau_(tauSeconds), pcieThroughput_(pcieThroughput) {}
  ~NvmlCollector();  // nvmlShutdown (reference-counted by NVML); the library itself stays loaded, as NCCL does
  NvmlCollector(const NvmlCollector&) = delete;
  NvmlCollector& operator=(const NvmlCollector&) = delete;

  // Loads the library, resolves the entry points, initialises NVML and discovers GPUs and links.
  // Returns false with reason() set when anything is missing; the collector then samples nothing.
  bool open(const std::string& library);
  bool available() const { return available_; }
  const std::string& reason() const { return reason_; }

  void sample(int64_t nowNs);
  const std::vector<LinkHealth>& links() const { return links_; }
  size_t gpuCount() const { return gpus_.size(); }

 private:
  struct NvLink {
    unsigned index;
    size_t linkSlot;  // index into links_
    RateMeter tx, rx;
    CounterTrack replay, recovery, crc;
  };
  struct Gpu {
    nvml::Device handle;
    std::vector<NvLink> links;
    size_t pcieSlot;
    RateMeter pcieTx, pcieRx;
    CounterTrack pcieReplay;
    std::vector<nvml::FieldValue> request;  // reused every pass: no allocation after open()
    long long lastTsUs = 0;
  };
  void sampleGpu(Gpu& g, double dt, int64_t nowNs);

  double tau_;
  bool pcieThroughput_;
  bool available_ = false;
  bool initialised_ = false;
  std::string reason_ = "not opened";
  int64_t lastNs_ = 0;
  struct {
    nvml::InitFn init = nullptr;
    nvml::ShutdownFn shutdown = nullptr;
    nvml::GetCountFn getCount = nullptr;
    nvml::GetHandleByIndexFn getHandle = nullptr;
    nvml::GetNvLinkStateFn getNvLinkState = nullptr;
    nvml::GetFieldValuesFn getFieldValues = nullptr;
    nvml::GetPcieThroughputFn getPcieThroughput = nullptr;
    nvml::GetPcieReplayCounterFn getPcieReplay = nullptr;
  } fn_;
  std::vector<Gpu> gpus_;
  std::vector<LinkHealth> links_;
};

}  // namespace wirewise::collectors
