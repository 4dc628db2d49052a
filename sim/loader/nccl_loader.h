// A harness that loads tuner and profiler plugins the way NCCL 2.28.9 does (and, where a release is named, the
// way 2.29, 2.30 or 2.32 does), so tests and the simulator exercise a plugin .so through the same resolution
// rules, symbol order, version shims and call conventions.
//
// Behaviour follows shared/research/nccl-abi.md §2, §3, §4 and §9, checked against NVIDIA/nccl v2.28.9-1 and
// v2.30.7-1 (src/plugin/plugin_open.cc, tuner.cc, tuner/tuner_v*.cc, profiler.cc, profiler/profiler_v*.cc,
// enqueue.cc). No NCCL code is copied. This is test/simulation code; it is never linked into the plugin.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "common/nccl/common.h"
#include "common/nccl/profiler.h"
#include "common/nccl/tuner.h"

namespace wirewise::loader {

enum class PluginKind { Net, Tuner, Profiler };

// The NCCL release the harness plays (§9's table): which tuner and profiler versions it tries, newest first,
// and how it converts (2.32's v7 constants, 2.30's chunk-size step, 2.29's copy-engine events). 2.32's profiler
// v7 is not modelled: its layout is not confirmed by a tagged release, so 2.32 tries v6 first here.
enum class NcclRelease { V2_28, V2_29, V2_30, V2_32 };
inline constexpr NcclRelease kAllReleases[] = {NcclRelease::V2_28, NcclRelease::V2_29, NcclRelease::V2_30,
                                               NcclRelease::V2_32};
const char* releaseName(NcclRelease r);  // "2.28", ...
int newestTunerVersion(NcclRelease r);     // 5, 5, 6, 7
int newestProfilerVersion(NcclRelease r);  // 5, 6, 6, 6

// "libnccl-net", "libnccl-tuner" or "libnccl-profiler".
const char* pluginPrefix(PluginKind kind);

// True when NCCL treats the env value as "no plugin at all" (case-insensitive "none"; not for Net here).
bool isDisabled(const char* envValue);

// True when NCCL's tryOpenLib would dlopen(NULL) for this name: a case-insensitive prefix of "STATIC_PLUGIN".
bool isStaticPluginName(const std::string& name);

// The names NCCL passes to dlopen for an env value, in order, before any net-library fallback:
// null/empty -> {"<prefix>.so"}; otherwise {value, "<prefix>-value.so" unless value has a '/' or is lib*.so}.
// Names are truncated to 254 characters as NCCL's fixed buffer does. Does not apply the "none" rule.
std::vector<std::string> candidateNames(PluginKind kind, const char* envValue);

struct OpenResult {
  void* handle = nullptr;
  std::string name;                // the name whose dlopen succeeded (NCCL's libNames[kind])
  std::string path;                // dlinfo(RTLD_DI_LINKMAP)->l_name; "" for the main program
  std::vector<std::string> tried;  // every name given to dlopen, in order
  std::string error;               // dlerror() text of each failed attempt, "; "-separated
  bool disabled = false;           // env value was "none": nothing tried
  bool viaNetFallback = false;     // handle is a re-dlopen of the net plugin library
};

// Resolves and dlopens (RTLD_NOW | RTLD_LOCAL) a plugin library as NCCL 2.28.9 does. For Tuner and Profiler,
// if nothing opens and netPluginLib (the name NCCL opened the external net plugin with) is non-null, that
// library is dlopened again and used instead. "none" disables the kind, including the fallback.
OpenResult openPlugin(PluginKind kind, const char* envValue, const char* netPluginLib);

// ---------------------------------------------------------------------------------------------------------------
// Tuner

class Tuner {
 public:
  // Looks up ncclTunerPlugin_v<newest>, ..., _v2 in that order (2.28: v5 first); the first found wins. Null (and
  // *why set) if none. The handle must outlive the Tuner.
  static std::unique_ptr<Tuner> load(void* handle, std::string* why, NcclRelease release = NcclRelease::V2_28);
  // Only ncclTunerPlugin_v<version> (2..7), as an NCCL release that knows no newer one would (tests drive each).
  static std::unique_ptr<Tuner> loadVersion(void* handle, int version, std::string* why);

  int version() const { return version_; }
  const char* name() const;

