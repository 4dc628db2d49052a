// The scenario generator. The order of the draws is part of the output (a seed names one file), so a change
// here changes the corpus: tests pin a few seeds' files by hash. Nothing depends on which other seeds are
// generated.
#include "sim/gen/generator.h"

#include <algorithm>
#include <cstdio>
#include <initializer_list>
#include <random>
#include <vector>

#include <nlohmann/json.hpp>

#include "adaptive/types.h"
#include "sim/model/scenario.h"

namespace wirewise::sim::gen {
namespace {

using Json = nlohmann::ordered_json;
constexpr int64_t kKiB = 1024, kMiB = 1024 * 1024;

// splitmix64's finalizer: neighbouring seeds start far apart, and the generator's stream differs from the run's
// noise stream, which std::mt19937_64 seeds with the same number.
uint64_t mixSeed(uint64_t x) {
  x += 0x9e3779b97f4a7c15ULL;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}

// Integer draws written out (the standard's distributions are implementation-defined).
class Draw {
 public:
  explicit Draw(uint64_t seed) : gen_(mixSeed(seed)) {}
  // Uniform in [lo, hi], hi - lo < 2^32 (multiply-shift on the top 32 bits; the bias is far below 2^-20).
  int64_t between(int64_t lo, int64_t hi) {
    const uint64_t n = static_cast<uint64_t>(hi - lo) + 1;
    return lo + static_cast<int64_t>(((gen_() >> 32) * n) >> 32);
  }
  int between(int lo, int hi) { return static_cast<int>(between(int64_t{lo}, int64_t{hi})); }
  bool percent(int p) { return between(0, 99) < p; }
  // An index with probability weight[i] / sum (zero weights are never drawn; the sum must be positive).
  size_t weighted(std::initializer_list<int> weights) {
    int sum = 0;
    for (int w : weights) sum += w;
    int x = between(0, sum - 1);
    size_t i = 0;
    for (int w : weights) {
      if (x < w) return i;
      x -= w;
      ++i;
    }
    return weights.size() - 1;
  }
  // Log-uniform by octaves: a uniform octave [2^e, 2^(e+1)) meeting [lo, hi], then uniform inside it, rounded
  // down to a multiple of align (lo and hi multiples of align).
  int64_t size(int64_t lo, int64_t hi, int64_t align) {
    int eLo = 0, eHi = 0;
    while ((int64_t{2} << eLo) <= lo) ++eLo;
    while ((int64_t{2} << eHi) <= hi) ++eHi;
    const int e = between(eLo, eHi);
    const int64_t a = std::max(lo, int64_t{1} << e), b = std::min(hi, (int64_t{2} << e) - 1);
    return std::max(lo, between(a, b) / align * align);
  }

