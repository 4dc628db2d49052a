#include "runtime/face_notices.h"

#include <dlfcn.h>

#include "common/nccl/common.h"
#include "runtime/log.h"
#include "runtime/runtime.h"

namespace wirewise {
namespace {

constexpr const char* kProfilerVariable = "NCCL_PROFILER_PLUGIN";  // NCCL's, not ours

// The NCCL releases that bind each older tuner version: NCCL tries the newest it knows first, and each
// version arrived in the release named (shared/research/nccl-abi.md §3.1).
const char* releasesBinding(int abi) {
  switch (abi) {
    case 2: return "2.21.5 to 2.22.2";
    case 3: return "2.22.3 to 2.24.2";
    case 4: return "2.24.3 to 2.28.2";
    default: return "before 2.28.3";
  }
}

}  // namespace

bool adaptationAsked(const Settings& s) {
  return s.mode == Mode::Apply && s.sync != SyncMode::Off && s.policy != PolicyKind::Static;
}

std::string whatRunsMeanwhile(const Settings& s) {
  if (s.mode == Mode::Apply && !s.config.empty()) return "its static table from " + s.config;
  if (s.mode == Mode::Apply) return std::string("NCCL's own choices (no ") + settingName(&Settings::config) + ")";
  return "NCCL's own choices";
}

std::string noProfilerFaceText(const Settings& s, const char* profilerEnv) {
  std::string why = profilerEnv == nullptr || *profilerEnv == '\0'
                        ? std::string(kProfilerVariable) + " is unset"
                        : std::string(kProfilerVariable) + "=" + profilerEnv + " loaded no wirewise profiler";
  std::string text = "no profiler face in this process (" + why + "): ";
  if (s.mode == Mode::Observe)
    text += "observe mode measures nothing; ";
  else if (adaptationAsked(s))
    text += "nothing is measured, so nothing adapts; ";
  else
    text += "nothing is measured; ";
  text += "every communicator keeps " + whatRunsMeanwhile(s) + "; ";
  text += std::string(adaptationAsked(s) ? "adaptation" : "measurement") + " needs " + kProfilerVariable +
          "=wirewise beside NCCL_TUNER_PLUGIN=wirewise";
  return text;
}

std::string legacyTunerText(const Settings& s, int tunerAbi, int nccl) {
  const std::string version = ncclVersionText(nccl);
  std::string text = "this NCCL" + (version.empty() ? "" : " (" + version + ")") + " binds tuner v" +
                     std::to_string(tunerAbi) +
                     (version.empty() ? std::string(" (NCCL ") + releasesBinding(tunerAbi) + ")" : std::string()) +
                     ", which passes no communicator id: its communicators cannot join the coordinator, so none " +
                     "adapts and each keeps " + whatRunsMeanwhile(s) +
                     "; adaptation needs tuner v5: use NCCL 2.28.3 or later";
  return text;
}

std::string ncclVersionText(int code) {
  if (code <= 0) return "";
  // NCCL_VERSION(X, Y, Z): X*10000 + Y*100 + Z since 2.9, X*1000 + Y*100 + Z before.
  const int major = code >= 10000 ? code / 10000 : code / 1000;
  const int minor = code >= 10000 ? code % 10000 / 100 : code % 1000 / 100;
  return std::to_string(major) + "." + std::to_string(minor) + "." + std::to_string(code % 100);
}

int runningNcclVersion() {
  using GetVersion = ncclResult_t (*)(int*);
  auto fn = reinterpret_cast<GetVersion>(::dlsym(RTLD_DEFAULT, "ncclGetVersion"));
  int code = 0;
  if (fn == nullptr || fn(&code) != ncclSuccess) return 0;
  return code;
}

void noticeTunerFaces(Runtime& rt, int tunerAbi, const EnvSource& env) {
  const Settings& s = rt.settings();
  if (s.mode == Mode::Off) return;  // nothing asked of either face
  if (!rt.profilerFaceSeen() && rt.firstNotice(Runtime::Notice::NoProfilerFace)) {
    const std::string text = noProfilerFaceText(s, env(kProfilerVariable));
    if (adaptationAsked(s) || s.mode == Mode::Observe)
      WW_WARN(NCCL_INIT | NCCL_TUNING, "%s", text.c_str());
    else
      WW_INFO(NCCL_INIT | NCCL_TUNING, "%s", text.c_str());
  }
  if (tunerAbi < 5 && rt.firstNotice(Runtime::Notice::LegacyTuner)) {
    const std::string text = legacyTunerText(s, tunerAbi, runningNcclVersion());
    if (adaptationAsked(s))
      WW_WARN(NCCL_INIT | NCCL_TUNING, "%s", text.c_str());
    else
      WW_INFO(NCCL_INIT | NCCL_TUNING, "%s", text.c_str());
  }
}

}  // namespace wirewise
