#include "runtime/runtime.h"

#include <unistd.h>

#include <atomic>
#include <cinttypes>
#include <cstdio>
#include <cstring>
#include <map>
#include <set>

#include "common/units.h"
#include "control/control_plane.h"
#include "control/member.h"
#include "telemetry/collectors/collector_set.h"
#include "telemetry/launch_ring.h"
#include "telemetry/wiring/prior.h"
#include "control/rendezvous.h"
#include "runtime/log.h"

namespace wirewise {
namespace {

// Guarded by gMu. Heap-allocated on purpose: no static destructor races the background thread at exit.
std::mutex gMu;
Runtime* gRuntime = nullptr;
int gRefs = 0;

constexpr auto kDrainPeriod = std::chrono::milliseconds(50);
// Samples kept per sink for the coordinator: a few boundaries' worth even at 8 collectives per boundary.
constexpr size_t kMaxReportBacklog = 1 << 16;
// KernelLaunch records held for the CUPTI collector between two sampler passes (48 B each: 3 MiB).
constexpr size_t kLaunchRingSize = 1 << 16;
// Deterministic mode knows no collective rates: boundaries at this fixed spacing unless configured.
constexpr uint64_t kDeterministicSpacing = 32;

std::string hostName() {
  char buf[256] = {};
  if (gethostname(buf, sizeof buf - 1) != 0) return "unknown-host";
  return buf;
}


// Set once by the net face (or a test); read by the sampler.
std::atomic<Runtime::RailSource> gRailSource{nullptr};

// At unload or exit with comms never finalized: stop the thread while its code is still mapped.
__attribute__((destructor)) void stopAtUnload() {
  std::lock_guard<std::mutex> lock(gMu);
  if (gRuntime != nullptr) gRuntime->stopThread();
}

}  // namespace

void Runtime::setRailSource(RailSource source) { gRailSource.store(source, std::memory_order_release); }

std::vector<adapt::LinkNote> Runtime::linkNotes() {
  std::lock_guard<std::mutex> links(linksMu_);
  return linkNotes_;
}

Runtime* Runtime::acquire(const EnvSource& env) {
  std::lock_guard<std::mutex> lock(gMu);
  if (gRuntime == nullptr) gRuntime = new Runtime(env);
  ++gRefs;
  return gRuntime;
}

void Runtime::release() {
  Runtime* dead = nullptr;
  {
    std::lock_guard<std::mutex> lock(gMu);
    if (gRefs == 0) return;
    if (--gRefs == 0) {
      dead = gRuntime;
      gRuntime = nullptr;
    }
  }
  delete dead;
}

int Runtime::references() {
  std::lock_guard<std::mutex> lock(gMu);
  return gRefs;
}

Runtime::Runtime(const EnvSource& env)
    : host_(hostName()),
      log_((
               [&] {
                 std::vector<std::string> warnings;
                 settings_ = readSettings(env, host_, static_cast<long>(getpid()), &warnings);
                 for (const auto& w : warnings) WW_WARN(NCCL_INIT | NCCL_ENV, "%s", w.c_str());
                 return settings_.logPath;
               }()),
           static_cast<size_t>(settings_.logQueue)) {
  if (!settings_.logPath.empty() && !log_.ok())
    WW_WARN(NCCL_INIT, "cannot write the adaptation log at %s (%s); set WIREWISE_LOG to a writable path or 'none'",
            settings_.logPath.c_str(), log_.error().c_str());

  if (settings_.sync != SyncMode::Off) {
    control::Rendezvous rv = control::resolveRendezvous(settings_, env);
    if (!rv.problem.empty()) WW_WARN(NCCL_INIT | NCCL_ENV, "%s", rv.problem.c_str());
    rvHost_ = rv.host;
    rvPort_ = rv.port;
    rvSource_ = rv.source;
    control::JobKey k = control::resolveJobKey(settings_, env, static_cast<long>(getuid()));
    jobKey_ = std::move(k.key);
    jobKeySource_ = k.source;
  }
  log_.post({{"event", "plugin_start"}, {"version", WIREWISE_VERSION}, {"host", host_}, {"settings", settingsEcho(settings_)}});
  WW_INFO(NCCL_INIT, "version %s, mode %s, log %s", WIREWISE_VERSION, std::string(enumName(settings_.mode)).c_str(),
          settings_.logPath.empty() ? "disabled" : settings_.logPath.c_str());

  if (!settings_.config.empty()) {
    config_ = parseConfigFile(settings_.config, readFileText(settings_.config, kMaxConfigBytes));
    for (const auto& p : config_.problems) {
      if (p.warningOnly)
        WW_INFO(NCCL_INIT | NCCL_TUNING, "%s:%d: %s", p.file.c_str(), p.line, p.reason.c_str());
      else
        WW_WARN(NCCL_INIT | NCCL_TUNING, "%s:%d: %s (line skipped)", p.file.c_str(), p.line, p.reason.c_str());
      log_.post({{"event", "config_problem"},
                 {"file", p.file},
                 {"line", p.line},
                 {"reason", p.reason},
                 {"warning", p.warningOnly}});
    }
  }
  lastSummary_ = std::chrono::steady_clock::now();
  thread_ = std::thread([this] { run(); });

  if (settings_.mode != Mode::Off && settings_.collectMs > 0) {
    try {
      collectors::CollectorConfig cc;
      cc.sysfsRoot = settings_.sysfsRoot;
      cc.cupti = settings_.cupti;
      if (settings_.cupti) launches_ = std::make_unique<LaunchRing>(kLaunchRingSize);
      cc.launches = launches_.get();
      cc.periodMs = static_cast<uint32_t>(settings_.collectMs);
      if (const char* hca = env("NCCL_IB_HCA"); hca && *hca) cc.ibHca = hca;
      collectors_ = collectors::CollectorSet::create(cc, [](const std::string& line) {
        WW_INFO(NCCL_INIT | NCCL_NET, "collectors: %s", line.c_str());
      });
      if (!collectors_->cuptiAttributes()) launches_.reset();  // nobody drains it: profilers record nothing
      WW_INFO(NCCL_INIT | NCCL_NET, "link collectors every %lld ms: %s", static_cast<long long>(settings_.collectMs),
              collectors_->statusLine().c_str());
      log_.post({{"event", "collectors"}, {"period_ms", settings_.collectMs}, {"status", collectors_->statusLine()}});
      loadWiring();
      sampler_ = std::thread([this] { sampleLoop(); });
    } catch (const std::exception& e) {
      collectors_.reset();
      launches_.reset();
      WW_WARN(NCCL_INIT | NCCL_NET, "link collectors could not start (%s); continuing without link health", e.what());
    }
  }
}

control::ControlPlane* Runtime::controlPlane() {
  std::lock_guard<std::mutex> lock(controlMu_);
  if (settings_.sync == SyncMode::Off || settings_.mode != Mode::Apply) return nullptr;
  if (controlStarted_) return control_.get();
  controlStarted_ = true;
  control::ControlOptions o;
  o.host = rvHost_;
  o.port = rvPort_;
  o.jobKey = jobKey_;
  o.params.deterministic = settings_.sync == SyncMode::Deterministic;
  o.params.joinTimeoutMs = settings_.joinTimeoutMs;
  if (settings_.boundarySpacing > 0) {
    o.params.fixedSpacing = static_cast<uint64_t>(settings_.boundarySpacing);
    o.params.useFixedSpacing = true;
  } else if (o.params.deterministic) {
    o.params.fixedSpacing = kDeterministicSpacing;
  }
  o.adaptive.detector.drift = settings_.detectDrift;
  o.adaptive.detector.threshold = settings_.detectThreshold;
  o.adaptive.detector.clip = std::min(o.adaptive.detector.clip, 0.75 * settings_.detectThreshold);
  o.adaptive.exploreShare = settings_.exploreShare;
  o.adaptive.switchGain = settings_.switchGain;
  o.adaptive.probeSpacing = static_cast<uint64_t>(settings_.probeSpacing);
  o.policyEvent = [this](nlohmann::json ev) { event(std::move(ev)); };
  o.fillReport = [this](control::Member& m, control::Report* r) { fillReport(m, r); };
  {
    std::lock_guard<std::mutex> sinksLock(mu_);
    keepForReports_ = true;
  }
  o.policy = settings_.policy;
  const ParsedConfig* cfg = &config_;
  o.staticRules = [cfg](uint64_t, uint32_t nRanks, uint32_t nNodes) { return rulesForComm(*cfg, nRanks, nNodes); };
  o.log = [this](bool warn, const std::string& line) {
    if (warn)
      WW_WARN(NCCL_INIT | NCCL_TUNING, "%s", line.c_str());
    else
      WW_INFO(NCCL_INIT | NCCL_TUNING, "%s", line.c_str());
    event({{"event", "control"}, {"level", warn ? "warn" : "info"}, {"message", line}});
  };
  o.onVerdict = [this](const control::Member& m, const control::Verdict& v) {
    char digest[24] = "";
    if (!v.observeOnly) {
      uint64_t d = DecisionTable::build(v.rules, v.reason)->digest();
      std::snprintf(digest, sizeof digest, "%016" PRIx64, d);
      if (v.index == 0 && v.reason == "static" && d != m.configDigest())
        WW_WARN(NCCL_INIT | NCCL_TUNING,
                "comm %s: the coordinator's static table (digest %s) differs from this rank's WIREWISE_CONFIG "
                "(digest %016" PRIx64 "); the coordinator's applies from collective %" PRIu64,
                hexId(m.commId()).c_str(), digest, m.configDigest(), v.boundary);
    }
    event({{"event", "verdict"},
           {"comm", hexId(m.commId())},
           {"index", v.index},
           {"boundary", v.boundary},
           {"next", v.next == UINT64_MAX ? nlohmann::json(nullptr) : nlohmann::json(v.next)},
           {"observe_only", v.observeOnly},
           {"reason", v.reason},
           {"digest", digest}});
  };
  try {
    control_ = std::make_unique<control::ControlPlane>(std::move(o));
    WW_INFO(NCCL_INIT, "control plane: coordinator %s (from %s, %s), job key %s", control_->address().c_str(),
            rvSource_.c_str(), control_->hosting() ? "hosted here" : "remote", jobKeySource_.c_str());
    event({{"event", "control_start"},
           {"coordinator", control_->address()},
           {"source", rvSource_},
           {"hosting", control_->hosting()},
           {"job_key", jobKeySource_}});
  } catch (const std::exception& e) {
    WW_WARN(NCCL_INIT, "control plane could not start (%s); communicators keep their static table", e.what());
  }
  return control_.get();
}

Runtime::~Runtime() {
  stopThread();
  log_.post({{"event", "plugin_stop"}, {"log_dropped", log_.dropped()}});
  // log_'s destructor flushes and joins its writer.
}

void Runtime::stopThread() {
  {
    // The control plane's I/O thread goes first: it posts events to the log.
    std::lock_guard<std::mutex> lock(controlMu_);
    control_.reset();
  }
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (stop_) return;
    stop_ = true;
  }
  cv_.notify_all();
  if (thread_.joinable()) thread_.join();
  {
    std::lock_guard<std::mutex> lock(samplerMu_);
    samplerStop_ = true;
  }
  samplerCv_.notify_all();
  if (sampler_.joinable()) sampler_.join();
}

