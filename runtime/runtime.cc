#include "runtime/runtime.h"

#include <unistd.h>

#include <atomic>
#include <map>
#include <mutex>

#include "common/log_events.h"
#include "control/control_plane.h"
#include "runtime/control_wiring.h"
#include "runtime/log.h"
#include "runtime/metrics.h"
#include "runtime/metrics_http.h"
#include "runtime/metrics_textfile.h"
#include "runtime/sink_tracker.h"
#include "telemetry/collectors/collector_set.h"
#include "telemetry/launch_ring.h"

namespace wirewise {
namespace {

// Guarded by gMu. Heap-allocated on purpose: no static destructor races the background threads at exit.
std::mutex gMu;
Runtime* gRuntime = nullptr;
int gRefs = 0;

// KernelLaunch records held for the CUPTI collector between two sampler passes (48 B each: 3 MiB).
constexpr size_t kLaunchRingSize = 1 << 16;

std::string hostName() {
  char buf[256] = {};
  if (gethostname(buf, sizeof buf - 1) != 0) return "unknown-host";
  return buf;
}


// Set once by the net face (or a test); read by the sampler.
std::atomic<Runtime::RailSource> gRailSource{nullptr};

// At unload or exit with comms never finalized: stop the threads while their code is still mapped.
__attribute__((destructor)) void stopAtUnload() {
  std::lock_guard<std::mutex> lock(gMu);
  if (gRuntime != nullptr) gRuntime->stopThread();
}

}  // namespace

void Runtime::setRailSource(RailSource source) { gRailSource.store(source, std::memory_order_release); }

std::vector<adapt::LinkNote> Runtime::linkNotes() {
  return sampler_ ? sampler_->linkNotes() : std::vector<adapt::LinkNote>{};
}

Runtime* Runtime::acquire(const EnvSource& env, std::optional<logev::Face> by) {
  std::lock_guard<std::mutex> lock(gMu);
  if (gRuntime == nullptr) gRuntime = new Runtime(env, by);
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

Runtime::Runtime(const EnvSource& env, std::optional<logev::Face> by) : host_(hostName()) {
  std::vector<std::string> warnings;
  settings_ = readSettings(env, host_, static_cast<long>(getpid()), &warnings);
  for (const auto& w : warnings) WW_WARN(NCCL_INIT | NCCL_ENV, "%s", w.c_str());
  // The default lies in a directory of a shared /tmp: it must be this user's own. A path the user chose
  // may be a shared one (a project's log directory); its file is still checked.
  const char* logSetting = env(settingName(&Settings::logPath));
  const bool defaultLog = logSetting == nullptr || *logSetting == '\0';
  const LogRotation rotation{static_cast<uint64_t>(settings_.logMaxMb) << 20, static_cast<int>(settings_.logKeep)};
  log_ = std::make_unique<AdaptationLog>(settings_.logPath, static_cast<size_t>(settings_.logQueue), defaultLog,
                                         rotation);
  if (!settings_.logPath.empty() && !log_->ok())
    WW_WARN(NCCL_INIT, "the adaptation log is off: %s (or set %s to another path, or to 'none')", log_->error().c_str(),
            settingName(&Settings::logPath));
  if (by == logev::Face::Profiler) noteProfilerFace();
  // First in the log: the parts below may post (a refused key file does).
  logev::PluginStart start;
  start.version = WIREWISE_VERSION;
  start.host = host_;
  start.settings = settingsEcho(settings_).get<std::map<std::string, std::string>>();
  if (by) start.profilerFace = *by == logev::Face::Profiler;
  if (settings_.prometheusPort > 0 || !settings_.prometheusDir.empty()) startMetrics(env);
  event(start);
  WW_INFO(NCCL_INIT, "version %s, mode %s, log %s", WIREWISE_VERSION, std::string(enumName(settings_.mode)).c_str(),
          settings_.logPath.empty() || !log_->ok() ? "disabled" : settings_.logPath.c_str());
  const PostFn post = [this](nlohmann::json ev) { event(std::move(ev)); };

  sinks_ = std::make_unique<SinkTracker>(post, steadyNow, std::chrono::milliseconds(settings_.summaryMs));
  control_ = std::make_unique<ControlWiring>(
      settings_, config_, env,
      ControlHooks{post, [this] { return linkNotes(); }, sinks_.get()});

  if (!settings_.config.empty()) {
    config_ = parseConfigFile(settings_.config, readFileText(settings_.config, kMaxConfigBytes));
    for (const auto& p : config_.problems) {
      if (p.warningOnly)
        WW_INFO(NCCL_INIT | NCCL_TUNING, "%s:%d: %s", p.file.c_str(), p.line, p.reason.c_str());
      else
        WW_WARN(NCCL_INIT | NCCL_TUNING, "%s:%d: %s (line skipped)", p.file.c_str(), p.line, p.reason.c_str());
      log_->post(logev::ConfigProblem{.file = p.file, .reason = p.reason, .line = p.line, .warning = p.warningOnly});
    }
  }
  sinks_->start();
  if (settings_.mode != Mode::Off && settings_.collectMs > 0) startSampler(env);
}

void Runtime::startSampler(const EnvSource& env) {
  try {
    collectors::CollectorConfig cc;
    cc.sysfsRoot = settings_.sysfsRoot;
    cc.cupti = settings_.cupti;
    if (settings_.cupti) launches_ = std::make_unique<LaunchRing>(kLaunchRingSize);
    cc.launches = launches_.get();
    cc.periodMs = static_cast<uint32_t>(settings_.collectMs);
    if (const char* hca = env("NCCL_IB_HCA"); hca && *hca) cc.ibHca = hca;
    auto collectors = collectors::CollectorSet::create(cc, [](const std::string& line) {
      WW_INFO(NCCL_INIT | NCCL_NET, "collectors: %s", line.c_str());
    });
    if (!collectors->cuptiAttributes()) launches_.reset();  // nobody drains it: profilers record nothing
    WW_INFO(NCCL_INIT | NCCL_NET, "link collectors every %lld ms: %s", static_cast<long long>(settings_.collectMs),
            collectors->statusLine().c_str());
    log_->post(logev::Collectors{.periodMs = settings_.collectMs, .status = collectors->statusLine()});
    const PostFn post = [this](nlohmann::json ev) { event(std::move(ev)); };
    SamplerOptions o;
    o.host = host_;
    o.period = std::chrono::milliseconds(settings_.collectMs);
    o.fullEvery = std::chrono::milliseconds(settings_.summaryMs);
    o.wiringPrior = loadWiringLinks(settings_.wiring, host_, stampNs(steadyNow()), post);
    o.railSource = [] { return gRailSource.load(std::memory_order_acquire); };
    sampler_ = std::make_unique<Sampler>(std::move(collectors), std::move(o), post, steadyNow);
    sampler_->start();
  } catch (const std::exception& e) {
    sampler_.reset();
    launches_.reset();
    WW_WARN(NCCL_INIT | NCCL_NET, "link collectors could not start (%s); continuing without link health", e.what());
  }
}

void Runtime::startMetrics(const EnvSource& env) {
  try {
    metrics_ = std::make_unique<Metrics>();
    Metrics* m = metrics_.get();
    const auto render = [m] { return m->render(); };
    if (settings_.prometheusPort > 0) {
      const int local = launcherLocalRank(env).value_or(0);
      const int64_t port = settings_.prometheusPort + local;
      const char* name = settingName(&Settings::prometheusPort);
      std::string problem = "port " + std::to_string(port) + " is past 65535";
      http_ = std::make_unique<MetricsHttp>(render);
      if (port > 65535 || !http_->start(static_cast<uint16_t>(port), &problem)) {
        http_.reset();
        WW_WARN(NCCL_INIT | NCCL_ENV,
                "the Prometheus endpoint is off: %s (%s=%lld plus local rank %d); set %s to a base port that is "
                "free for every local rank of this node, or to 0",
                problem.c_str(), name, static_cast<long long>(settings_.prometheusPort), local, name);
      } else {
        WW_INFO(NCCL_INIT, "Prometheus metrics on http://*:%u/metrics", static_cast<unsigned>(http_->port()));
      }
    }
    if (!settings_.prometheusDir.empty()) {
      const auto warn = [](const std::string& p) { WW_WARN(NCCL_INIT, "Prometheus textfile: %s", p.c_str()); };
      textfile_ = std::make_unique<MetricsTextfile>(render, warn, settings_.prometheusDir, host_,
                                                    static_cast<long>(getpid()),
                                                    std::chrono::milliseconds(settings_.summaryMs));
      std::string problem;
      if (!textfile_->start(&problem)) {
        textfile_.reset();
        WW_WARN(NCCL_INIT | NCCL_ENV, "the Prometheus textfile is off: %s (or set %s to another directory)",
                problem.c_str(), settingName(&Settings::prometheusDir));
      }
    }
  } catch (...) {
    // Memory or threads ran out: the job runs on without metrics, never fails for them.
    textfile_.reset();
    http_.reset();
    WW_WARN(NCCL_INIT, "Prometheus metrics could not start (out of memory or threads); continuing without them");
  }
  // No output runs: nothing would ever read the metrics, so no event pays for them.
  if (!textfile_ && !http_) metrics_.reset();
}

void Runtime::event(nlohmann::json ev) {
  if (metrics_) metrics_->observe(ev);
  log_->post(std::move(ev));
}

control::ControlPlane* Runtime::controlPlane() { return control_->plane(); }

void Runtime::addSink(EventSink* sink, const ProxySink* proxy) { sinks_->add(sink, proxy); }

void Runtime::removeSink(EventSink* sink) { sinks_->remove(sink); }

Runtime::~Runtime() {
  stopThread();
  log_->post(logev::PluginStop{.logDropped = log_->dropped()});
  // The parts go in reverse order of declaration; log_'s destructor then flushes and joins its writer.
}

void Runtime::stopThread() {
  // The control plane's I/O thread goes first: it posts events to the log and reads the sinks.
  control_->stop();
  sinks_->stop();
  if (sampler_) sampler_->stop();
  // Last: the final summaries above are in the metrics, and the textfile's last version has them.
  if (http_) http_->stop();
  if (textfile_) textfile_->stop();
}

RuntimeRef RuntimeRef::acquire(const EnvSource& env, std::optional<logev::Face> by) {
  RuntimeRef r;
  r.rt_ = Runtime::acquire(env, by);
  r.owns_ = true;
  return r;
}

RuntimeRef RuntimeRef::adopt() {
  RuntimeRef r;
  {
    std::lock_guard<std::mutex> lock(gMu);
    r.rt_ = gRuntime;
  }
  r.owns_ = true;
  return r;
}

RuntimeRef& RuntimeRef::operator=(RuntimeRef&& o) noexcept {
  if (this != &o) {
    reset();
    rt_ = o.rt_, owns_ = o.owns_;
    o.rt_ = nullptr, o.owns_ = false;
  }
  return *this;
}

Runtime* RuntimeRef::keep() {
  owns_ = false;
  return rt_;
}

void RuntimeRef::reset() {
  if (owns_) Runtime::release();
  rt_ = nullptr;
  owns_ = false;
}

}  // namespace wirewise
