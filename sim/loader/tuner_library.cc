// NCCL 2.28.9's per-process tuner library state machine (src/plugin/tuner.cc; facts: nccl-abi.md §3.7).
#include <dlfcn.h>

#include <mutex>

#include "sim/loader/nccl_loader.h"

namespace wirewise::loader {

struct TunerLibrary::State {
  std::optional<std::string> env;
  std::optional<std::string> netLib;
  std::mutex mu;
  Status status = Status::Ready;
  int refCount = 0;
  void* handle = nullptr;
  std::unique_ptr<Tuner> tuner;
  OpenResult lastOpen;
  int openAttempts = 0;
  std::string why;

  void closeHandle() {
    if (handle != nullptr) dlclose(handle);
    handle = nullptr;
    tuner.reset();
  }
};

TunerLibrary::TunerLibrary(std::optional<std::string> envValue, std::optional<std::string> netPluginLib)
    : s_(std::make_unique<State>()) {
  s_->env = std::move(envValue);
  s_->netLib = std::move(netPluginLib);
}

TunerLibrary::~TunerLibrary() { s_->closeHandle(); }

void TunerLibrary::load(TunerComm* comm) {
  comm->tuner = nullptr;
  std::lock_guard<std::mutex> lock(s_->mu);
  if (s_->status == Status::Failed) return;  // a failed load is never retried
  if (s_->status == Status::Loaded) {
    // 2.28.9 fast path: counts the comm but leaves comm->pluginLoaded unset (the refcount quirk).
    comm->tuner = s_->tuner.get();
    ++s_->refCount;
    return;
  }
  ++s_->openAttempts;
  const char* env = s_->env ? s_->env->c_str() : nullptr;
  s_->lastOpen = openPlugin(PluginKind::Tuner, env, s_->netLib ? s_->netLib->c_str() : nullptr);
  s_->handle = s_->lastOpen.handle;
  if (s_->handle == nullptr) {
    s_->why = s_->lastOpen.disabled ? "NCCL_TUNER_PLUGIN=none" : "no tuner library: " + s_->lastOpen.error;
  } else {
    s_->tuner = Tuner::load(s_->handle, &s_->why);
  }
  if (s_->tuner == nullptr) {
    s_->closeHandle();
    s_->status = Status::Failed;
    return;
  }
  s_->why.clear();
  comm->tuner = s_->tuner.get();
  ++s_->refCount;
  s_->status = Status::Loaded;
  comm->pluginLoaded = true;
}

void TunerLibrary::unload(TunerComm* comm) {
  std::lock_guard<std::mutex> lock(s_->mu);
  if (comm->pluginLoaded && --s_->refCount == 0) {
    s_->closeHandle();
    comm->tuner = nullptr;
    s_->status = Status::Ready;
    comm->pluginLoaded = false;
  }
}

TunerLibrary::Status TunerLibrary::status() const { return s_->status; }
int TunerLibrary::refCount() const { return s_->refCount; }
bool TunerLibrary::libraryOpen() const { return s_->handle != nullptr; }
const OpenResult& TunerLibrary::lastOpen() const { return s_->lastOpen; }
int TunerLibrary::openAttempts() const { return s_->openAttempts; }
const std::string& TunerLibrary::why() const { return s_->why; }

}  // namespace wirewise::loader
