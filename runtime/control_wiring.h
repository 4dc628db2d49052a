// The runtime's side of the control plane (docs/control-plane.md): the options it is started with, taken
// from the settings, and the callbacks that connect it to the rest of the runtime — its policy and log
// lines to the adaptation log, its verdicts logged (and a static table that differs from this rank's
// WARNed), and each boundary report filled with this process's evidence: the sampler's link notes, NCCL's
// cost tables first seen, and the paired profiler sink's samples.
#pragma once

#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "adaptive/config.h"
#include "adaptive/evidence_types.h"
#include "control/control_plane.h"
#include "runtime/sampler.h"
#include "common/settings.h"

namespace wirewise {

class SinkTracker;

// What the plane needs from the rest of the runtime; every part outlives the ControlWiring.
struct ControlHooks {
  PostFn event;                                          // the adaptation log
  std::function<std::vector<adapt::LinkNote>()> links;  // this host's unhealthy links now; may be null
  SinkTracker* sinks = nullptr;                          // the profiler samples for the reports
};

// The plane's options that come from the settings alone (no callbacks, no rendezvous): pure.
control::ControlOptions controlOptions(const Settings& s);

// I/O thread: the cost tables of NCCL's that member m's comm first saw since its last report, marked sent.
void fillSights(control::Member& m, control::Report* r);

class ControlWiring {
 public:
  // Under sync, resolves the rendezvous address and the job key now: the environment is read only when the
  // runtime starts. settings and config must outlive it.
  ControlWiring(const Settings& settings, const ParsedConfig& config, const EnvSource& env, ControlHooks hooks);
  ~ControlWiring();

  // Started by the first call (its I/O thread, client and maybe coordinator); null when sync is off, in
  // observe mode, when the job-key file was refused, or when it could not start. Thread-safe; never called
  // from getCollInfo.
  control::ControlPlane* plane();
  // Stops the plane (its I/O thread posts events, so it goes before the log). Idempotent.
  void stop();

 private:
  const Settings& settings_;
  const ParsedConfig& config_;
  ControlHooks hooks_;
  std::string rvHost_, rvSource_;
  uint16_t rvPort_ = 0;
  std::vector<uint8_t> jobKey_;
  std::string jobKeySource_;
  bool keyRefused_ = false;  // the key file was refused: join no coordinator
  std::mutex mu_;
  bool started_ = false;
  std::unique_ptr<control::ControlPlane> control_;
};

}  // namespace wirewise
