// NCCL 2.28.9's per-process profiler library state (src/plugin/profiler.cc; facts: nccl-abi.md §4.7).
#include <dlfcn.h>

#include <mutex>

#include "sim/loader/nccl_loader.h"

namespace wirewise::loader {

struct ProfilerLibrary::State {
  enum class Status { Ready, Loaded, Failed };
  std::optional<std::string> env;
  std::optional<std::string> netLib;
  std::mutex mu;
  Status status = Status::Ready;
  int refCount = 0;
  void* handle = nullptr;
  std::unique_ptr<Profiler> profiler;
  int eventMask = 0;  // NCCL's ncclProfilerEventMask: one int shared by every comm
  OpenResult lastOpen;
  std::string why;

  void closeHandle() {
    if (handle != nullptr) dlclose(handle);
    handle = nullptr;
    profiler.reset();
  }

  void load() {
    std::lock_guard<std::mutex> lock(mu);
    if (status == Status::Failed) return;  // a failed load is never retried
    if (status == Status::Loaded) {
      ++refCount;
      return;
    }
    lastOpen = openPlugin(PluginKind::Profiler, env ? env->c_str() : nullptr, netLib ? netLib->c_str() : nullptr);
    handle = lastOpen.handle;
    if (handle == nullptr) {
      why = lastOpen.disabled ? "NCCL_PROFILER_PLUGIN=none" : "no profiler library: " + lastOpen.error;
    } else {
      profiler = Profiler::load(handle, &why);
    }
    if (profiler == nullptr) {
      closeHandle();
      status = Status::Failed;
      return;
    }
    why.clear();
    ++refCount;
    status = Status::Loaded;
  }

  void unload() {
    std::lock_guard<std::mutex> lock(mu);
    // Unconditional decrement, as in NCCL: after a failed load this goes negative and nothing is closed.
    if (--refCount == 0) {
      closeHandle();
      status = Status::Ready;
    }
  }
};

ProfilerLibrary::ProfilerLibrary(std::optional<std::string> envValue, std::optional<std::string> netPluginLib)
    : s_(std::make_unique<State>()) {
  s_->env = std::move(envValue);
  s_->netLib = std::move(netPluginLib);
}

ProfilerLibrary::~ProfilerLibrary() { s_->closeHandle(); }

void ProfilerLibrary::initComm(ProfilerComm* comm, uint64_t commHash, const char* commName, int nNodes, int nRanks,
                               int rank, ncclDebugLogger_t log) {
  s_->load();
  comm->initResult = ncclSuccess;
  if (s_->profiler != nullptr) {
    // 2.28.9 logs "Continue without profiler" on failure and keeps the plugin loaded for everyone.
    comm->initResult =
        s_->profiler->init(&comm->context, commHash, &s_->eventMask, commName, nNodes, nRanks, rank, log);
  }
}

void ProfilerLibrary::finalizeComm(ProfilerComm* comm) {
  if (s_->profiler != nullptr && comm->context != nullptr) s_->profiler->finalize(comm->context);
  s_->unload();
}

const Profiler* ProfilerLibrary::profiler() const { return s_->profiler.get(); }
int* ProfilerLibrary::eventMask() { return &s_->eventMask; }
int ProfilerLibrary::refCount() const { return s_->refCount; }
bool ProfilerLibrary::libraryOpen() const { return s_->handle != nullptr; }
const OpenResult& ProfilerLibrary::lastOpen() const { return s_->lastOpen; }
const std::string& ProfilerLibrary::why() const { return s_->why; }

}  // namespace wirewise::loader