// The map is one host's measurement: another host's pairs would name the wrong GPUs, so a map that says
// it is from elsewhere is refused. Its flags are WARNs: a weak pair is worth a look before the job runs long.
void Runtime::loadWiring() {
  if (settings_.wiring.empty()) return;
  wiring::WiringPrior prior;
  std::string error;
  const int64_t now = std::chrono::duration_cast<std::chrono::nanoseconds>(
                          std::chrono::steady_clock::now().time_since_epoch()).count();
  if (!wiring::loadWiringPrior(settings_.wiring, now, &prior, &error)) {
    WW_WARN(NCCL_INIT | NCCL_ENV, "WIREWISE_WIRING: %s; continuing without a wiring prior (fix the file or unset "
            "WIREWISE_WIRING)", error.c_str());
    return;
  }
  if (!prior.host.empty() && prior.host != host_) {
    WW_WARN(NCCL_INIT | NCCL_ENV, "WIREWISE_WIRING=%s was measured on host %s, this is %s: ignored (give each host "
            "its own map, e.g. WIREWISE_WIRING=/maps/%%h.json)", settings_.wiring.c_str(), prior.host.c_str(),
            host_.c_str());
    return;
  }
  for (const std::string& f : prior.flags) WW_WARN(NCCL_INIT, "wiring map %s: %s", settings_.wiring.c_str(), f.c_str());
  log_.post({{"event", "wiring_prior"}, {"file", settings_.wiring}, {"links", prior.links.size()},
             {"flags", prior.flags}});
  wiringPrior_ = std::move(prior.links);
}

