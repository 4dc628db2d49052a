// ww-probe-gpu: measures every GPU pair on this host and writes a wiring map (JSON, docs/wiring.md) to
// --out or stdout; --check runs the kernels' correctness checks instead. `wirewise probe` runs it as a
// child process (see docs/wiring.md for why), reads the map and renders it. Exit statuses in probe.h.
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <string>

#include "kernels/nvml_topology.h"
#include "kernels/probe.h"
#include "telemetry/wiring/wiring_json.h"

namespace {

using namespace wirewise;

void usage() {
  std::fprintf(stderr,
               "usage: ww-probe-gpu [--out FILE] [--bytes N] [--trials N] [--warmup N] [--latency-iters N]\n"
               "                    [--timeout-ms N] [--devices 0,1,..] [--nvml LIB] [--check] [--quiet]\n");
}

bool parseInt(const char* s, long long* out) {
  char* end = nullptr;
  long long v = std::strtoll(s, &end, 10);
  if (!s[0] || *end || v < 0) return false;
  *out = v;
  return true;
}

std::string isoNow() {
  std::time_t t = std::time(nullptr);
  std::tm tm{};
  gmtime_r(&t, &tm);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", &tm);
  return buf;
}

}  // namespace

int main(int argc, char** argv) {
  probe::ProbeConfig config;
  std::string out, nvmlLib = "libnvidia-ml.so.1", devices;
  bool check = false, quiet = false;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    auto value = [&](long long* v) {
      if (i + 1 >= argc || !parseInt(argv[i + 1], v)) return false;
      ++i;
      return true;
    };
    long long v = 0;
    if (a == "--out" && i + 1 < argc) out = argv[++i];
    else if (a == "--nvml" && i + 1 < argc) nvmlLib = argv[++i];
    else if (a == "--devices" && i + 1 < argc) devices = argv[++i];
    else if (a == "--check") check = true;
    else if (a == "--quiet") quiet = true;
    else if (a == "--bytes" && value(&v) && v >= 1024) config.bytes = static_cast<uint64_t>(v);
    else if (a == "--trials" && value(&v) && v >= 1) config.trials = static_cast<int>(v);
    else if (a == "--warmup" && value(&v)) config.warmup = static_cast<int>(v);
    else if (a == "--latency-iters" && value(&v) && v >= 1) config.latencyIters = static_cast<int>(v);
    else if (a == "--timeout-ms" && value(&v) && v >= 1) config.timeoutMs = static_cast<int>(v);
    else {
      std::fprintf(stderr, "ww-probe-gpu: bad argument %s\n", a.c_str());
      usage();
      return probe::kExitUsage;
    }
  }
  // NVML and nvidia-smi number GPUs in PCI order; make CUDA agree unless the user chose otherwise.
  setenv("CUDA_DEVICE_ORDER", "PCI_BUS_ID", 0);

  int count = 0;
  std::string why;
  if (!probe::deviceCount(&count, &why)) {
    std::fprintf(stderr, "ww-probe-gpu: no CUDA device: nothing to probe (%s)\n", why.c_str());
    return probe::kExitNoDevice;
  }
  if (devices.empty()) {
    for (int d = 0; d < count; ++d) config.devices.push_back(d);
  } else {
    size_t pos = 0;
    while (pos <= devices.size()) {
      size_t comma = devices.find(',', pos);
      std::string item = devices.substr(pos, comma == std::string::npos ? std::string::npos : comma - pos);
      long long d = 0;
      if (!parseInt(item.c_str(), &d) || d >= count) {
        std::fprintf(stderr, "ww-probe-gpu: --devices: %s is not one of the %d device(s)\n", item.c_str(), count);
        return probe::kExitUsage;
      }
      config.devices.push_back(static_cast<int>(d));
      if (comma == std::string::npos) break;
      pos = comma + 1;
    }
  }

  if (check) {
    std::vector<std::string> lines;
    const bool ok = probe::runChecks(config, &lines);
    for (const auto& l : lines) std::printf("%s\n", l.c_str());
    std::printf("%s: %zu check line(s) on %zu device(s)\n", ok ? "checks passed" : "CHECKS FAILED", lines.size(),
                config.devices.size());
    return ok ? probe::kExitOk : probe::kExitCheckFailed;
  }

  wiring::WiringMap map;
  char host[256] = {0};
  if (gethostname(host, sizeof host - 1) == 0) map.host = host;
  map.time = isoNow();
  map.tool = std::string("ww-probe-gpu ") + WIREWISE_PROBE_VERSION;
  std::vector<std::string> log;
  probe::measureAll(config, &map, &log);
  probe::addNvmlTopology(nvmlLib, &map);
  if (config.devices.size() == 1) map.notes.push_back("a single GPU has no pairs: only its self copy was measured");
  if (!quiet) {
    for (const auto& l : log) std::fprintf(stderr, "ww-probe-gpu: %s\n", l.c_str());
  }
  const std::string text = wiring::toJson(map).dump(2) + "\n";
  if (out.empty()) {
    std::fwrite(text.data(), 1, text.size(), stdout);
  } else {
    std::string err;
    if (!wiring::writeMapFile(out, map, &err)) {
      std::fprintf(stderr, "ww-probe-gpu: %s\n", err.c_str());
      return probe::kExitError;
    }
  }
  return probe::kExitOk;
}
