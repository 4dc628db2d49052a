// Small pieces the subcommands share: locating the plugin library, and printing decisions.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "sim/loader/nccl_loader.h"

namespace wirewise::tools {

// The directory of the running executable (/proc/self/exe), or "." when it cannot be read.
std::string selfDirectory();

// The libraries `wirewise` looks for when --plugin is not given, in order: next to the executable's own
// directory in <dir>/../lib (the build tree and most installs) and <dir>/../<CMAKE_INSTALL_LIBDIR>.
std::vector<std::string> defaultPluginPaths();

// Opens the tuner library as NCCL does for NCCL_TUNER_PLUGIN=value (loader::openPlugin, kind Tuner, no net
// plugin fallback). Without a value, the first existing default path is opened the same way. On failure the
// result has handle == nullptr and error says what was tried.
loader::OpenResult findPluginLibrary(const std::string& pluginValue);

// "tree/ll ch=keep", "any/simple ch=8".
std::string decisionText(const std::string& algo, const std::string& proto, int64_t channels);

}  // namespace wirewise::tools
