// The plugin_start event's "settings" object: every registered WIREWISE_* setting's effective value, as
// text. Temporary home: the settings table (common/settings) generates this at merge and this file goes.
#pragma once

#include <nlohmann/json.hpp>

#include "runtime/settings.h"

namespace wirewise {

nlohmann::json settingsEcho(const Settings& s);

}  // namespace wirewise
