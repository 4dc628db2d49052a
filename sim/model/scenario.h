// A simulator scenario: cluster, communicators, workload, fault schedule and noise. Mirrors the contract in
// shared/scenarios/README.md field for field; parsing is strict (unknown fields and bad values are errors that
// name the JSON path) so that a typo never silently runs a different experiment.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "adaptive/types.h"

namespace wirewise::sim {

enum class GpuKind : uint8_t { H100Sxm, H200Sxm, A100Sxm, Pcie, Generic };
enum class Transport : uint8_t { Ib, Socket };
enum class DType : uint8_t { F32, Bf16, F16, F8 };
enum class FaultKind : uint8_t { Degrade, Contention, Latency, Flap, Ramp };
enum class LinkKind : uint8_t { Nic, Nvlink, Pcie, Net };

// Everything the presets fill in for one `cluster.gpu`; explicit cluster fields override them.
struct GpuPreset {
  double nvlinkGbps;       // per-GPU NVLink bundle, GB/s per direction (NCCL's link count x per-link figure)
  bool nvls;               // NVLink SHARP (needs NVSwitch + SM90)
  double pcieGbps;         // GPU<->NIC / GPU<->host, GB/s per direction (NCCL: width x speed / 80)
  int computeCapability;   // 90 for Hopper, 80 for Ampere, ...
};
// h100-sxm / h200-sxm: 18 x 20.6 = 370.8, NVLS, Gen5 x16 = 48, SM90 (model.md §2.1).
// a100-sxm: 12 x 20 = 240, no NVLS, Gen4 x16 = 24, SM80. pcie: no NVLink (0), peer traffic over Gen5 x16 = 48,
// SM89. generic: a modest SM80 NVSwitch box (200 GB/s NVLink, Gen4), meant to be overridden field by field.
GpuPreset gpuPreset(GpuKind kind);
std::string_view gpuKindName(GpuKind kind);
std::string_view dtypeName(DType d);
std::string_view faultKindName(FaultKind k);  // "degrade", ... as in the file
std::string_view linkKindName(LinkKind k);    // "nic", ...
std::string_view transportName(Transport t);  // "ib", "socket"
size_t dtypeSize(DType d);

struct ClusterSpec {
  GpuKind gpu = GpuKind::Generic;
  int nodes = 1;
  int gpusPerNode = 1;
  double nvlinkGbps = 0;   // 0 means no NVLink: intra-node peer traffic goes over PCIe
  bool nvls = false;
  double pcieGbps = 0;
  int nicsPerNode = 8;
  double nicGbps = 50;
  double netLatencyUs = 2.0;
  Transport transport = Transport::Ib;
  int computeCapability = 80;
  int nRanks() const { return nodes * gpusPerNode; }
  int nodeOf(int rank) const { return rank / gpusPerNode; }
  int gpuOf(int rank) const { return rank % gpusPerNode; }
  // Rail alignment (README): GPU g uses NIC g x nics / gpus.
  int nicOfGpu(int g) const { return g * nicsPerNode / gpusPerNode; }
};

// One concrete communicator instance. `ranks: "per-node"` expands into one instance per node, all with the same
// name; `instance` numbers them (0 for the others).
struct CommSpec {
  std::string name;
  int instance = 0;
  std::vector<int> ranks;  // global ranks, ascending as given (node-major numbering)
};

struct StepColl {
  std::string comm;
  CollType coll = CollType::AllReduce;
  size_t bytes = 0;  // NCCL's nBytes (total buffer for allgather/reducescatter)
  int repeat = 1;
  DType dtype = DType::F32;
};

struct Workload {
  int steps = 0;
  std::vector<StepColl> step;
  double computeUs = 0;
};

inline constexpr int kAllIndex = -1;  // "*" for faults[].node / faults[].index
inline constexpr int kUntilEnd = -1;  // faults[].to_step omitted
// A ramp falls in `levels` equal levels, by default min(ramp_steps, this): the truth model is evaluated once per
// distinct link state, so a long ramp must not cost one evaluation per step.
inline constexpr int kDefaultRampLevels = 32;

struct Fault {
  FaultKind kind = FaultKind::Degrade;
  LinkKind link = LinkKind::Nic;
  int node = kAllIndex;
  int index = kAllIndex;
  double factor = 1.0;  // degrade / flap / ramp: capacity multiplier in (0, 1] (a ramp's final one)
  int flows = 0;        // contention: competing greedy flows
  double addUs = 0;     // latency: microseconds added per hop
  int periodSteps = 0;  // flap
  int rampSteps = 0;    // ramp: steps from 1 down to factor, starting at from_step
  int rampLevels = 0;   // ramp: equal levels of the fall, 1..rampSteps (0: min(rampSteps, kDefaultRampLevels))
  int fromStep = 0;
  int toStep = kUntilEnd;
};

struct Noise {
  double jitter = 0;
  double stragglerProb = 0;
  double stragglerUs = 0;
};

struct Scenario {
  std::string name;
  std::string description;
  uint64_t seed = 0;
  ClusterSpec cluster;
  std::vector<CommSpec> comms;  // expanded instances
  Workload workload;
  std::vector<Fault> faults;
  Noise noise;
  // All instances with this name (per-node comms have several); empty if unknown.
  std::vector<const CommSpec*> commInstances(std::string_view name) const;
};

// Parses and validates; on failure returns nullopt and sets *error (if non-null) to "path: reason".
std::optional<Scenario> parseScenario(std::string_view json, std::string* error);
std::optional<Scenario> loadScenarioFile(const std::string& path, std::string* error);

}  // namespace wirewise::sim
