#include "runtime/control_wiring.h"

#include <unistd.h>

#include <algorithm>
#include <cinttypes>
#include <cstdio>
#include <cstring>

#include "adaptive/decision_table.h"
#include "common/log_events.h"
#include "common/units.h"
#include "control/member.h"
#include "control/rendezvous.h"
#include "runtime/log.h"
#include "runtime/sink_tracker.h"

namespace wirewise {
namespace {

// Deterministic mode knows no collective rates: boundaries at this fixed spacing unless configured.
constexpr uint64_t kDeterministicSpacing = 32;

}  // namespace

control::ControlOptions controlOptions(const Settings& s) {
  control::ControlOptions o;
  o.params.deterministic = s.sync == SyncMode::Deterministic;
  o.params.joinTimeoutMs = s.joinTimeoutMs;
  if (s.boundarySpacing > 0) {
    o.params.fixedSpacing = static_cast<uint64_t>(s.boundarySpacing);
    o.params.useFixedSpacing = true;
  } else if (o.params.deterministic) {
    o.params.fixedSpacing = kDeterministicSpacing;
  }
  o.adaptive.detector.drift = s.detectDrift;
  o.adaptive.detector.threshold = s.detectThreshold;
  o.adaptive.detector.clip = std::min(o.adaptive.detector.clip, 0.75 * s.detectThreshold);
  o.adaptive.exploreShare = s.exploreShare;
  o.adaptive.switchGain = s.switchGain;
  o.adaptive.probeSpacing = static_cast<uint64_t>(s.probeSpacing);
  o.policy = s.policy;
  return o;
}

void fillSights(control::Member& m, control::Report* r) {
  if (!m.sights) return;
  for (int c = 0; c < kNumCollTypes; ++c)
    for (int b = 0; b < SizeBuckets::kCount && r->sights.size() < control::kMaxReportSights; ++b) {
      adapt::SightSlot& s = m.sights->slots[collBucket(c, b)];
      if (s.state.load(std::memory_order_acquire) != adapt::SightTable::kReady) continue;
      adapt::Sight out;
      out.coll = static_cast<int8_t>(c);
      out.bucket = static_cast<uint8_t>(b);
      out.bytes = s.bytes;
      std::memcpy(out.cost, s.cost, sizeof out.cost);
      r->sights.push_back(out);
      s.state.store(adapt::SightTable::kSent, std::memory_order_relaxed);
    }
}

ControlWiring::ControlWiring(const Settings& settings, const ParsedConfig& config, const EnvSource& env,
                             ControlHooks hooks)
    : settings_(settings), config_(config), hooks_(std::move(hooks)) {
  if (settings_.sync == SyncMode::Off) return;
  control::Rendezvous rv = control::resolveRendezvous(settings_, env);
  if (!rv.problem.empty()) WW_WARN(NCCL_INIT | NCCL_ENV, "%s", rv.problem.c_str());
  rvHost_ = rv.host;
  rvPort_ = rv.port;
  rvSource_ = rv.source;
  control::JobKey k = control::resolveJobKey(settings_, env, static_cast<long>(geteuid()));
  if (!k.notice.empty()) WW_WARN(NCCL_INIT | NCCL_ENV, "%s", k.notice.c_str());
  if (k.refused()) {
    // Observe only rather than a derived key: whoever can derive that could steer this job.
    keyRefused_ = true;
    WW_WARN(NCCL_INIT | NCCL_ENV, "%s", k.problem.c_str());
    hooks_.event(logev::Control{.level = "warn", .message = k.problem});
  }
  jobKey_ = std::move(k.key);
  jobKeySource_ = k.source;
}

ControlWiring::~ControlWiring() { stop(); }

void ControlWiring::stop() {
  std::lock_guard<std::mutex> lock(mu_);
  control_.reset();
}

control::ControlPlane* ControlWiring::plane() {
  std::lock_guard<std::mutex> lock(mu_);
  if (settings_.sync == SyncMode::Off || settings_.mode != Mode::Apply || keyRefused_) return nullptr;
  if (started_) return control_.get();
  started_ = true;
  control::ControlOptions o = controlOptions(settings_);
  o.host = rvHost_;
  o.port = rvPort_;
  o.jobKey = jobKey_;
  o.policyEvent = [this](nlohmann::json ev) { hooks_.event(std::move(ev)); };
  o.fillReport = [this](control::Member& m, control::Report* r) {
    if (hooks_.links) r->links = hooks_.links();
    fillSights(m, r);
    if (hooks_.sinks != nullptr) hooks_.sinks->fillSamples(m, r);
  };
  if (hooks_.sinks != nullptr) hooks_.sinks->keepForReports();
  const ParsedConfig* cfg = &config_;
  o.staticRules = [cfg](uint64_t, uint32_t nRanks, uint32_t nNodes) { return rulesForComm(*cfg, nRanks, nNodes); };
  o.log = [this](bool warn, const std::string& line) {
    if (warn)
      WW_WARN(NCCL_INIT | NCCL_TUNING, "%s", line.c_str());
    else
      WW_INFO(NCCL_INIT | NCCL_TUNING, "%s", line.c_str());
    hooks_.event(logev::Control{.level = warn ? "warn" : "info", .message = line});
  };
  o.onVerdict = [this](const control::Member& m, const control::Verdict& v) {
    char digest[24] = "";
    uint64_t d = 0;
    if (!v.observeOnly) {
      d = DecisionTable::build(v.rules, v.reason)->digest();
      std::snprintf(digest, sizeof digest, "%016" PRIx64, d);
    }
    // Each rank compares the coordinator's static table with its own: a per-member WARN, not a log line.
    if (!v.observeOnly && v.index == 0 && v.reason == "static" && d != m.configDigest())
      WW_WARN(NCCL_INIT | NCCL_TUNING,
              "comm %s: the coordinator's static table (digest %s) differs from this rank's %s "
              "(digest %016" PRIx64 "); the coordinator's applies from collective %" PRIu64,
              hexId(m.commId()).c_str(), digest, settingName(&Settings::config), m.configDigest(), v.boundary);
    const bool log = verdictLog_.admit(m.commId(), v.index, [&] {
      return std::string(digest) + (v.observeOnly ? " observe " : " ") + v.reason;
    });
    if (!log) return;
    logev::Verdict ev;
    ev.comm = hexId(m.commId());
    ev.reason = v.reason;
    ev.digest = digest;
    ev.index = v.index;
    ev.boundary = v.boundary;
    if (v.next != UINT64_MAX) ev.next = v.next;
    ev.observeOnly = v.observeOnly;
    hooks_.event(ev);
  };
  try {
    control_ = std::make_unique<control::ControlPlane>(std::move(o));
    WW_INFO(NCCL_INIT, "control plane: coordinator %s (from %s, %s), job key %s", control_->address().c_str(),
            rvSource_.c_str(), control_->hosting() ? "hosted here" : "remote", jobKeySource_.c_str());
    hooks_.event(logev::ControlStart{.coordinator = control_->address(),
                                     .source = rvSource_,
                                     .jobKey = jobKeySource_,
                                     .hosting = control_->hosting()});
  } catch (const std::exception& e) {
    WW_WARN(NCCL_INIT, "control plane could not start (%s); communicators keep their static table", e.what());
  }
  return control_.get();
}

}  // namespace wirewise
