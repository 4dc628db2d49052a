// What the faces NCCL bound cannot do, said once per runtime at the first communicator that shows it:
//   - a tuner without the profiler face (NCCL_PROFILER_PLUGIN unset or naming another plugin): nothing is
//     measured, so the policy has no evidence and nothing adapts;
//   - a tuner bound at v2..v4 (an NCCL before 2.28.3): no communicator id, so the communicator cannot join
//     the coordinator and never adapts.
// A WARN where the user asked for what cannot happen (adaptation, or observe mode's measurements), an INFO
// otherwise. The texts are pure functions, for tests.
#pragma once

#include <string>

#include "common/settings.h"

namespace wirewise {

class Runtime;

// Called by every tuner init, after it acquired the runtime; env gives NCCL_PROFILER_PLUGIN for the text.
void noticeTunerFaces(Runtime& rt, int tunerAbi, const EnvSource& env);

// The adaptive policy can change this process's tables: apply mode, agreement on, a policy that adapts.
bool adaptationAsked(const Settings& s);

// What a communicator runs when nothing adapts: "its static table from FILE" or "NCCL's own choices".
std::string whatRunsMeanwhile(const Settings& s);

std::string noProfilerFaceText(const Settings& s, const char* profilerEnv);
// nccl: NCCL's version code (major*10000 + minor*100 + patch), 0 when unknown.
std::string legacyTunerText(const Settings& s, int tunerAbi, int nccl);

// "2.27.5" from NCCL's version code; "" for 0.
std::string ncclVersionText(int code);
// The version of the NCCL this process runs (its ncclGetVersion, looked up in the process), 0 when none
// is found (NCCL linked statically with hidden symbols, or not loaded as a shared library).
int runningNcclVersion();

}  // namespace wirewise
