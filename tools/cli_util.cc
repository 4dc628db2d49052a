#include "tools/cli_util.h"

#include <unistd.h>

#include <climits>
#include <filesystem>

#ifndef WW_INSTALL_LIBDIR
#define WW_INSTALL_LIBDIR "lib"
#endif

namespace wirewise::tools {
namespace {

constexpr const char* kLibraryName = "libnccl-tuner-wirewise.so";

}  // namespace

std::string selfDirectory() {
  char buf[PATH_MAX];
  ssize_t n = readlink("/proc/self/exe", buf, sizeof buf - 1);
  if (n <= 0) return ".";
  buf[n] = '\0';
  return std::filesystem::path(buf).parent_path().string();
}

std::vector<std::string> defaultPluginPaths() {
  std::string dir = selfDirectory();
  std::vector<std::string> out = {dir + "/../lib/" + kLibraryName};
  std::string installed = dir + "/../" + WW_INSTALL_LIBDIR + "/" + kLibraryName;
  if (installed != out.front()) out.push_back(installed);
  return out;
}

loader::OpenResult findPluginLibrary(const std::string& pluginValue) {
  if (!pluginValue.empty()) return loader::openPlugin(loader::PluginKind::Tuner, pluginValue.c_str(), nullptr);
  loader::OpenResult last;
  std::string errors;
  for (const auto& path : defaultPluginPaths()) {
    last = loader::openPlugin(loader::PluginKind::Tuner, path.c_str(), nullptr);
    if (last.handle != nullptr) return last;
    errors += (errors.empty() ? "" : "; ") + last.error;
  }
  last.error = errors + " (pass --plugin PATH, or a name NCCL_TUNER_PLUGIN would accept)";
  return last;
}

std::string decisionText(const std::string& algo, const std::string& proto, int64_t channels) {
  return algo + "/" + proto + " ch=" + (channels == 0 ? std::string("keep") : std::to_string(channels));
}

}  // namespace wirewise::tools
