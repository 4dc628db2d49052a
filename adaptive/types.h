// Internal vocabulary shared by every part of wirewise. Nothing here knows NCCL's structs: the plugin
// shims convert into these types at once (plugin/), and everything else speaks only these.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace wirewise {

// Values equal NCCL's ncclFunc_t 0..4, the only collectives NCCL 2.28 ever hands a tuner.
enum class CollType : uint8_t { Broadcast = 0, Reduce = 1, AllGather = 2, ReduceScatter = 3, AllReduce = 4 };
inline constexpr int kNumCollTypes = 5;

// Indices into NCCL's cost table (NCCL_ALGO_* / NCCL_PROTO_*).
inline constexpr int kNumAlgos = 7;
inline constexpr int kNumProtos = 3;
inline constexpr int kAlgoTree = 0, kAlgoRing = 1, kAlgoCollNetDirect = 2, kAlgoCollNetChain = 3, kAlgoNvls = 4,
                     kAlgoNvlsTree = 5, kAlgoPat = 6;
inline constexpr int kProtoLL = 0, kProtoLL128 = 1, kProtoSimple = 2;
inline constexpr int kAny = -1;  // "not constrained": keep NCCL's choice for this dimension

// NCCL's MAXCHANNELS. nChannels travels in a signed 8-bit bitfield inside NCCL, so never exceed this.
inline constexpr int kMaxChannels = 64;

// The largest chunk a table may ask for. NCCL clamps an answer to its buffer's step (at most a few MiB) and
// casts it to int; 1 GiB keeps every value far inside both.
inline constexpr uint32_t kMaxChunkBytes = 1u << 30;

// NCCL's ncclProtoGrainSize (device.h): the unit NCCL rounds a chunk size down to. LL128's is 32 threads x 8
// elements per thread / 16 per line x 15 data elements x 8 bytes.
constexpr uint32_t protoGrainBytes(int proto) {
  return proto == kProtoLL ? 16u : proto == kProtoLL128 ? 1920u : proto == kProtoSimple ? 512u : 0u;
}

// What one table cell asks NCCL to run. algo/proto kAny mean "keep NCCL's"; nChannels 0 and chunkBytes 0
// mean "keep NCCL's". chunkBytes is the pipelining grain NCCL 2.30+ asks tuner v6+ for (getChunkSize):
// older NCCL never asks, and then only the rest of the decision applies.
struct Decision {
  int8_t algo = kAny;
  int8_t proto = kAny;
  int8_t nChannels = 0;
  uint32_t chunkBytes = 0;
  bool keepsNccl() const { return keepsCostTable() && chunkBytes == 0; }
  // Nothing for getCollInfo to do (a chunk size alone is getChunkSize's).
  bool keepsCostTable() const { return algo == kAny && proto == kAny && nChannels == 0; }
  friend bool operator==(const Decision&, const Decision&) = default;
};

// One getCollInfo call, already converted from NCCL's arguments. NCCL's numPipeOps and regBuff are left
// behind in the shims: both are rank-local, so no decision may depend on them (a rank that chose
// differently would hang the job). 16 bytes, so that it travels in two registers.
struct CollRequest {
  int collType = 0;  // raw value from NCCL; validated by the core, never trusted
  // False for tuner v2, whose cost table the shim has to invent: then only fully specified
  // (algorithm, protocol) decisions apply, never "cheapest of ..." ones.
  bool costsKnown = true;
  uint64_t nBytes = 0;
};

// NCCL's cost table: a flat float[numAlgo][numProto] (µs) that NCCL passes cast to float**.
// Entries equal to -1.0 are disabled combinations that must never be enabled.
class CostTableView {
 public:
  CostTableView(float* cells, int numAlgo, int numProto) : cells_(cells), numAlgo_(numAlgo), numProto_(numProto) {}
  bool valid() const { return cells_ != nullptr && std::min(numAlgo_, numProto_) > 0; }
  int numAlgo() const { return numAlgo_; }
  int numProto() const { return numProto_; }
  bool inRange(int a, int p) const { return a >= 0 && p >= 0 && a < numAlgo_ && p < numProto_; }
  // NCCL's own eligibility rule: >= 0 and < 3.6e9 (and not the -1.0 marker).
  bool enabled(int a, int p) const {
    if (!inRange(a, p)) return false;
    float v = cells_[a * numProto_ + p];
    return v >= 0.0f && v < kExcluded;
  }
  float get(int a, int p) const { return cells_[a * numProto_ + p]; }
  float* data() const { return cells_; }  // row-major, numAlgo x numProto
  void set(int a, int p, float v) { cells_[a * numProto_ + p] = v; }
  static constexpr float kExcluded = 3.6e9f;

 private:
  float* cells_;
  int numAlgo_;
  int numProto_;
};

std::string_view collName(CollType c);      // "allreduce", ...
std::string_view algoName(int algo);        // "ring", ...; "any" for kAny; "?" otherwise
std::string_view protoName(int proto);      // "simple", ...
int parseAlgo(std::string_view s);          // case-insensitive NCCL names; kAny for "-1"/"any"/"default"; -2 bad
int parseProto(std::string_view s);         // same convention
int parseColl(std::string_view s);
// nccl-tests' bus bandwidth in GB/s (bytes per ns) for nRanks ranks: factor AllReduce 2(n-1)/n;
// AllGather, ReduceScatter (n-1)/n; Broadcast, Reduce 1. `bytes` is what the tuner saw (for
// AllGather/ReduceScatter the total buffer). 0 for an unknown collective, no time or no ranks.
double busBandwidthGBs(int coll, uint64_t bytes, uint64_t durationNs, int nRanks) noexcept;

}  // namespace wirewise