void Runtime::sampleLoop() {
  // Link states already logged, so that a change is logged once, when it happens.
  std::map<std::string, int> states;
  std::set<std::string> everUp;  // a link that was never up (an unused port) is not news when down
  auto lastFull = std::chrono::steady_clock::time_point{};
  std::unique_lock<std::mutex> lock(samplerMu_);
  while (!samplerStop_) {
    lock.unlock();
    try {
      auto now = std::chrono::steady_clock::now();
      collectors_->sample(now);
      collectors::LinkHealthSnapshot snap = collectors_->snapshot();
      snap.links.insert(snap.links.end(), wiringPrior_.begin(), wiringPrior_.end());
      if (RailSource source = gRailSource.load(std::memory_order_acquire)) {
        const int64_t nowNs =
            std::chrono::duration_cast<std::chrono::nanoseconds>(now.time_since_epoch()).count();
        std::vector<collectors::LinkHealth> rails = rails_.update(source(), nowNs);
        snap.links.insert(snap.links.end(), rails.begin(), rails.end());
        for (nlohmann::json& ev : rails_.takeShifts()) {
          ev["host"] = host_;
          log_.post(std::move(ev));
        }
      }
      nlohmann::json changed = nlohmann::json::array();
      std::vector<adapt::LinkNote> notes;
      for (const auto& l : snap.links) {
        int st = static_cast<int>(l.state);
        auto [it, fresh] = states.try_emplace(l.id, st);
        if (fresh || it->second != st) changed.push_back(collectors::toJson(l));
        it->second = st;
        if (l.state == collectors::LinkState::kUp) everUp.insert(l.id);
        bool degraded = l.state == collectors::LinkState::kDegraded;
        bool lost = l.state == collectors::LinkState::kDown && everUp.count(l.id);
        if ((degraded || lost) && notes.size() < control::kMaxReportLinks) {
          adapt::LinkNote n;
          n.link = (host_ + "/" + l.id).substr(0, adapt::kMaxLinkName);
          for (char& c : n.link)
            if (c < 0x20 || c > 0x7e) c = '?';
          n.state = degraded ? 1 : 2;
          n.capacityRatio = l.bestNominalBps > 0 ? static_cast<float>(l.nominalBps / l.bestNominalBps) : 1.0f;
          n.errorsPerSec = static_cast<float>(l.errorsPerSec);
          if (l.kind == collectors::LinkKind::kRail) {
            // A rail has no nominal speed worth comparing: its measured rate against its peer rails' stands in.
            n.capacityRatio = static_cast<float>(l.rateRatio);
            n.errorsPerSec = l.congested ? static_cast<float>(l.congestionPerSec) : 0.0f;  // retransmits/s
            if (l.baselineRttUs > 0) {
              n.rttUs = static_cast<float>(l.rttUs);
              n.baselineRttUs = static_cast<float>(l.baselineRttUs);
            }
          }
          notes.push_back(std::move(n));
        }
      }
      {
        std::lock_guard<std::mutex> links(linksMu_);
        linkNotes_ = std::move(notes);
      }
      if (now - lastFull >= std::chrono::milliseconds(settings_.summaryMs)) {
        nlohmann::json ev = collectors::toJson(snap);
        ev["reason"] = "periodic";
        log_.post(std::move(ev));
        if (nlohmann::json k = collectors_->cuptiReport(); !k.is_null()) log_.post(std::move(k));
        lastFull = now;
      } else if (!changed.empty()) {
        nlohmann::json ev = collectors::toJson(snap);
        ev["links"] = std::move(changed);
        ev["reason"] = "changed";
        log_.post(std::move(ev));
      }
    } catch (const std::exception& e) {
      WW_WARN(NCCL_NET, "link collectors failed (%s); link health stops here", e.what());
      return;
    }
    lock.lock();
    samplerCv_.wait_for(lock, std::chrono::milliseconds(settings_.collectMs), [this] { return samplerStop_; });
  }
}

