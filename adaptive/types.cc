// Names for the internal vocabulary. Parsing is case-insensitive and ignores '_' so that NCCL's own
// spellings ("AllReduce", "CollNetDirect", "NVLSTree") and the example tuner's ("collnet_direct") all work.
#include "adaptive/types.h"

#include <array>
#include <cinttypes>
#include <cstdio>
#include <string>

namespace wirewise {
namespace {

constexpr std::array<std::string_view, kNumCollTypes> kCollNames = {"broadcast", "reduce", "allgather",
                                                                     "reducescatter", "allreduce"};
constexpr std::array<std::string_view, kNumAlgos> kAlgoNames = {"tree", "ring", "collnet_direct", "collnet_chain",
                                                                "nvls", "nvls_tree", "pat"};
constexpr std::array<std::string_view, kNumProtos> kProtoNames = {"ll", "ll128", "simple"};

// Lower-cased, '_' removed; at most 32 characters are kept (longer input matches no name).
struct Folded {
  char buf[32];
  size_t len = 0;
  bool tooLong = false;
  explicit Folded(std::string_view s) {
    for (char c : s) {
      if (c == '_') continue;
      if (len == sizeof(buf)) {
        tooLong = true;
        return;
      }
      buf[len++] = (c >= 'A' && c <= 'Z') ? static_cast<char>(c - 'A' + 'a') : c;
    }
  }
  std::string_view view() const { return {buf, len}; }
};

bool isAnyWord(std::string_view s) {
  Folded f(s);
  return !f.tooLong && (f.view() == "-1" || f.view() == "any" || f.view() == "default");
}

template <size_t N>
int lookupName(const std::array<std::string_view, N>& names, std::string_view s) {
  if (isAnyWord(s)) return kAny;
  Folded f(s);
  if (f.tooLong) return -2;
  for (size_t i = 0; i < N; ++i) {
    if (Folded(names[i]).view() == f.view()) return static_cast<int>(i);
  }
  return -2;
}

}  // namespace

std::string_view collName(CollType c) {
  auto i = static_cast<size_t>(c);
  return i < kCollNames.size() ? kCollNames[i] : std::string_view("?");
}

std::string_view algoName(int algo) {
  if (algo == kAny) return "any";
  return algo >= 0 && algo < kNumAlgos ? kAlgoNames[static_cast<size_t>(algo)] : std::string_view("?");
}

std::string_view protoName(int proto) {
  if (proto == kAny) return "any";
  return proto >= 0 && proto < kNumProtos ? kProtoNames[static_cast<size_t>(proto)] : std::string_view("?");
}

int parseAlgo(std::string_view s) { return lookupName(kAlgoNames, s); }
int parseProto(std::string_view s) { return lookupName(kProtoNames, s); }

int parseColl(std::string_view s) {
  // "default" means nothing for a collective; only "-1" and "any" are wildcards there.
  Folded f(s);
  if (!f.tooLong && f.view() == "default") return -2;
  return lookupName(kCollNames, s);
}

double busBandwidthGBs(int coll, uint64_t bytes, uint64_t durationNs, int nRanks) noexcept {
  if (durationNs == 0 || nRanks <= 0) return 0.0;
  double n = nRanks;
  double factor;
  switch (coll) {
    case static_cast<int>(CollType::Broadcast):
    case static_cast<int>(CollType::Reduce): factor = 1.0; break;
    case static_cast<int>(CollType::AllGather):
    case static_cast<int>(CollType::ReduceScatter): factor = (n - 1) / n; break;
    case static_cast<int>(CollType::AllReduce): factor = 2 * (n - 1) / n; break;
    default: return 0.0;
  }
  // bytes per ns is GB/s (1e9 bytes per second), the unit nccl-tests prints.
  return static_cast<double>(bytes) / static_cast<double>(durationNs) * factor;
}

}  // namespace wirewise