 private:
  std::mt19937_64 gen_;
};

struct Cluster {
  int nodes = 1, gpn = 1;
  GpuKind gpu = GpuKind::Generic;
  int nics = 1;
  double nicGbps = 50;  // exact in binary: a ladder value or an integer
  Transport transport = Transport::Ib;
  int latencyTenthsUs = 20;
  int nvlinkOverride = 0, pcieOverride = 0;  // GB/s, 0: the preset's
  bool nvlsOff = false;
  int ranks() const { return nodes * gpn; }
  bool hasNvlink() const { return nvlinkOverride > 0 || gpuPreset(gpu).nvlinkGbps > 0; }
  int nicOfGpu(int g) const { return g * nics / gpn; }
  // The GPU whose PCIe link carries NIC k's traffic (the truth model's rule: the first GPU at or past k's rail).
  int railGpu(int k) const {
    int g = 0;
    while (g + 1 < gpn && nicOfGpu(g) < k) ++g;
    return g;
  }
};

enum class Ranks : uint8_t { All, PerNode, List };

struct Comm {
  std::string name;
  Ranks kind = Ranks::All;
  std::vector<int> list;  // Ranks::List
  std::string note;       // how the description names a list ("ranks 3,11", "GPU 2 of each node")
};

struct Entry {
  std::string comm;
  CollType coll = CollType::AllReduce;
  int64_t bytes = 0;
  int repeat = 1;
  DType dtype = DType::F32;
};

struct Workload {
  std::vector<Comm> comms;
  std::vector<Entry> entries;
};

// The members of one collective instance of comm (a per-node comm: one node's GPUs) and of all its instances
// together (what the simulator plays per entry and repeat).
std::vector<int> instanceRanks(const Cluster& c, const Comm& m, int node) {
  std::vector<int> r;
  if (m.kind == Ranks::List) return m.list;
  if (m.kind == Ranks::PerNode) {
    for (int g = 0; g < c.gpn; ++g) r.push_back(node * c.gpn + g);
    return r;
  }
  for (int k = 0; k < c.ranks(); ++k) r.push_back(k);
  return r;
}
int instanceSize(const Cluster& c, const Comm& m) {
  return m.kind == Ranks::List ? static_cast<int>(m.list.size()) : m.kind == Ranks::PerNode ? c.gpn : c.ranks();
}
int playedRanks(const Cluster& c, const Comm& m) { return m.kind == Ranks::List ? instanceSize(c, m) : c.ranks(); }
bool spansNodes(const Cluster& c, const Comm& m) {
  if (m.kind == Ranks::PerNode) return false;
  if (m.kind == Ranks::All) return c.nodes > 1;
  return std::any_of(m.list.begin(), m.list.end(), [&](int r) { return r / c.gpn != m.list.front() / c.gpn; });
}
bool hasIntraPair(const Cluster& c, const Comm& m) {
  if (m.kind != Ranks::List) return c.gpn > 1;
  for (size_t i = 0; i < m.list.size(); ++i)
    for (size_t j = i + 1; j < m.list.size(); ++j)
      if (m.list[i] / c.gpn == m.list[j] / c.gpn) return true;
  return false;
}

const Comm& commNamed(const Workload& w, const std::string& name) {
  for (const Comm& m : w.comms)
    if (m.name == name) return m;
  return w.comms.front();  // unreachable: every entry names a comm added before it
}

void addComm(Workload& w, Comm m) {
  for (const Comm& x : w.comms)
    if (x.name == m.name) return;  // mixes share "world"
  w.comms.push_back(std::move(m));
}

// bytes rounded to what NCCL can be handed: whole elements, and for allgather / reducescatter (total buffer)
// a whole number of elements per rank.
int64_t fitBytes(int64_t bytes, CollType coll, DType dtype, int commSize) {
  const int64_t unit = static_cast<int64_t>(dtypeSize(dtype)) *
                       (coll == CollType::AllGather || coll == CollType::ReduceScatter ? commSize : 1);
  return std::max(unit, bytes / unit * unit);
}

void addEntry(const Cluster& c, Workload& w, const std::string& comm, CollType coll, int64_t bytes, int repeat,
              DType dtype) {
  const int size = instanceSize(c, commNamed(w, comm));
  w.entries.push_back({comm, coll, fitBytes(bytes, coll, dtype, size), repeat, dtype});
}

Comm world() { return {"world", Ranks::All, {}, ""}; }

// DDP: gradient buckets of one size (PyTorch's 25 MiB default a quarter of the time), an optional smaller last
// bucket, small all-reduces (loss, norms) and sometimes a broadcast of buffers.
void buildDdp(Draw& d, const Cluster& c, Workload& w) {
  addComm(w, world());
  const DType dt = d.percent(60) ? DType::F32 : DType::Bf16;
  const bool pytorchDefault = d.percent(25);
  const int64_t drawn = d.size(4 * kMiB, 100 * kMiB, 64 * kKiB);
  const int64_t bucket = pytorchDefault ? 25 * kMiB : drawn;
  addEntry(c, w, "world", CollType::AllReduce, bucket, d.between(4, 40), dt);
  const bool tail = d.percent(50);
  const int64_t tailBytes = d.size(kMiB, bucket, 64 * kKiB);
  if (tail) addEntry(c, w, "world", CollType::AllReduce, tailBytes, 1, dt);
  const bool small = d.percent(75);
  const int64_t smallBytes = d.size(4 * kKiB, 256 * kKiB, 256);
  const int smallRepeat = d.between(1, 8);
  if (small) addEntry(c, w, "world", CollType::AllReduce, smallBytes, smallRepeat, DType::F32);
  const bool bcast = d.percent(30);
  const int64_t bcastBytes = d.size(64 * kKiB, 4 * kMiB, 4 * kKiB);
  const int bcastRepeat = d.between(1, 2);
  if (bcast) addEntry(c, w, "world", CollType::Broadcast, bcastBytes, bcastRepeat, DType::F32);
}

// FSDP / ZeRO-3: per layer an all-gather of the parameters (again in backward half the time) and a
// reduce-scatter of the gradients, 8-256 MiB; small all-reduces for the loss.
void buildFsdp(Draw& d, const Cluster& c, Workload& w) {
  addComm(w, world());
  const DType dt = d.percent(80) ? DType::Bf16 : DType::F32;
  const int64_t shard = d.size(8 * kMiB, 256 * kMiB, kMiB);
  const int layers = d.between(2, 24);
  addEntry(c, w, "world", CollType::AllGather, shard, layers, dt);
  const bool regather = d.percent(50);
  if (regather) addEntry(c, w, "world", CollType::AllGather, shard, layers, dt);
  const bool fp32Grads = dt == DType::Bf16 && d.percent(30);
  addEntry(c, w, "world", CollType::ReduceScatter, fp32Grads ? std::min(2 * shard, 256 * kMiB) : shard, layers,
           fp32Grads ? DType::F32 : dt);
  const bool small = d.percent(60);
  const int64_t smallBytes = d.size(4 * kKiB, 64 * kKiB, 256);
  const int smallRepeat = d.between(1, 4);
  if (small) addEntry(c, w, "world", CollType::AllReduce, smallBytes, smallRepeat, DType::F32);
}

// Tensor parallel inside each node (frequent 256 KiB-16 MiB all-reduces on a per-node comm, sometimes
// sequence-parallel all-gathers), data parallel across nodes on one GPU index's group or on the world.
void buildTp(Draw& d, const Cluster& c, Workload& w) {
  addComm(w, {"tp", Ranks::PerNode, {}, ""});
  const bool dpGroup = c.nodes > 1 && d.percent(60);
  const int g = d.between(0, c.gpn - 1);
  std::string dp = "world";
  if (dpGroup) {
    Comm m{"dp", Ranks::List, {}, "GPU " + std::to_string(g) + " of each node"};
    for (int n = 0; n < c.nodes; ++n) m.list.push_back(n * c.gpn + g);
    addComm(w, std::move(m));
    dp = "dp";
  } else {
    addComm(w, world());
  }
  addEntry(c, w, "tp", CollType::AllReduce, d.size(256 * kKiB, 16 * kMiB, 4 * kKiB), d.between(16, 128),
           DType::Bf16);
  const bool seqParallel = d.percent(30);
  const int64_t agBytes = d.size(kMiB, 16 * kMiB, 4 * kKiB);
  const int agRepeat = d.between(8, 64);
  if (seqParallel) addEntry(c, w, "tp", CollType::AllGather, agBytes, agRepeat, DType::Bf16);
  addEntry(c, w, dp, CollType::AllReduce, d.size(8 * kMiB, 64 * kMiB, 64 * kKiB), d.between(1, 8), DType::F32);
}

std::string rankList(const std::vector<int>& r) {
  std::string s = "ranks ";
  for (size_t i = 0; i < r.size(); ++i) s += (i ? "," : "") + std::to_string(r[i]);
  return s;
}

// Pipeline: activations broadcast inside a stage pair (adjacent nodes, same GPU; two GPUs of the node on a single
// node), sometimes a second pair, and a data-parallel all-reduce on the world or on each node.
void buildPipeline(Draw& d, const Cluster& c, Workload& w) {
  const int g = d.between(0, c.nodes > 1 ? c.gpn - 1 : c.gpn / 2 - 1);
  const int a = d.between(0, std::max(0, c.nodes - 2));
  const bool second = c.nodes >= 3 && d.percent(40);
  Comm pp{"pp", Ranks::List, {}, ""};
  if (c.nodes > 1) {
    const int first = std::min(a, c.nodes - (second ? 3 : 2));
    pp.list = {first * c.gpn + g, (first + 1) * c.gpn + g};
  } else {
    pp.list = {g, g + c.gpn / 2};
  }
  pp.note = rankList(pp.list);
  const std::vector<int> next{pp.list[1], pp.list[1] + c.gpn};
  addComm(w, pp);
  if (second) addComm(w, {"pp2", Ranks::List, next, rankList(next)});
  const bool perNodeDp = c.gpn > 1 && d.percent(50);
  if (perNodeDp) addComm(w, {"stage", Ranks::PerNode, {}, ""});
  else addComm(w, world());
  const int64_t act = d.size(kMiB, 32 * kMiB, 64 * kKiB);
  const int micro = d.between(4, 32);
  addEntry(c, w, "pp", CollType::Broadcast, act, micro, DType::Bf16);
  if (second) addEntry(c, w, "pp2", CollType::Broadcast, act, micro, DType::Bf16);
  addEntry(c, w, perNodeDp ? "stage" : "world", CollType::AllReduce, d.size(4 * kMiB, 100 * kMiB, 64 * kKiB),
           d.between(1, 8), DType::F32);
}

// Latency-bound: 2-4 kinds of KiB-range collectives, many times a step, on the world or on each node.
void buildLatency(Draw& d, const Cluster& c, Workload& w) {
  const bool local = c.gpn > 1 && d.percent(30);
  if (local) addComm(w, {"local", Ranks::PerNode, {}, ""});
  else addComm(w, world());
  const int kinds = d.between(2, 4);
  for (int k = 0; k < kinds; ++k) {
    static constexpr CollType kColls[] = {CollType::AllReduce, CollType::Broadcast, CollType::AllGather,
                                          CollType::Reduce, CollType::ReduceScatter};
    static constexpr DType kTypes[] = {DType::F32, DType::Bf16, DType::F16, DType::F8};
    const CollType coll = kColls[d.weighted({45, 15, 15, 10, 15})];
    const DType dt = kTypes[d.weighted({50, 25, 15, 10})];
    addEntry(c, w, local ? "local" : "world", coll, d.size(kKiB, 256 * kKiB, 256), d.between(20, 200), dt);
  }
}

void build(Shape s, Draw& d, const Cluster& c, Workload& w) {
  switch (s) {
    case Shape::Ddp: buildDdp(d, c, w); break;
    case Shape::Fsdp: buildFsdp(d, c, w); break;
    case Shape::TensorParallel: buildTp(d, c, w); break;
    case Shape::Pipeline: buildPipeline(d, c, w); break;
    case Shape::Latency: buildLatency(d, c, w); break;
    case Shape::Mix: break;
  }
}

Cluster drawCluster(Draw& d) {
  Cluster c;
  static constexpr int kNodeLo[] = {1, 2, 3, 5, 9, 17}, kNodeHi[] = {1, 2, 4, 8, 16, 32};
  const size_t nb = d.weighted({12, 18, 20, 20, 16, 14});
  c.nodes = d.between(kNodeLo[nb], kNodeHi[nb]);
  c.gpn = 1 + static_cast<int>(d.weighted({8, 10, 3, 20, 2, 4, 2, 51}));
  const int single = d.between(2, 8);
  if (c.nodes == 1 && c.gpn == 1) c.gpn = single;  // one rank has nothing to communicate with
  static constexpr GpuKind kGpus[] = {GpuKind::H100Sxm, GpuKind::H200Sxm, GpuKind::A100Sxm, GpuKind::Pcie,
                                      GpuKind::Generic};
  c.gpu = kGpus[d.between(0, 4)];
  // NICs: 1..gpus (powers of two four times as likely), rail-aligned.
  const int nicWeight = [&] {
    int sum = 0;
    for (int n = 1; n <= c.gpn; ++n) sum += (n & (n - 1)) == 0 ? 4 : 1;
    return sum;
  }();
  int x = d.between(0, nicWeight - 1);
  for (int n = 1; n <= c.gpn; ++n) {
    const int wgt = (n & (n - 1)) == 0 ? 4 : 1;
    if (x < wgt) {
      c.nics = n;
      break;
    }
    x -= wgt;
  }
  static constexpr double kLadder[] = {3.125, 6.25, 12.5, 25, 50};  // 25/50/100/200/400 Gb/s
  const bool ladder = d.percent(65);
  const double onLadder = kLadder[d.between(0, 4)];
  const int integral = d.between(3, 50);
  c.nicGbps = ladder ? onLadder : integral;
  c.transport = d.percent(65) ? Transport::Ib : Transport::Socket;
  c.latencyTenthsUs = c.transport == Transport::Ib ? 5 * d.between(2, 6) : 5 * d.between(4, 20);
  const bool override = c.gpu == GpuKind::Generic && d.percent(50);
  static constexpr int kNvlink[] = {100, 150, 200, 300}, kPcie[] = {12, 24, 32, 48};
  const int nv = kNvlink[d.between(0, 3)], pc = kPcie[d.between(0, 3)];
  if (override) {
    c.nvlinkOverride = nv;
    c.pcieOverride = pc;
  }
  c.nvlsOff = gpuPreset(c.gpu).nvls && d.percent(15);
  return c;
}

std::string num(double v) {
  char b[32];
  std::snprintf(b, sizeof b, "%g", v);
  return b;
}

std::string sizeText(int64_t bytes) {
  auto unit = [&](int64_t u, const char* name) {
    const int64_t tenths = bytes * 10 / u;
    return std::to_string(tenths / 10) + (tenths % 10 ? "." + std::to_string(tenths % 10) : "") + " " + name;
  };
  if (bytes >= kMiB) return unit(kMiB, "MiB");
  if (bytes >= kKiB) return unit(kKiB, "KiB");
  return std::to_string(bytes) + " B";
}

struct FaultDraw {
  FaultKind kind = FaultKind::Degrade;
  LinkKind link = LinkKind::Nic;
  int node = kAllIndex, index = kAllIndex;
  int factorPct = 100;
  int flows = 0, addUs = 0, period = 0, ramp = 0, levels = 0;
  int from = 0, to = kUntilEnd;  // to: kUntilEnd or < steps
};

// Each level of a ramp is one more link state for which the driver evaluates the truth model on every candidate,
// and that evaluation grows faster than the ranks; big clusters get coarser ramps (kDefaultRampLevels at most).
int rampLevelCap(const Cluster& c) {
  const int r = c.ranks();
  return r <= 32 ? kDefaultRampLevels : r <= 64 ? 16 : r <= 128 ? 8 : 4;
}

std::string faultText(const FaultDraw& f) {
  std::string s = std::string(faultKindName(f.kind)) + " " + std::string(linkKindName(f.link));
  if (f.link != LinkKind::Net) {
    s += " n" + (f.node == kAllIndex ? std::string("*") : std::to_string(f.node)) + "#" +
         (f.index == kAllIndex ? std::string("*") : std::to_string(f.index));
  }
  const std::string factor = "x" + num(f.factorPct / 100.0);
  switch (f.kind) {
    case FaultKind::Degrade: s += " " + factor; break;
    case FaultKind::Flap: s += " " + factor + " p=" + std::to_string(f.period); break;
    case FaultKind::Ramp:
      s += " " + factor + " over " + std::to_string(f.ramp) + " in " + std::to_string(f.levels);
      break;
    case FaultKind::Contention: s += " " + std::to_string(f.flows) + " flows"; break;
    case FaultKind::Latency: s += " +" + std::to_string(f.addUs) + "us"; break;
  }
  return s + " @" + std::to_string(f.from) + "-" + (f.to == kUntilEnd ? "end" : std::to_string(f.to));
}

// Faults only on links the workload uses: NICs and the GPU<->NIC PCIe when a comm spans nodes, NVLink when a comm
// has two GPUs on one node and the box has NVLink, PCIe peer traffic when it has none. The target is a member of
// a comm that crosses that link, so the fault matters; "*" for the node or the index now and then.
std::vector<FaultDraw> drawFaults(Draw& d, const Cluster& c, const Workload& w, int steps) {
  const int count = static_cast<int>(d.weighted({24, 36, 24, 16}));
  std::vector<const Comm*> inter, intra;
  for (const Comm& m : w.comms) {
    if (spansNodes(c, m)) inter.push_back(&m);
    if (hasIntraPair(c, m)) intra.push_back(&m);
  }
  const bool nicOk = !inter.empty(), nvlinkOk = !intra.empty() && c.hasNvlink();
  const bool pcieOk = nicOk || (!intra.empty() && !c.hasNvlink());
  std::vector<FaultDraw> out;
  for (int i = 0; i < count; ++i) {
    FaultDraw f;
    static constexpr FaultKind kKinds[] = {FaultKind::Degrade, FaultKind::Ramp, FaultKind::Flap,
                                           FaultKind::Contention, FaultKind::Latency};
    f.kind = kKinds[d.weighted({20, 18, 18, 22, 22})];
    static constexpr LinkKind kLinks[] = {LinkKind::Nic, LinkKind::Nvlink, LinkKind::Pcie};
    f.link = kLinks[d.weighted({nicOk ? 45 : 0, nvlinkOk ? 30 : 0, pcieOk ? 25 : 0})];
    const bool wholeNet = f.kind == FaultKind::Latency && nicOk && d.percent(65);
    // A member of a comm that crosses the link.
    const bool peerPcie = f.link == LinkKind::Pcie && !c.hasNvlink() && !intra.empty();
    const std::vector<const Comm*>& users = f.link == LinkKind::Nvlink || peerPcie ? intra : inter;
    const Comm& m = *users[static_cast<size_t>(d.between(0, static_cast<int>(users.size()) - 1))];
    const std::vector<int> members = instanceRanks(c, m, d.between(0, c.nodes - 1));
    const int r = members[static_cast<size_t>(d.between(0, static_cast<int>(members.size()) - 1))];
    const bool anyNode = d.percent(15), anyIndex = d.percent(20), railNic = d.percent(70);
    const int otherNic = d.between(0, c.nics - 1);
    if (wholeNet) {
      f.link = LinkKind::Net;
    } else {
      f.node = anyNode ? kAllIndex : r / c.gpn;
      const int gpu = r % c.gpn;
      const int nic = railNic ? c.nicOfGpu(gpu) : otherNic;
      // PCIe carries peer traffic without NVLink; with it, only the NIC traffic of the NIC's rail GPU.
      const int target = f.link == LinkKind::Nic ? nic : f.link == LinkKind::Pcie && !peerPcie ? c.railGpu(nic) : gpu;
      f.index = anyIndex ? kAllIndex : target;
    }
    // Onset: anywhere leaving 45 steps after it, or inside an earlier fault's span (overlap) half the time.
    const bool overlap = !out.empty() && d.percent(50);
    const FaultDraw& prev = out.empty() ? f : out[static_cast<size_t>(d.between(0, static_cast<int>(out.size()) - 1))];
    const int free = d.between(15, steps - 45);
    if (overlap) {
      const int prevEnd = prev.to == kUntilEnd ? steps : prev.to;
      f.from = d.between(prev.from, std::max(prev.from, std::min(prevEnd - 1, steps - 45)));
    } else {
      f.from = free;
    }
    const bool toEnd = d.percent(45);
    const int length = d.between(40, steps - f.from);
    f.to = toEnd || f.from + length >= steps ? kUntilEnd : f.from + length;
    const int window = (f.to == kUntilEnd ? steps : f.to) - f.from;
    f.factorPct = d.between(10, 90);
    f.flows = d.between(1, 16);
    f.addUs = d.between(5, 100);
    static constexpr int kPeriodLo[] = {2, 6, 21}, kPeriodHi[] = {5, 20, 100};
    const size_t pb = d.weighted({30, 40, 30});
    f.period = std::min(d.between(kPeriodLo[pb], kPeriodHi[pb]), window / 2);
    f.ramp = d.between(5, std::min(100, window - 20));
    f.levels = std::min(f.ramp, rampLevelCap(c));
    out.push_back(f);
  }
  return out;
}

Json faultJson(const FaultDraw& f) {
  Json j;
  j["kind"] = faultKindName(f.kind);
  j["link"] = linkKindName(f.link);
  if (f.link != LinkKind::Net) {
    if (f.node == kAllIndex) j["node"] = "*";
    else j["node"] = f.node;
    if (f.index == kAllIndex) j["index"] = "*";
    else j["index"] = f.index;
  }
  switch (f.kind) {
    case FaultKind::Degrade: j["factor"] = f.factorPct / 100.0; break;
    case FaultKind::Flap:
      j["factor"] = f.factorPct / 100.0;
      j["period_steps"] = f.period;
      break;
    case FaultKind::Ramp:
      j["factor"] = f.factorPct / 100.0;
      j["ramp_steps"] = f.ramp;
      j["levels"] = f.levels;
      break;
    case FaultKind::Contention: j["flows"] = f.flows; break;
    case FaultKind::Latency: j["add_us"] = f.addUs; break;
  }
  j["from_step"] = f.from;
  if (f.to != kUntilEnd) j["to_step"] = f.to;
  return j;
}

std::string commText(const Comm& m) {
  return m.name + " " + (m.kind == Ranks::PerNode ? "per-node" : m.kind == Ranks::All ? "all" : m.note);
}

}  // namespace

std::string_view shapeName(Shape shape) {
  switch (shape) {
    case Shape::Ddp: return "ddp";
    case Shape::Fsdp: return "fsdp";
    case Shape::TensorParallel: return "tp";
    case Shape::Pipeline: return "pipeline";
    case Shape::Latency: return "latency";
    case Shape::Mix: break;
  }
  return "mix";
}

Generated generateScenario(uint64_t seed) {
  Draw d(seed);
  Generated g;
  g.name = "gen-" + std::to_string(seed);
  const Cluster c = drawCluster(d);
  const int tpWeight = c.gpn > 1 ? 18 : 0;
  static constexpr Shape kShapes[] = {Shape::Ddp, Shape::Fsdp, Shape::TensorParallel, Shape::Pipeline,
                                      Shape::Latency, Shape::Mix};
  g.shape = kShapes[d.weighted({20, 17, tpWeight, 15, 12, 18})];
  Workload w;
  std::string shapeText(shapeName(g.shape));
  if (g.shape == Shape::Mix) {
    // Two or three different shapes, in the order drawn.
    const int parts = d.percent(30) ? 3 : 2;
    std::vector<Shape> used;
    while (static_cast<int>(used.size()) < parts) {
      const Shape s = kShapes[d.weighted({20, 17, tpWeight, 15, 12, 0})];
      if (std::find(used.begin(), used.end(), s) != used.end()) continue;
      used.push_back(s);
      build(s, d, c, w);
    }
    shapeText += "(";
    for (size_t i = 0; i < used.size(); ++i) shapeText += (i ? "+" : "") + std::string(shapeName(used[i]));
    shapeText += ")";
  } else {
    build(g.shape, d, c, w);
  }
  const int steps = d.between(150, 400);
  const bool compute = d.percent(75);
  const int computeUs = 250 * d.between(4, 200);

  // Scale the repeats down (never below 1) until the run fits the budget: big clusters keep their shape and
  // faults and play fewer collectives per step.
  int64_t cost = 0;
  for (const Entry& e : w.entries) cost += int64_t{e.repeat} * playedRanks(c, commNamed(w, e.comm));
  cost *= steps;
  if (cost > kRankCollectiveBudget)
    for (Entry& e : w.entries)
      e.repeat = static_cast<int>(std::max<int64_t>(1, e.repeat * kRankCollectiveBudget / cost));

  const std::vector<FaultDraw> faults = drawFaults(d, c, w, steps);
  const int jitterHalfPct = d.percent(80) ? d.between(1, 16) : 0;  // 0.5% .. 8%
  const bool stragglers = d.percent(30);
  const int stragglerPermille = d.between(1, 20);
  const int stragglerUs = 50 * d.between(2, 40);

  // Description: cluster; workload; faults; noise.
  std::string desc = std::to_string(c.nodes) + "x" + std::to_string(c.gpn) + " " +
                     std::string(gpuKindName(c.gpu)) + " " + std::string(transportName(c.transport)) + " " +
                     std::to_string(c.nics) + (c.nics == 1 ? " NIC" : " NICs") + " x " + num(c.nicGbps) + " GB/s";
  if (c.nvlinkOverride > 0)
    desc += " (NVLink " + std::to_string(c.nvlinkOverride) + ", PCIe " + std::to_string(c.pcieOverride) + " GB/s)";
  if (c.nvlsOff) desc += " no NVLS";
  desc += "; " + shapeText + ":";
  for (size_t i = 0; i < w.entries.size(); ++i) {
    const Entry& e = w.entries[i];
    desc += std::string(i ? ", " : " ") + e.comm + " " + std::string(collName(e.coll)) + " " + sizeText(e.bytes) +
            " x" + std::to_string(e.repeat);
  }
  desc += " (";
  for (size_t i = 0; i < w.comms.size(); ++i) desc += (i ? ", " : "") + commText(w.comms[i]);
  desc += ")";
  desc += "; " + std::to_string(steps) + " steps";
  if (compute) desc += ", compute " + num(computeUs / 1000.0) + " ms";
  desc += "; ";
  if (faults.empty()) desc += "no faults";
  for (size_t i = 0; i < faults.size(); ++i) desc += (i ? " + " : "") + faultText(faults[i]);
  desc += jitterHalfPct == 0 ? "; no jitter"
                              : "; jitter " + std::to_string(jitterHalfPct / 2) + (jitterHalfPct % 2 ? ".5" : "") + "%";
  if (stragglers) desc += ", stragglers " + num(stragglerPermille / 10.0) + "% x " + std::to_string(stragglerUs) + "us";

  Json j;
  j["name"] = g.name;
  j["description"] = desc;
  j["seed"] = seed;
  Json& cl = j["cluster"];
  cl["nodes"] = c.nodes;
  cl["gpus_per_node"] = c.gpn;
  cl["gpu"] = gpuKindName(c.gpu);
  if (c.nvlinkOverride > 0) cl["nvlink_gbps"] = c.nvlinkOverride;
  if (c.pcieOverride > 0) cl["pcie_gbps"] = c.pcieOverride;
  if (c.nvlsOff) cl["nvls"] = false;
  cl["nics_per_node"] = c.nics;
  cl["nic_gbps"] = c.nicGbps;
  cl["net_latency_us"] = c.latencyTenthsUs / 10.0;
  cl["transport"] = transportName(c.transport);
  Json& comms = j["comms"] = Json::array();
  for (const Comm& m : w.comms) {
    Json cj;
    cj["name"] = m.name;
    if (m.kind == Ranks::All) cj["ranks"] = "all";
    else if (m.kind == Ranks::PerNode) cj["ranks"] = "per-node";
    else cj["ranks"] = m.list;
    comms.push_back(std::move(cj));
  }
  Json& wl = j["workload"];
  wl["steps"] = steps;
  wl["compute_us"] = compute ? computeUs : 0;
  Json& step = wl["step"] = Json::array();
  for (const Entry& e : w.entries) {
    step.push_back({{"comm", e.comm}, {"coll", collName(e.coll)}, {"bytes", e.bytes}, {"repeat", e.repeat},
                    {"dtype", dtypeName(e.dtype)}});
  }
  Json& fj = j["faults"] = Json::array();
  for (const FaultDraw& f : faults) fj.push_back(faultJson(f));
  Json& nj = j["noise"];
  nj["jitter"] = jitterHalfPct / 200.0;
  if (stragglers) {
    nj["straggler_prob"] = stragglerPermille / 1000.0;
    nj["straggler_us"] = stragglerUs;
  }
  g.json = j.dump(2) + "\n";
  return g;
}

}  // namespace wirewise::sim::gen
