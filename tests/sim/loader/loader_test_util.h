// Helpers shared by the loader tests: probing whether a library is still mapped, reaching a fake's record.
#pragma once

#include <dlfcn.h>

#include <string>

#include "tests/sim/loader/fakes/fake_record.h"

namespace wirewise::loader::testing {

// True if `path` is currently loaded in this process (does not load it).
inline bool isLoaded(const std::string& path) {
  void* h = dlopen(path.c_str(), RTLD_NOW | RTLD_NOLOAD);
  if (h == nullptr) return false;
  dlclose(h);
  return true;
}

inline FakeTunerRecord* tunerRecord(void* handle) {
  auto fn = reinterpret_cast<FakeTunerRecord* (*)()>(dlsym(handle, "fakeTunerRecord"));
  return fn != nullptr ? fn() : nullptr;
}

inline FakeProfilerRecord* profilerRecord(void* handle) {
  auto fn = reinterpret_cast<FakeProfilerRecord* (*)()>(dlsym(handle, "fakeProfilerRecord"));
  return fn != nullptr ? fn() : nullptr;
}

// A logger with a recognisable address; plugins must receive exactly this pointer.
inline void testLogger(ncclDebugLogLevel, unsigned long, const char*, int, const char*, ...) {}

}  // namespace wirewise::loader::testing