  // v5 and v6 get every argument; v7 a v7 copy of the constants (the fifth compute-capability row a copy of the
  // fourth), converted back after init; v2-v4 get (nRanks, nNodes, log, context) like NCCL's shims.
  ncclResult_t init(void** context, uint64_t commId, size_t nRanks, size_t nNodes, ncclDebugLogger_t log,
                    ncclNvlDomainInfo_v5_t* nvlDomainInfo, ncclTunerConstants_v5_t* constants) const;
  // As NCCL's getAlgoInfo: *nChannels is set to 0 first; the table (filled by the caller, -1.0 = disabled) goes
  // to the plugin as a flat float[7][3] cast to float**, with numAlgo=7 and numProto=3. v3 loses regBuff; v2
  // gets collNetSupport/nvlsSupport inferred from the table and its answer becomes table[algo][proto] = 0.0.
  ncclResult_t getCollInfo(void* context, ncclFunc_t coll, size_t nBytes, int numPipeOps,
                           float table[NCCL_NUM_ALGORITHMS][NCCL_NUM_PROTOCOLS], int regBuff, int* nChannels) const;
  // True when NCCL would call getChunkSize: v6+ with a non-null member.
  bool hasChunkSize() const;
  // As NCCL 2.30's calcCollChunking after the plugin's getCollInfo: *chunk arrives as NCCL's own value
  // (ncclChunk); the plugin may change it; NCCL clamps it to bufferMaxChunk, casts it to int and rounds it down
  // to the protocol's grain. *chunk is what the kernel would run with (0 = NCCL would divide by zero next).
  // Without getChunkSize, *chunk = ncclChunk rounded the same way. A plugin error is returned as is.
  ncclResult_t chunkSize(void* context, ncclFunc_t coll, size_t nBytes, int algo, int proto, int nChannels,
                         size_t ncclChunk, size_t bufferMaxChunk, size_t* chunk) const;
  // v5..v7 finalize, or v2-v4 destroy.
  ncclResult_t finalize(void* context) const;

 private:
  Tuner(int version, const void* symbol) : version_(version), symbol_(symbol) {}
  int version_;
  const void* symbol_;  // the plugin's ncclTuner_vN_t
};

struct Selection {
  int algo = NCCL_ALGO_UNDEF;
  int proto = NCCL_PROTO_UNDEF;
  bool ok = false;         // false: NCCL fails the collective ("no algorithm/protocol available")
  float cost = 0;          // the winning entry
  int storedChannels = 0;  // the task's nMaxChannels after NCCL's signed 8-bit bitfield
  int nChannels = 0;       // channel budget of a lone task; NCCL may use fewer (>= 16 KiB traffic per channel)
  bool isCollnet = false;  // NCCL's scheduling class: CollNet*, or NVLS with nNodes > 1
  bool isNvls = false;
};

// The communicator values NCCL's scheduler clamps a task's channel count with.
struct CommChannels {
  int nChannels = 1;
  int nvlsChannels = 1;
  int nNodes = 1;
};

// NCCL's rule after the plugin returns: the minimum entry that is != -1.0, >= 0 and < 3.6e9, scanning (a, p)
// in order, ties keeping the first. nChannels = plugin's value, or ncclDefaultChannels when it is 0, stored in
// a signed 8-bit bitfield, then clamped for a lone task: CollNet-class tasks are not clamped; NVLS uses
// nvlsChannels; others nChannels.
Selection selectAlgo(const float table[NCCL_NUM_ALGORITHMS][NCCL_NUM_PROTOCOLS], int pluginNChannels,
                     int ncclDefaultChannels, const CommChannels& comm);

// What NCCL keeps per communicator for the tuner.
struct TunerComm {
  const Tuner* tuner = nullptr;
  void* context = nullptr;
  bool pluginLoaded = false;  // comm->tunerPluginLoaded
};

// One process's worth of NCCL's tuner library state (src/plugin/tuner.cc): loaded once under a mutex, a failed
// load is sticky, and 2.28.9's refcount quirk: only the first comm sets pluginLoaded, so with two or more
// comms the library is never dlclosed. The destructor closes what NCCL would have leaked until process exit.
class TunerLibrary {
 public:
  // envValue: NCCL_TUNER_PLUGIN (nullopt = unset); netPluginLib: see openPlugin.
  TunerLibrary(std::optional<std::string> envValue, std::optional<std::string> netPluginLib);
  ~TunerLibrary();
  TunerLibrary(const TunerLibrary&) = delete;
  TunerLibrary& operator=(const TunerLibrary&) = delete;

  // ncclTunerPluginLoad: sets comm->tuner (null when there is no tuner). Never fails, as in NCCL.
  void load(TunerComm* comm);
  // ncclTunerPluginUnload; call after the caller's tuner->finalize(comm->context).
  void unload(TunerComm* comm);

