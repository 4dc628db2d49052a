#include "telemetry/collectors/nvml_collector.h"

#include <dlfcn.h>

#include <utility>

namespace wirewise::collectors {
namespace {

constexpr unsigned kPerLinkFields = 6;  // tx, rx, replay, recovery, crc, speed
constexpr unsigned kLinkFieldIds[kPerLinkFields] = {
    nvml::kFiNvlinkThroughputDataTx, nvml::kFiNvlinkThroughputDataRx, nvml::kFiNvlinkErrorDlReplay,
    nvml::kFiNvlinkErrorDlRecovery,  nvml::kFiNvlinkErrorDlCrc,       nvml::kFiNvlinkGetSpeed};

std::optional<uint64_t> valueOf(const nvml::FieldValue& f) {
  if (f.nvmlReturn != nvml::kSuccess) return std::nullopt;
  return nvml::asU64(f);
}

template <typename Fn>
bool resolve(void* lib, const char* name, Fn* out, std::string* missing) {
  *out = reinterpret_cast<Fn>(::dlsym(lib, name));
  if (*out == nullptr && missing->empty()) *missing = name;
  return *out != nullptr;
}

}  // namespace

NvmlCollector::~NvmlCollector() {
  if (initialised_ && fn_.shutdown) fn_.shutdown();
}

bool NvmlCollector::open(const std::string& library) {
  void* lib = ::dlopen(library.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!lib) {
    const char* err = ::dlerror();
    reason_ = "dlopen " + library + " failed: " + (err ? err : "unknown error");
    return false;
  }
  std::string missing;
  resolve(lib, "nvmlInit_v2", &fn_.init, &missing);
  resolve(lib, "nvmlShutdown", &fn_.shutdown, &missing);
  resolve(lib, "nvmlDeviceGetCount_v2", &fn_.getCount, &missing);
  resolve(lib, "nvmlDeviceGetHandleByIndex_v2", &fn_.getHandle, &missing);
  resolve(lib, "nvmlDeviceGetNvLinkState", &fn_.getNvLinkState, &missing);
  resolve(lib, "nvmlDeviceGetFieldValues", &fn_.getFieldValues, &missing);
  resolve(lib, "nvmlDeviceGetPcieThroughput", &fn_.getPcieThroughput, &missing);
  resolve(lib, "nvmlDeviceGetPcieReplayCounter", &fn_.getPcieReplay, &missing);
  if (!missing.empty()) {
    // The library stays loaded (never dlclose NVML, as NCCL does), but nothing is called.
    reason_ = library + " lacks symbol " + missing;
    return false;
  }
  if (nvml::Return r = fn_.init(); r != nvml::kSuccess) {
    reason_ = "nvmlInit_v2 returned " + std::to_string(r);
    return false;
  }
  initialised_ = true;
  unsigned count = 0;
  if (nvml::Return r = fn_.getCount(&count); r != nvml::kSuccess) {
    reason_ = "nvmlDeviceGetCount_v2 returned " + std::to_string(r);
    return false;
  }
  for (unsigned d = 0; d < count; ++d) {
    Gpu g;
    if (fn_.getHandle(d, &g.handle) != nvml::kSuccess) continue;
    // The link count comes from field 91; without it, probe links until the driver says no.
    nvml::FieldValue lc{};
    lc.fieldId = nvml::kFiNvlinkLinkCount;
    unsigned links = nvml::kMaxNvlinks;
    if (fn_.getFieldValues(g.handle, 1, &lc) == nvml::kSuccess && lc.nvmlReturn == nvml::kSuccess) {
      links = static_cast<unsigned>(nvml::asU64(lc));
      if (links > nvml::kMaxNvlinks) links = nvml::kMaxNvlinks;
    }
    std::string gpuId = "gpu" + std::to_string(d);
    for (unsigned l = 0; l < links; ++l) {
      nvml::EnableState st = 0;
      nvml::Return r = fn_.getNvLinkState(g.handle, l, &st);
      if (r == nvml::kErrorInvalidArgument || r == nvml::kErrorNotSupported || r == nvml::kErrorNotFound) break;
      NvLink link{};
      link.index = l;
      link.linkSlot = links_.size();
      LinkHealth h;
      h.kind = LinkKind::kNvlink;
      h.id = gpuId + ":nvlink" + std::to_string(l);
      links_.push_back(std::move(h));
      g.links.push_back(link);
    }
    g.pcieSlot = links_.size();
    LinkHealth p;
    p.kind = LinkKind::kPcie;
    p.id = gpuId + ":pcie";
    links_.push_back(std::move(p));
    for (const NvLink& link : g.links) {
      for (unsigned f : kLinkFieldIds) g.request.push_back(nvml::FieldValue{f, link.index, 0, 0, 0, 0, {}});
    }
    g.request.push_back(nvml::FieldValue{nvml::kFiPcieCountTxBytes, 0, 0, 0, 0, 0, {}});
    g.request.push_back(nvml::FieldValue{nvml::kFiPcieCountRxBytes, 0, 0, 0, 0, 0, {}});
    gpus_.push_back(std::move(g));
  }
  available_ = true;
  reason_ = std::to_string(gpus_.size()) + " GPU(s), " + std::to_string(links_.size() - gpus_.size()) + " NVLink(s)";
  return true;
}

void NvmlCollector::sample(int64_t nowNs) {
  if (!available_) return;
  double dt = lastNs_ > 0 && nowNs > lastNs_ ? static_cast<double>(nowNs - lastNs_) * 1e-9 : 0.0;
  lastNs_ = nowNs;
  for (Gpu& g : gpus_) sampleGpu(g, dt, nowNs);
}

void NvmlCollector::sampleGpu(Gpu& g, double dt, int64_t nowNs) {
  // Reset the outputs of the reused request; ids and scopes stay.
  for (nvml::FieldValue& f : g.request) {
    f.nvmlReturn = nvml::kErrorNotSupported;
    f.timestamp = 0;
  }
  bool batched = fn_.getFieldValues(g.handle, static_cast<int>(g.request.size()), g.request.data()) == nvml::kSuccess;
  // Rates use NVML's own per-value timestamps (µs) when they advance; otherwise the sampler clock.
  long long ts = 0;
  for (const nvml::FieldValue& f : g.request) {
    if (f.nvmlReturn == nvml::kSuccess && f.timestamp > ts) ts = f.timestamp;
  }
  double rateDt = dt;
  if (ts > 0 && g.lastTsUs > 0 && ts > g.lastTsUs) rateDt = static_cast<double>(ts - g.lastTsUs) * 1e-6;
  if (ts > 0) g.lastTsUs = ts;

  for (size_t i = 0; i < g.links.size(); ++i) {
    NvLink& nl = g.links[i];
    LinkHealth& h = links_[nl.linkSlot];
    const nvml::FieldValue* f = &g.request[i * kPerLinkFields];
    nvml::EnableState st = 0;
    h.up = fn_.getNvLinkState(g.handle, nl.index, &st) == nvml::kSuccess && st == 1;
    auto none = std::optional<uint64_t>();
    nl.tx.update(batched ? valueOf(f[0]) : none, rateDt, 1024.0, tau_);
    nl.rx.update(batched ? valueOf(f[1]) : none, rateDt, 1024.0, tau_);
    auto fresh = [](const RateMeter& m) {
      return m.valid && (m.lastStep == CounterTrack::Step::kDelta || m.lastStep == CounterTrack::Step::kWrap32);
    };
    h.rateValid = fresh(nl.tx) && fresh(nl.rx);
    h.txBps = nl.tx.smoothed;
    h.rxBps = nl.rx.smoothed;
    uint64_t errs = 0;
    CounterTrack* tracks[3] = {&nl.replay, &nl.recovery, &nl.crc};
    for (int k = 0; k < 3; ++k) {
      uint64_t d = 0;
      auto step = tracks[k]->step(batched ? valueOf(f[2 + k]) : none, &d);
      if (step == CounterTrack::Step::kDelta || step == CounterTrack::Step::kWrap32) errs += d;
    }
    h.errorsPerSec = dt > 0 ? static_cast<double>(errs) / dt : 0.0;
    auto speed = batched ? valueOf(f[5]) : none;
    h.nominalBps = speed ? static_cast<double>(*speed) * 1e6 : 0.0;  // MBps
    h.counterAnomalies = static_cast<uint32_t>(nl.tx.counter.wraps + nl.tx.counter.resets + nl.tx.counter.missing);
    refreshState(h, nowNs);
  }

  LinkHealth& p = links_[g.pcieSlot];
  p.up = true;
  const nvml::FieldValue* pf = &g.request[g.links.size() * kPerLinkFields];
  auto ptx = batched ? valueOf(pf[0]) : std::nullopt;
  auto prx = batched ? valueOf(pf[1]) : std::nullopt;
  if (ptx && prx) {
    g.pcieTx.update(ptx, rateDt, 1.0, tau_);
    g.pcieRx.update(prx, rateDt, 1.0, tau_);
    p.rateValid = g.pcieTx.valid && g.pcieRx.valid && g.pcieTx.lastStep != CounterTrack::Step::kFirst;
    p.txBps = g.pcieTx.smoothed;
    p.rxBps = g.pcieRx.smoothed;
  } else if (pcieThroughput_) {
    unsigned tx = 0, rx = 0;  // KB/s over a ~20 ms window inside the driver
    bool ok = fn_.getPcieThroughput(g.handle, nvml::kPcieUtilTxBytes, &tx) == nvml::kSuccess &&
              fn_.getPcieThroughput(g.handle, nvml::kPcieUtilRxBytes, &rx) == nvml::kSuccess;
    p.rateValid = ok;
    p.txBps = tx * 1024.0;
    p.rxBps = rx * 1024.0;
  } else {
    p.rateValid = false;
  }
  unsigned replay = 0;
  uint64_t d = 0;
  bool got = fn_.getPcieReplay(g.handle, &replay) == nvml::kSuccess;
  auto step = g.pcieReplay.step(got ? std::optional<uint64_t>(replay) : std::nullopt, &d);
  bool counted = step == CounterTrack::Step::kDelta || step == CounterTrack::Step::kWrap32;
  p.errorsPerSec = counted && dt > 0 ? static_cast<double>(d) / dt : 0.0;
  refreshState(p, nowNs);
}

}  // namespace wirewise::collectors
