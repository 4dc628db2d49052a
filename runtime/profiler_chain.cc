#include "runtime/profiler_chain.h"

#include <dlfcn.h>
#include <link.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <mutex>
#include <vector>

#include "common/units.h"
#include "runtime/log.h"

namespace wirewise::chain {
namespace {

std::atomic<int> gPid{0};
std::atomic<uint64_t> gUnforwarded{0};

// One library per distinct WIREWISE_PROFILER_CHAIN value, opened once and never closed: NCCL may init
// further comms at any time, and a chained plugin's code must outlive every handle it issued. The runtime
// re-reads its settings when its last comm is gone, so a process may meet more than one value (tests do).
struct ChainLibrary {
  std::string value;
  void* handle = nullptr;
  std::string failure;  // why it cannot be chained ("" when it can): WARNed once
  int mask = 0;         // the chained plugin's eActivationMask: one int for all its comms, as NCCL's is
  ChainedFace faces[3];  // v4, v5, v6
  std::string faceFailure[3];
  bool faceLooked[3] = {false, false, false};
  bool initWarned = false;
};

std::mutex gMu;
// Leaked on purpose: chained handles may be stopped during exit, after static destructors.
std::vector<ChainLibrary*>& libraries() {
  static auto* libs = new std::vector<ChainLibrary*>;
  return *libs;
}

bool endsWith(const std::string& s, const char* suffix) {
  const size_t n = std::strlen(suffix);
  return s.size() >= n && s.compare(s.size() - n, n, suffix) == 0;
}

// NCCL's resolution (nccl-abi.md §2): the value as given, then, unless it is a path or a library file
// name, libnccl-profiler-<value>.so. RTLD_LOCAL: the chained plugin's symbols must not meet ours.
void openLibrary(ChainLibrary& lib) {
  std::vector<std::string> names{lib.value};
  const bool isPath = lib.value.find('/') != std::string::npos;
  if (!isPath && !endsWith(lib.value, ".so")) names.push_back("libnccl-profiler-" + lib.value + ".so");
  std::string errors;
  for (const std::string& name : names) {
    lib.handle = dlopen(name.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (lib.handle != nullptr) return;
    const char* e = dlerror();
    errors += (errors.empty() ? "" : "; ") + std::string(e != nullptr ? e : name + ": cannot be opened");
  }
  lib.failure = "cannot be opened (" + errors + ")";
}

// The ncclProfiler_vN symbols a library exports, for the WARN that names what it has and what is needed.
std::string exportedVersions(void* handle) {
  std::string out;
  for (int v = 6; v >= 1; --v) {
    const std::string sym = "ncclProfiler_v" + std::to_string(v);
    if (dlsym(handle, sym.c_str()) != nullptr) out += (out.empty() ? "" : ", ") + sym;
  }
  return out.empty() ? "no ncclProfiler_vN symbol" : out;
}

// The load address of the object whose segments hold p, or -1 if none does. dl_iterate_phdr rather than
// dladdr: glibc 2.34 gave dladdr a new symbol version, above the shipped library's floor
// (plugin/glibc_floor.c), while dl_iterate_phdr has kept its first.
uintptr_t objectBase(const void* p) {
  struct Query {
    uintptr_t address;
    uintptr_t base = ~uintptr_t{0};
  } q{reinterpret_cast<uintptr_t>(p)};
  dl_iterate_phdr(
      [](dl_phdr_info* info, size_t, void* data) -> int {
        auto* query = static_cast<Query*>(data);
        for (int i = 0; i < info->dlpi_phnum; ++i) {
          const ElfW(Phdr)& ph = info->dlpi_phdr[i];
          const uintptr_t lo = info->dlpi_addr + ph.p_vaddr;
          if (ph.p_type == PT_LOAD && query->address >= lo && query->address < lo + ph.p_memsz) {
            query->base = info->dlpi_addr;
            return 1;
          }
        }
        return 0;
      },
      &q);
  return q.base;
}

template <class Table>
void fillFace(ChainedFace& f, int version, const void* symbol, int* mask) {
  const auto* t = static_cast<const Table*>(symbol);
  f.version = version;
  f.table = symbol;
  f.name = t->name != nullptr ? t->name : "(unnamed)";
  f.mask = mask;
  f.stop = t->stopEvent;
  f.record = t->recordEventState;
  f.finalize = t->finalize;
}

// Looks up the face for one ABI version once; the caller holds gMu.
const ChainedFace* faceOf(ChainLibrary& lib, int version) {
  const int i = version - 4;
  if (i < 0 || i > 2) return nullptr;
  if (!lib.faceLooked[i]) {
    lib.faceLooked[i] = true;
    const std::string sym = "ncclProfiler_v" + std::to_string(version);
    const void* s = dlsym(lib.handle, sym.c_str());
    if (s == nullptr) {
      lib.faceFailure[i] = "exports " + exportedVersions(lib.handle) + ", but NCCL uses wirewise's v" +
                           std::to_string(version) + " face, so it needs " + sym;
    } else if (objectBase(s) != ~uintptr_t{0} &&
               objectBase(s) == objectBase(reinterpret_cast<const void*>(&openChain))) {
      // Chaining to ourselves would forward every event back to us, for ever.
      lib.faceFailure[i] = "is wirewise itself";
    } else {
      const char* name = *static_cast<const char* const*>(s);
      if (name != nullptr && std::strcmp(name, "wirewise") == 0)
        lib.faceFailure[i] = "is another copy of wirewise";  // its own chain setting is ours: it would recurse
      else if (version == 4)
        fillFace<ncclProfiler_v4_t>(lib.faces[i], 4, s, &lib.mask);
      else if (version == 5)
        fillFace<ncclProfiler_v5_t>(lib.faces[i], 5, s, &lib.mask);
      else
        fillFace<ncclProfiler_v6_t>(lib.faces[i], 6, s, &lib.mask);
    }
    if (!lib.faceFailure[i].empty())
      WW_WARN(NCCL_INIT | NCCL_PROFILE, "WIREWISE_PROFILER_CHAIN=%s %s; not chained", lib.value.c_str(),
              lib.faceFailure[i].c_str());
  }
  return lib.faceFailure[i].empty() ? &lib.faces[i] : nullptr;
}

// The library for a value, opened at its first use; null (WARNed once) when it cannot be opened.
ChainLibrary* libraryOf(const std::string& value) {
  for (ChainLibrary* lib : libraries())
    if (lib->value == value) return lib->failure.empty() ? lib : nullptr;
  auto* lib = new ChainLibrary;
  lib->value = value;
  libraries().push_back(lib);
  openLibrary(*lib);
  if (!lib->failure.empty()) {
    WW_WARN(NCCL_INIT | NCCL_PROFILE, "WIREWISE_PROFILER_CHAIN=%s %s; not chained", value.c_str(),
            lib->failure.c_str());
    return nullptr;
  }
  return lib;
}

// The chained plugin's init; a C++ exception thrown across its C ABI is undefined behaviour, caught anyway.
ncclResult_t initFace(const ChainedFace& f, void** ctx, const ProfilerInitArgs& a) {
  try {
    if (f.version == 4)
      return static_cast<const ncclProfiler_v4_t*>(f.table)->init(ctx, f.mask, a.commName, a.commId, a.nNodes,
                                                                   a.nRanks, a.rank, a.logger);
    if (f.version == 5)
      return static_cast<const ncclProfiler_v5_t*>(f.table)->init(ctx, a.commId, f.mask, a.commName, a.nNodes,
                                                                   a.nRanks, a.rank, a.logger);
    return static_cast<const ncclProfiler_v6_t*>(f.table)->init(ctx, a.commId, f.mask, a.commName, a.nNodes,
                                                                 a.nRanks, a.rank, a.logger);
  } catch (...) {
    return ncclInternalError;
  }
}

// Slots per comm: a power of two, at least 2 (one per lane), at most 65,536 (8 MiB), whatever
// WIREWISE_EVENT_POOL says.
uint32_t slotCount(size_t n) {
  uint32_t p = 2;
  while (p < n && p < (1u << 16)) p <<= 1;
  return p;
}

}  // namespace

ChainComm::ChainComm(const ChainedFace* face, void* ownContext, uint64_t ourMask, size_t poolSize)
    : face_(face), ownContext_(ownContext), ourMask_(ourMask), nSlots_(slotCount(poolSize)),
      slots_(new ChainSlot[nSlots_]) {
  for (uint32_t i = 0; i < nSlots_; ++i) {
    slots_[i].head.type = kChainSlotType;
    slots_[i].head.owner = this;
    slots_[i].head.index = i;
  }
}

ChainSlot* ChainComm::claim(uint64_t type) noexcept {
  const int lane = laneOf(type);
  const uint32_t half = nSlots_ / 2;
  ChainSlot* ring = &slots_[lane * half];
  const uint64_t k = cursor_[lane].fetch_add(1, std::memory_order_relaxed);
  for (uint32_t i = 0; i < std::min(kProbe, half); ++i) {
    ChainSlot* s = &ring[(k + i) & (half - 1)];
    uint32_t g = s->gen.load(std::memory_order_relaxed);
    if ((g & 1) == 0 &&
        s->gen.compare_exchange_strong(g, g + 1, std::memory_order_acquire, std::memory_order_relaxed)) {
      // Seqlock writer: the new generation is visible before the handles it is about to overwrite change.
      std::atomic_thread_fence(std::memory_order_release);
      return s;
    }
  }
  poolFull_.fetch_add(1, std::memory_order_relaxed);
  return nullptr;
}

void* ChainComm::publish(ChainSlot* s, void* ours, void* theirs) noexcept {
  const uint32_t g = s->gen.load(std::memory_order_relaxed);
  if (theirs == nullptr) {
    s->gen.store(g + 1, std::memory_order_release);  // never handed out: free at once
    return ours;
  }
  s->ours.store(ours, std::memory_order_relaxed);
  s->theirs.store(theirs, std::memory_order_relaxed);
  return slot_tag::tagged(s, g);
}

bool readParent(ChainSlot* s, void* handle, void** ours, void** theirs) noexcept {
  const uint32_t tag = slot_tag::tagOfHandle(handle);
  // Its own life (live) or the end of it (stopped): either way the handles are still the parent's.
  auto ofThisLife = [tag](uint32_t g) { return slot_tag::tagOf(g) == tag || slot_tag::tagOf(g) == slot_tag::tagOf(tag + 1); };
  if (!ofThisLife(s->gen.load(std::memory_order_acquire))) return false;
  void* o = s->ours.load(std::memory_order_relaxed);
  void* t = s->theirs.load(std::memory_order_relaxed);
  std::atomic_thread_fence(std::memory_order_acquire);
  if (!ofThisLife(s->gen.load(std::memory_order_relaxed))) return false;  // claimed again while read
  *ours = o;
  *theirs = t;
  return true;
}

int processId() noexcept { return gPid.load(std::memory_order_relaxed); }
void countUnforwarded() noexcept { gUnforwarded.fetch_add(1, std::memory_order_relaxed); }

std::unique_ptr<ChainComm> openChain(const std::string& value, const ProfilerInitArgs& args, void* ownContext,
                                     uint64_t ourMask, size_t poolSize, uint64_t* extraMask) noexcept {
  *extraMask = 0;
  if (value.empty()) return nullptr;
  try {
    gPid.store(static_cast<int>(getpid()), std::memory_order_relaxed);
    // Held across the chained init too: NCCL's own loader serialises plugin init the same way, and it
    // keeps the per-library warnings to one.
    std::lock_guard<std::mutex> lock(gMu);
    ChainLibrary* lib = libraryOf(value);
    const ChainedFace* face = lib != nullptr ? faceOf(*lib, args.abiVersion) : nullptr;
    if (face == nullptr) return nullptr;
    auto comm = std::make_unique<ChainComm>(face, ownContext, ourMask, poolSize);
    if (!slot_tag::taggable(comm->slot(0), comm->poolSize())) {  // never seen without an mmap hint
      WW_WARN(NCCL_INIT | NCCL_PROFILE, "comm %s: chain slots above 2^48 cannot carry tags; not chained",
              hexId(args.commId).c_str());
      return nullptr;
    }
    void* theirs = nullptr;
    const ncclResult_t rc = initFace(*face, &theirs, args);
    // Whatever this comm's outcome, NCCL's one mask must keep asking for the types the plugin's other
    // comms were promised.
    *extraMask = face->maskNow();
    if (rc != ncclSuccess) {
      if (!lib->initWarned)
        WW_WARN(NCCL_INIT | NCCL_PROFILE,
                "chained profiler %s (%s) init failed with error %d for comm %s; this comm goes on without it "
                "(later failures are not warned)",
                face->name, value.c_str(), static_cast<int>(rc), hexId(args.commId).c_str());
      lib->initWarned = true;
      return nullptr;
    }
    comm->setTheirContext(theirs);
    WW_INFO(NCCL_INIT | NCCL_PROFILE, "comm %s: chained profiler %s (%s, v%d), %u forwarding slots",
            hexId(args.commId).c_str(), face->name, value.c_str(), face->version, comm->poolSize());
    return comm;
  } catch (...) {
    WW_WARN(NCCL_INIT | NCCL_PROFILE, "profiler chaining failed; wirewise continues without it");
    return nullptr;
  }
}

void* contextOf(std::unique_ptr<ChainComm> comm) noexcept {
  return reinterpret_cast<void*>(reinterpret_cast<uintptr_t>(comm.release()) | kChainedBit);
}

void* finalizeChain(void* context) noexcept {
  std::unique_ptr<ChainComm> comm(commOf(context));
  const ChainedFace* f = comm->face();
  // NCCL finalizes only non-null contexts; the chained plugin gets the same treatment.
  if (comm->theirContext() != nullptr) {
    try {
      f->finalize(comm->theirContext());
    } catch (...) {
    }
  }
  const uint64_t full = comm->poolFull(), stale = comm->staleParents();
  const uint64_t process = gUnforwarded.load(std::memory_order_relaxed);
  if (full != 0)
    WW_WARN(NCCL_PROFILE,
            "chained profiler %s: %llu events not forwarded, all %u slots of a ring in use (raise WIREWISE_EVENT_POOL); "
            "%llu parents reused before their children; %llu events process-wide had no chained comm",
            f->name, static_cast<unsigned long long>(full), comm->poolSize() / 2, static_cast<unsigned long long>(stale),
            static_cast<unsigned long long>(process));
  else
    WW_INFO(NCCL_PROFILE,
            "chained profiler %s finalized: every event forwarded; %llu parents reused before their children; "
            "%llu events process-wide had no chained comm (PXN, untracked parents)",
            f->name, static_cast<unsigned long long>(stale), static_cast<unsigned long long>(process));
  return comm->ownContext();
}

void stopChained(void* handle) noexcept {
  auto* s = reinterpret_cast<ChainSlot*>(slot_tag::untag(handle));
  uint32_t g = s->gen.load(std::memory_order_acquire);
  if ((g & 1) == 0 || slot_tag::tagOf(g) != slot_tag::tagOfHandle(handle)) return;  // stopped already
  // Read while live: a slot is claimed again only once stopped.
  void* ours = s->ours.load(std::memory_order_relaxed);
  void* theirs = s->theirs.load(std::memory_order_relaxed);
  if (!s->gen.compare_exchange_strong(g, g + 1, std::memory_order_acq_rel, std::memory_order_relaxed)) return;
  const ChainedFace* f = static_cast<const ChainComm*>(s->head.owner)->face();
  try {
    f->stop(theirs);
  } catch (...) {
  }
  profilerStopEvent(ours);
}

void recordChained(void* handle, int state, uint64_t arg, void* rawArgs) noexcept {
  auto* s = reinterpret_cast<ChainSlot*>(slot_tag::untag(handle));
  const uint32_t g = s->gen.load(std::memory_order_acquire);
  if ((g & 1) == 0 || slot_tag::tagOf(g) != slot_tag::tagOfHandle(handle)) return;
  void* ours = s->ours.load(std::memory_order_relaxed);
  void* theirs = s->theirs.load(std::memory_order_relaxed);
  const ChainedFace* f = static_cast<const ChainComm*>(s->head.owner)->face();
  try {
    f->record(theirs, static_cast<ncclProfilerEventState_t>(state),
              static_cast<ncclProfilerEventStateArgs_v5_t*>(rawArgs));
  } catch (...) {
  }
  profilerRecordState(ours, state, rawArgs, arg);
}

}  // namespace wirewise::chain
