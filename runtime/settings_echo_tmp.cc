#include "runtime/settings_echo_tmp.h"

#include <string>

namespace wirewise {
namespace {

const char* modeName(Mode m) { return m == Mode::Apply ? "apply" : m == Mode::Observe ? "observe" : "off"; }
const char* syncName(SyncMode m) {
  return m == SyncMode::Off ? "off" : m == SyncMode::On ? "on" : "deterministic";
}

}  // namespace

nlohmann::json settingsEcho(const Settings& settings_) {
  return {{"WIREWISE_MODE", modeName(settings_.mode)},
          {"WIREWISE_CONFIG", settings_.config},
          {"WIREWISE_LOG", settings_.logPath},
          {"WIREWISE_SUMMARY_MS", std::to_string(settings_.summaryMs)},
          {"WIREWISE_EVENT_POOL", std::to_string(settings_.eventPool)},
          {"WIREWISE_LOG_QUEUE", std::to_string(settings_.logQueue)},
          {"WIREWISE_SYNC", syncName(settings_.sync)},
          {"WIREWISE_COORDINATOR", settings_.coordinator},
          {"WIREWISE_JOB_KEY", settings_.jobKeySet ? "(set)" : "(derived)"},
          {"WIREWISE_SYNC_TIMEOUT_MS", std::to_string(settings_.syncTimeoutMs)},
          {"WIREWISE_SYNC_GIVE_UP_MS", std::to_string(settings_.syncGiveUpMs)},
          {"WIREWISE_JOIN_TIMEOUT_MS", std::to_string(settings_.joinTimeoutMs)},
          {"WIREWISE_POLICY", settings_.policy},
          {"WIREWISE_BOUNDARY_SPACING", std::to_string(settings_.boundarySpacing)},
          {"WIREWISE_PROBE_SPACING", std::to_string(settings_.probeSpacing)},
          {"WIREWISE_EXPLORE_SHARE", std::to_string(settings_.exploreShare)},
          {"WIREWISE_SWITCH_GAIN", std::to_string(settings_.switchGain)},
          {"WIREWISE_DETECT_DRIFT", std::to_string(settings_.detectDrift)},
          {"WIREWISE_DETECT_THRESHOLD", std::to_string(settings_.detectThreshold)},
          {"WIREWISE_COLLECT_MS", std::to_string(settings_.collectMs)},
          {"WIREWISE_CUPTI", settings_.cupti ? "on" : "off"},
          {"WIREWISE_NET_PATHS", settings_.netPaths ? "on" : "off"},
          {"WIREWISE_NET_STREAMS", std::to_string(settings_.netStreams)},
          {"WIREWISE_NET_CHUNK_KB", std::to_string(settings_.netChunkKb)},
          {"WIREWISE_NET_RAIL_TIMEOUT_MS", std::to_string(settings_.netRailTimeoutMs)},
          {"WIREWISE_NET_QUEUE_MS", std::to_string(settings_.netQueueMs)},
          {"WIREWISE_NET_HEDGE", std::to_string(settings_.netHedge)},
          {"WIREWISE_NET_ENGINE", settings_.netEngine ? "on" : "off"},
          {"WIREWISE_NET_IFNAMES", settings_.netIfnames},
          {"WIREWISE_WIRING", settings_.wiring},
          {"WIREWISE_SYSFS_ROOT", settings_.sysfsRoot}};
}

}  // namespace wirewise
