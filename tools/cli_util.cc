#include "tools/cli_util.h"

#include <unistd.h>

#include <cinttypes>
#include <climits>
#include <cstdio>
#include <filesystem>
#include <string_view>

#ifndef WW_INSTALL_LIBDIR
#define WW_INSTALL_LIBDIR "lib"
#endif

namespace wirewise::tools {
namespace {

constexpr const char* kLibraryName = "libnccl-tuner-wirewise.so";

std::string selfDirectory() {
  char buf[PATH_MAX];
  ssize_t n = readlink("/proc/self/exe", buf, sizeof buf - 1);
  if (n <= 0) return ".";
  buf[n] = '\0';
  return std::filesystem::path(buf).parent_path().string();
}

}  // namespace

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

std::string humanBytes(uint64_t bytes) {
  if (bytes == UINT64_MAX) return "max";
  static constexpr const char* kUnits[] = {"B", "KiB", "MiB", "GiB", "TiB", "PiB", "EiB"};
  int u = 0;
  while (u < 6 && bytes >= (uint64_t{1} << (10 * (u + 1)))) ++u;
  char buf[48];
  uint64_t unit = uint64_t{1} << (10 * u);
  if (bytes % unit == 0) {
    std::snprintf(buf, sizeof buf, "%" PRIu64 " %s", bytes / unit, kUnits[u]);
    return buf;
  }
  // A value that would round to a whole unit (65537 -> "64.00 KiB") prints in bytes, so that a range edge
  // one byte off a power of two never looks like the power of two itself.
  std::snprintf(buf, sizeof buf, "%.2f", static_cast<double>(bytes) / static_cast<double>(unit));
  std::string_view text(buf);
  if (text.size() > 3 && text.substr(text.size() - 3) == ".00")
    std::snprintf(buf, sizeof buf, "%" PRIu64 " B", bytes);
  else
    std::snprintf(buf, sizeof buf, "%.2f %s", static_cast<double>(bytes) / static_cast<double>(unit), kUnits[u]);
  return buf;
}

std::string humanRange(uint64_t lo, uint64_t hi) { return humanBytes(lo) + "-" + humanBytes(hi); }

std::string decisionText(const std::string& algo, const std::string& proto, int64_t channels) {
  return algo + "/" + proto + " ch=" + (channels == 0 ? std::string("keep") : std::to_string(channels));
}

}  // namespace wirewise::tools
