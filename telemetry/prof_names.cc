// NCCL's static strings, as v2.28.9 prints them (src/collectives.cc: ncclFuncToString,
// ncclDatatypeToString, ncclAlgoToString, ncclProtoToString), mapped to our indices.
#include <atomic>
#include <cstdint>
#include <cstring>
#include <string>

#include "adaptive/types.h"
#include "telemetry/event_sink.h"

namespace wirewise {
namespace {

struct NameValue {
  const char* name;
  int value;
  size_t len = std::char_traits<char>::length(name);
};

char lowerAscii(char c) { return c >= 'A' && c <= 'Z' ? static_cast<char>(c - 'A' + 'a') : c; }

// The full lookup: entries of another length are skipped, NCCL's own spelling matches exactly (memcmp),
// and only other spellings take the case-folding loop.
template <size_t N>
int lookup(const NameValue (&table)[N], const char* name) noexcept {
  if (name == nullptr) return -1;
  const size_t len = std::strlen(name);
  for (const NameValue& nv : table)
    if (nv.len == len && std::memcmp(nv.name, name, len) == 0) return nv.value;
  for (const NameValue& nv : table) {
    if (nv.len != len) continue;
    size_t i = 0;
    while (i < len && lowerAscii(nv.name[i]) == lowerAscii(name[i])) ++i;
    if (i == len) return nv.value;
  }
  return -1;
}

// Four lookups for every collective, when EventSink::drain turns its record into a sample (on the
// runtime's thread, not NCCL's, but once per collective all the same): NCCL passes its own string literals
// (ncclFuncToString, ncclDatatypeToString, ncclAlgoToString, ncclProtoToString), so the same pointer
// always names the same string and a pointer seen before needs no compare. Each table has a small
// direct-mapped cache of the pointers it has resolved, one word per entry (the pointer's 48 bits above
// the value), so that concurrent readers and writers never see half an entry; a miss, or a pointer above
// 2^48, takes the full lookup and caches its answer. Process-wide: every communicator sees NCCL's strings.
class PointerCache {
 public:
  template <size_t N>
  int resolve(const NameValue (&table)[N], const char* name) noexcept {
    const uintptr_t p = reinterpret_cast<uintptr_t>(name);
    std::atomic<uint64_t>& e = entries_[((p >> 3) ^ (p >> 9)) & (kEntries - 1)];
    const uint64_t v = e.load(std::memory_order_relaxed);
    if (p != 0 && (v >> 16) == p) return static_cast<int>(v & 0xffff) - 1;
    const int value = lookup(table, name);
    if (p != 0 && p < (uintptr_t{1} << 48))
      e.store((uint64_t{p} << 16) | static_cast<uint16_t>(value + 1), std::memory_order_relaxed);
    return value;
  }

 private:
  static constexpr size_t kEntries = 16;
  std::atomic<uint64_t> entries_[kEntries] = {};
};

PointerCache gDatatypes, gAlgos, gProtos, gColls;

// ncclUint8 is listed although 2.28.9 prints it as "Unknown": a later NCCL may fix that.
constexpr NameValue kDatatypes[] = {
    {"ncclInt8", 1},     {"ncclUint8", 1},   {"ncclInt32", 4},      {"ncclUint32", 4},
    {"ncclInt64", 8},    {"ncclUint64", 8},  {"ncclFloat16", 2},    {"ncclFloat32", 4},
    {"ncclFloat64", 8},  {"ncclBfloat16", 2}, {"ncclFloat8e4m3", 1}, {"ncclFloat8e5m2", 1},
};
constexpr NameValue kAlgos[] = {
    {"TREE", kAlgoTree}, {"RING", kAlgoRing}, {"COLLNET_DIRECT", kAlgoCollNetDirect},
    {"COLLNET_CHAIN", kAlgoCollNetChain}, {"NVLS", kAlgoNvls}, {"NVLS_TREE", kAlgoNvlsTree}, {"PAT", kAlgoPat},
};
constexpr NameValue kProtos[] = {{"LL", kProtoLL}, {"LL128", kProtoLL128}, {"SIMPLE", kProtoSimple}};
constexpr NameValue kColls[] = {
    {"Broadcast", static_cast<int>(CollType::Broadcast)},
    {"Reduce", static_cast<int>(CollType::Reduce)},
    {"AllGather", static_cast<int>(CollType::AllGather)},
    {"ReduceScatter", static_cast<int>(CollType::ReduceScatter)},
    {"AllReduce", static_cast<int>(CollType::AllReduce)},
};

}  // namespace

int datatypeSize(const char* name) noexcept {
  int v = gDatatypes.resolve(kDatatypes, name);
  return v < 0 ? 0 : v;
}
int algoIndexFromName(const char* name) noexcept { return gAlgos.resolve(kAlgos, name); }
int protoIndexFromName(const char* name) noexcept { return gProtos.resolve(kProtos, name); }
int collIndexFromName(const char* name) noexcept { return gColls.resolve(kColls, name); }

}  // namespace wirewise
