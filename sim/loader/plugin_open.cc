// Plugin library resolution as in NCCL 2.28.9 src/plugin/plugin_open.cc (facts: nccl-abi.md §2).
#include <dlfcn.h>
#include <link.h>
#include <strings.h>

#include <cstring>

#include "sim/loader/nccl_loader.h"

namespace wirewise::loader {
namespace {

// NCCL formats names into char[255] with snprintf, so at most 254 characters survive.
constexpr size_t kMaxNameChars = 254;

std::string truncated(std::string s) {
  if (s.size() > kMaxNameChars) s.resize(kMaxNameChars);
  return s;
}

bool startsWith(const std::string& s, const char* p) { return s.rfind(p, 0) == 0; }

bool endsWith(const std::string& s, const char* p) {
  const size_t n = std::strlen(p);
  return s.size() >= n && s.compare(s.size() - n, n, p) == 0;
}

std::string linkMapPath(void* handle) {
  struct link_map* lm = nullptr;
  if (dlinfo(handle, RTLD_DI_LINKMAP, &lm) != 0 || lm == nullptr || lm->l_name == nullptr) return {};
  return lm->l_name;
}

// One dlopen attempt, recorded in `r`. Returns true on success.
bool tryOpen(const std::string& name, OpenResult& r) {
  r.tried.push_back(name);
  // The STATIC_PLUGIN quirk: the plugin is looked up in the program and what it already loaded.
  void* h = dlopen(isStaticPluginName(name) ? nullptr : name.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (h == nullptr) {
    const char* e = dlerror();
    if (!r.error.empty()) r.error += "; ";
    r.error += e != nullptr ? e : (name + ": dlopen failed");
    return false;
  }
  r.handle = h;
  r.name = name;
  r.path = linkMapPath(h);
  return true;
}

}  // namespace

const char* pluginPrefix(PluginKind kind) {
  switch (kind) {
    case PluginKind::Net:
      return "libnccl-net";
    case PluginKind::Tuner:
      return "libnccl-tuner";
    case PluginKind::Profiler:
      return "libnccl-profiler";
  }
  return "libnccl-unknown";
}

bool isDisabled(const char* envValue) { return envValue != nullptr && strcasecmp(envValue, "none") == 0; }

bool isStaticPluginName(const std::string& name) {
  // NCCL compares only strlen(name) characters, so every non-empty prefix of STATIC_PLUGIN matches.
  return !name.empty() && strncasecmp(name.c_str(), "STATIC_PLUGIN", name.size()) == 0;
}

std::vector<std::string> candidateNames(PluginKind kind, const char* envValue) {
  const std::string prefix = pluginPrefix(kind);
  if (envValue == nullptr || envValue[0] == '\0') return {truncated(prefix + ".so")};
  const std::string value = envValue;
  std::vector<std::string> names{truncated(value)};
  // A path or a full library name (lib*.so) is used only verbatim.
  const bool isPath = value.find('/') != std::string::npos;
  const bool isLibName = startsWith(value, "lib") && endsWith(value, ".so");
  if (!isPath && !isLibName) names.push_back(truncated(prefix + "-" + value + ".so"));
  return names;
}

OpenResult openPlugin(PluginKind kind, const char* envValue, const char* netPluginLib) {
  OpenResult r;
  if (kind != PluginKind::Net && isDisabled(envValue)) {
    r.disabled = true;
    return r;
  }
  for (const std::string& name : candidateNames(kind, envValue)) {
    if (tryOpen(name, r)) return r;
  }
  // ncclGetNetPluginLib: reuse the external net plugin's library, re-opened by the name it was opened with.
  if (kind != PluginKind::Net && netPluginLib != nullptr && netPluginLib[0] != '\0') {
    r.tried.push_back(netPluginLib);
    void* h = dlopen(netPluginLib, RTLD_NOW | RTLD_LOCAL);
    if (h != nullptr) {
      r.handle = h;
      r.name = netPluginLib;
      r.path = linkMapPath(h);
      r.viaNetFallback = true;
    } else {
      const char* e = dlerror();
      r.error += std::string(r.error.empty() ? "" : "; ") + (e != nullptr ? e : "net library dlopen failed");
    }
  }
  return r;
}

}  // namespace wirewise::loader