void Runtime::addSink(EventSink* sink, const ProxySink* proxy) {
  std::lock_guard<std::mutex> lock(mu_);
  sinks_.push_back(std::make_unique<Tracked>(Tracked{sink, Aggregator(sink->nRanks()), {}, {}, nullptr, 0, proxy, {}}));
}

void Runtime::removeSink(EventSink* sink) {
  std::lock_guard<std::mutex> lock(mu_);
  for (auto it = sinks_.begin(); it != sinks_.end(); ++it) {
    if ((*it)->sink != sink) continue;
    drainLocked(**it);
    auto elapsed = std::chrono::steady_clock::now() - lastSummary_;
    summarizeLocked(**it, std::chrono::duration_cast<std::chrono::milliseconds>(elapsed).count());
    sinks_.erase(it);
    return;
  }
}

void Runtime::fillReport(control::Member& m, control::Report* r) {
  {
    std::lock_guard<std::mutex> links(linksMu_);
    r->links = linkNotes_;
  }
  if (m.sights) {
    for (int c = 0; c < kNumCollTypes; ++c)
      for (int b = 0; b < SizeBuckets::kCount && r->sights.size() < control::kMaxReportSights; ++b) {
        adapt::SightSlot& s = m.sights->slots[c][b];
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
  std::lock_guard<std::mutex> lock(mu_);
  // Pair the member with a sink of its comm: its own pairing, else the first unpaired one. The profiler
  // and the tuner of one rank are separate contexts that NCCL never links; any one-to-one pairing serves,
  // because the coordinator merges every member's samples of a collective anyway.
  Tracked* t = nullptr;
  for (auto& x : sinks_)
    if (x->sink->commId() == m.commId() && x->member == &m) t = x.get();
  if (t == nullptr)
    for (auto& x : sinks_)
      if (x->sink->commId() == m.commId() && x->member == nullptr) {
        x->member = &m;
        t = x.get();
        break;
      }
  if (t == nullptr) return;
  drainLocked(*t);
  // Only collectives before the boundary: what a rank has completed when it passes B_k is exactly the
  // collectives before it, so the report at B_k carries the same collectives on every run.
  auto& q = t->forReport;
  while (!q.empty() && q.front().collIndex < r->seq && r->samples.size() < control::kMaxReportSamples) {
    const CollSample& s = q.front();
    r->samples.push_back({s.seqNumber, s.bytes,
                          static_cast<uint32_t>(std::min<uint64_t>(s.durationNs, UINT32_MAX)), s.coll, s.algo,
                          s.proto, s.nChannels, s.slowChannels, s.slowRatioQ8});
    q.pop_front();
  }
}

void Runtime::drainLocked(Tracked& t) {
  CollSample buf[256];
  for (;;) {
    size_t n = t.sink->drain(buf, 256);
    for (size_t i = 0; i < n; ++i) {
      t.agg.add(buf[i]);
      if (!keepForReports_) continue;
      if (t.forReport.size() >= kMaxReportBacklog) {
        t.forReport.pop_front();
        ++t.reportDropped;
      }
      t.forReport.push_back(buf[i]);
    }
    if (n < 256) break;
  }
}

void Runtime::summarizeLocked(Tracked& t, int64_t intervalMs) {
  if (t.proxy != nullptr) {
    nlohmann::json paths = t.paths.take(*t.proxy, hexId(t.sink->commId()), intervalMs);
    if (!paths.is_null()) log_.post(std::move(paths));
  }
  std::vector<SummaryRow> rows = t.agg.takeSummary();
  SinkCounters c = t.sink->counters();
  uint64_t pool = c.droppedPoolExhausted - t.reported.droppedPoolExhausted;
  uint64_t ring = c.droppedRingFull - t.reported.droppedRingFull;
  uint64_t incomplete = c.droppedIncomplete - t.reported.droppedIncomplete;
  uint64_t orphan = c.orphanEvents - t.reported.orphanEvents;
  t.reported = c;
  if (rows.empty() && pool + ring + incomplete + orphan == 0) return;
  nlohmann::json jr = nlohmann::json::array();
  for (const auto& r : rows) {
    jr.push_back({{"coll", r.coll >= 0 ? std::string(collName(static_cast<CollType>(r.coll))) : "unknown"},
                  {"bucket", r.bucket},
                  {"min_bytes", r.bytesMin},
                  {"max_bytes", r.bytesMax},
                  {"algo", std::string(algoName(r.algo))},
                  {"proto", std::string(protoName(r.proto))},
                  {"channels", r.nChannels},
                  {"count", r.count},
                  {"p50_us", r.p50Us},
                  {"p99_us", r.p99Us},
                  {"busbw_gbs", r.busBwGBs}});
  }
  log_.post({{"event", "summary"},
             {"comm", hexId(t.sink->commId())},
             {"rank", t.sink->rank()},
             {"interval_ms", intervalMs},
             {"rows", jr},
             {"drops", {{"pool", pool}, {"ring", ring}, {"incomplete", incomplete}, {"orphan", orphan}}}});
}

void Runtime::run() {
  std::unique_lock<std::mutex> lock(mu_);
  while (!stop_) {
    cv_.wait_for(lock, kDrainPeriod);
    for (auto& t : sinks_) drainLocked(*t);
    auto now = std::chrono::steady_clock::now();
    auto elapsed = std::chrono::duration_cast<std::chrono::milliseconds>(now - lastSummary_).count();
    if (elapsed >= settings_.summaryMs) {
      for (auto& t : sinks_) summarizeLocked(*t, elapsed);
      lastSummary_ = now;
    }
  }
}

}  // namespace wirewise