  enum class Status { Ready, Loaded, Failed };
  // Inspection for tests; not synchronised with concurrent load/unload.
  Status status() const;
  int refCount() const;
  bool libraryOpen() const;
  const OpenResult& lastOpen() const;  // the most recent resolution attempt
  int openAttempts() const;            // how many times resolution ran
  const std::string& why() const;      // why the last load found no tuner

 private:
  struct State;
  std::unique_ptr<State> s_;
};

// ---------------------------------------------------------------------------------------------------------------
// Profiler

class Profiler {
 public:
  // Looks up ncclProfiler_v<newest> (2.28: v5; 2.29+: v6), ..., _v4. If none exists but _v3, _v2 or _v1 does
  // (NCCL would use it), returns null with *why saying which version this harness does not support. The
  // handle must outlive the Profiler.
  static std::unique_ptr<Profiler> load(void* handle, std::string* why, NcclRelease release = NcclRelease::V2_28);
  // Only ncclProfiler_v<version> (4, 5 or 6), as an NCCL release that knows no newer one would.
  static std::unique_ptr<Profiler> loadVersion(void* handle, int version, std::string* why);

  int version() const { return version_; }
  const char* name() const;

  // v4 gets (context, mask, commName, commId, nNodes, nRanks, rank, log) like NCCL's shim.
  ncclResult_t init(void** context, uint64_t commId, int* eActivationMask, const char* commName, int nNodes,
                    int nRanks, int rank, ncclDebugLogger_t log) const;
  // *handle is set to null first (NCCL's handle slots start null). For v4 the descriptor is converted as NCCL's
  // shim does: v5-only types are dropped without calling the plugin, type is narrowed to uint8_t, Coll/P2p
  // parentObj becomes coll/p2p.parentGroup, and p2p.nChannels is not carried (NCCL leaves it unset; here 0).
  ncclResult_t startEvent(void* context, void** handle, ncclProfilerEventDescr_v5_t* descr) const;
  // The same from a 2.29+ NCCL's v6 descriptor: as is for v6; for v5 and v4 the copy-engine types are dropped
  // without calling the plugin (NCCL's v5 shim), the rest converted as above.
  ncclResult_t startEvent(void* context, void** handle, ncclProfilerEventDescr_v6_t* descr) const;
  ncclResult_t stopEvent(void* handle) const;
  // For v4, states NCCL's shim does not forward (v5-only ones, the deprecated ProxyOp 0..7) are dropped; for v4
  // and v5, the copy-engine states (25..30) are too.
  ncclResult_t recordEventState(void* handle, ncclProfilerEventState_t state,
                                ncclProfilerEventStateArgs_v5_t* args) const;
  ncclResult_t finalize(void* context) const;

 private:
  Profiler(int version, const void* symbol) : version_(version), symbol_(symbol) {}
  int version_;
  const void* symbol_;  // the plugin's ncclProfiler_vN_t
};

struct ProfilerComm {
  void* context = nullptr;
  ncclResult_t initResult = ncclSuccess;
};

// One process's worth of NCCL's profiler library state (src/plugin/profiler.cc). A failed init is logged and
// ignored: the comm keeps a null context, events still reach the plugin, and finalize is skipped for it.
// The refcount is decremented on every finalizeComm (it goes negative when loading failed, as in NCCL).
class ProfilerLibrary {
 public:
  ProfilerLibrary(std::optional<std::string> envValue, std::optional<std::string> netPluginLib);
  ~ProfilerLibrary();
  ProfilerLibrary(const ProfilerLibrary&) = delete;
  ProfilerLibrary& operator=(const ProfilerLibrary&) = delete;

  // ncclProfilerPluginInit: load (once), then init this comm against the shared event mask.
  void initComm(ProfilerComm* comm, uint64_t commHash, const char* commName, int nNodes, int nRanks, int rank,
                ncclDebugLogger_t log);
  // ncclProfilerPluginFinalize: finalize if the comm's context is non-null, then unload.
  void finalizeComm(ProfilerComm* comm);

  // Inspection for tests; not synchronised with concurrent initComm/finalizeComm.
  const Profiler* profiler() const;  // null when no plugin is loaded
  int* eventMask();                  // NCCL's single process-wide ncclProfilerEventMask
  int refCount() const;
  bool libraryOpen() const;
  const OpenResult& lastOpen() const;
  const std::string& why() const;

 private:
  struct State;
  std::unique_ptr<State> s_;
};

}  // namespace wirewise::loader
