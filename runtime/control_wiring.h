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
#include <string_view>
#include <unordered_map>
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

// Which verdicts a process logs (docs/adaptation-log.md, `verdict`): per communicator, the first one and
// then each whose table, reason or observe-only flag differs from the verdict before it. Every member of a
// communicator receives the same verdicts in index order, so the first member to present index k decides
// for all of them, and the lines are the same in every process: what a reader compares across processes
// (a disagreement, NVIDIA/nccl #1136) is still there, the repeats of every member and every unchanged
// boundary (nine lines in ten of a simulated run) are not. Called on the plane's I/O thread.
class VerdictLogFilter {
 public:
  // True when the verdict is new to this process (index above every one presented for `comm`); then
  // `content` (what makes two verdicts alike) is asked for and compared. Not the hot path: a lock.
  template <class Content>
  bool admit(uint64_t comm, uint64_t index, Content&& content) {
    std::lock_guard<std::mutex> lock(mu_);
    auto [it, first] = last_.try_emplace(comm);
    if (!first && index <= it->second.index) return false;
    it->second.index = index;
    std::string now = content();
    if (!first && now == it->second.content) return false;
    it->second.content = std::move(now);
    return true;
  }

 private:
  struct Last {
    uint64_t index = 0;
    std::string content;
  };
  std::mutex mu_;
  std::unordered_map<uint64_t, Last> last_;  // one entry per communicator this process has seen a verdict of
};

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
  VerdictLogFilter verdictLog_;
  std::mutex mu_;
  bool started_ = false;
  std::unique_ptr<control::ControlPlane> control_;
};

}  // namespace wirewise
