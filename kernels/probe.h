// Interface between the probe's host program (probe_main.cc, plain C++) and its CUDA parts (*.cu). Only
// standard types cross it, so neither side needs the other's headers.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "telemetry/wiring/wiring_map.h"

namespace wirewise::probe {

// Exit statuses of ww-probe-gpu; `wirewise probe` maps them to its messages (docs/wiring.md).
constexpr int kExitOk = 0;
constexpr int kExitError = 1;
constexpr int kExitUsage = 2;
constexpr int kExitNoDevice = 3;
constexpr int kExitCheckFailed = 4;

struct ProbeConfig {
  uint64_t bytes = 256ull << 20;  // per copy; rounded down to a multiple of 16 (one int4)
  int warmup = 2;
  int trials = 10;
  int latencyIters = 1000;        // round trips per latency trial
  int latencyTrials = 5;
  int timeoutMs = 1000;           // a ping-pong side waiting longer than this gives up (never hangs)
  std::vector<int> devices;       // empty: all
};

// cudaGetDeviceCount; false with *why ("no CUDA-capable device is detected", "CUDA driver version is
// insufficient ...") when there is no usable device.
bool deviceCount(int* count, std::string* why);

// Fills gpus (identity, self copy) and pairs (every ordered pair of the chosen devices). Progress and
// per-measurement problems go to *log; figures that could not be measured stay -1 with error set.
void measureAll(const ProbeConfig& config, wiring::WiringMap* map, std::vector<std::string>* log);

// The kernels' own correctness checks on every device and pair: each copy path with a size that is not a
// multiple of the unrolled stride, the verifier rejecting an uncopied buffer, and the ping-pong finishing
// with the expected flag values. One line per check ("PASS ..."/"FAIL ..."); false if any failed.
bool runChecks(const ProbeConfig& config, std::vector<std::string>* lines);

}  // namespace wirewise::probe
