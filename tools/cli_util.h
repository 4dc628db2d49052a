// Small pieces the subcommands share: locating the plugin library, and printing sizes and decisions.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "sim/loader/nccl_loader.h"

namespace wirewise::tools {

// The libraries `wirewise` looks for when --plugin is not given, in order: next to the executable's own
// directory in <dir>/../lib (the build tree and most installs) and <dir>/../<CMAKE_INSTALL_LIBDIR>.
std::vector<std::string> defaultPluginPaths();

// Opens the tuner library as NCCL does for NCCL_TUNER_PLUGIN=value (loader::openPlugin, kind Tuner, no net
// plugin fallback). Without a value, the first existing default path is opened the same way. On failure the
// result has handle == nullptr and error says what was tried.
loader::OpenResult findPluginLibrary(const std::string& pluginValue);

// 0 B, 512 B, 64 KiB, 1.50 MiB, 1 GiB; UINT64_MAX prints as "max" (an open-ended range).
std::string humanBytes(uint64_t bytes);
// "0 B-64 KiB": both ends inclusive, as rules and ranges are.
std::string humanRange(uint64_t lo, uint64_t hi);
// "tree/ll ch=keep", "any/simple ch=8".
std::string decisionText(const std::string& algo, const std::string& proto, int64_t channels);

}  // namespace wirewise::tools
