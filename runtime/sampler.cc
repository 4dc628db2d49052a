#include "runtime/sampler.h"

#include "common/log_events.h"
#include "common/settings.h"
#include "control/wire.h"
#include "runtime/link_notes.h"
#include "runtime/log.h"
#include "telemetry/collectors/collector_set.h"
#include "telemetry/wiring/prior.h"

namespace wirewise {

Sampler::Sampler(std::unique_ptr<collectors::CollectorSet> collectors, SamplerOptions options, PostFn post,
                 SteadyClock clock)
    : collectors_(std::move(collectors)), options_(std::move(options)), post_(std::move(post)),
      clock_(std::move(clock)) {}

Sampler::~Sampler() { stop(); }

void Sampler::start() { thread_ = std::thread([this] { loop(); }); }

void Sampler::stop() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stop_ = true;
  }
  cv_.notify_all();
  if (thread_.joinable()) thread_.join();
}

std::vector<adapt::LinkNote> Sampler::linkNotes() const {
  std::lock_guard<std::mutex> links(linksMu_);
  return linkNotes_;
}

void Sampler::loop() {
  std::unique_lock<std::mutex> lock(mu_);
  while (!stop_) {
    lock.unlock();
    try {
      step(clock_());
    } catch (const std::exception& e) {
      WW_WARN(NCCL_NET, "link collectors failed (%s); link health stops here", e.what());
      return;
    }
    lock.lock();
    cv_.wait_for(lock, options_.period, [this] { return stop_; });
  }
}

void Sampler::step(SteadyTime now) {
  collectors_->sample(now);
  collectors::LinkHealthSnapshot snap = collectors_->snapshot();
  snap.links.insert(snap.links.end(), options_.wiringPrior.begin(), options_.wiringPrior.end());
  if (RailSource source = options_.railSource ? options_.railSource() : nullptr) {
    std::vector<collectors::LinkHealth> rails = rails_.update(source(), stampNs(now));
    snap.links.insert(snap.links.end(), rails.begin(), rails.end());
    for (const nlohmann::json& shift : rails_.takeShifts()) {
      logev::RailShift ev = shift.get<logev::RailShift>();
      ev.host = options_.host;
      post_(ev);
    }
  }
  std::vector<logev::LinkEntry> changed;
  std::vector<adapt::LinkNote> notes;
  for (const auto& l : snap.links) {
    int st = static_cast<int>(l.state);
    auto [it, fresh] = states_.try_emplace(l.id, st);
    if (fresh || it->second != st) changed.push_back(collectors::logEntry(l));
    it->second = st;
    if (l.state == collectors::LinkState::kUp) everUp_.insert(l.id);
    if (notes.size() >= control::kMaxReportLinks) continue;
    if (auto n = linkNoteFor(options_.host, l, everUp_.count(l.id) > 0)) notes.push_back(std::move(*n));
  }
  {
    std::lock_guard<std::mutex> links(linksMu_);
    linkNotes_ = std::move(notes);
  }
  // logev::LinkHealth has no "reason": the sampler is its only writer of one, so it adds the key here.
  if (!lastFull_ || now - *lastFull_ >= options_.fullEvery) {
    nlohmann::json ev = collectors::logEvent(snap);
    ev["reason"] = "periodic";
    post_(std::move(ev));
    if (nlohmann::json k = collectors_->cuptiReport(); !k.is_null()) post_(std::move(k));
    lastFull_ = now;
  } else if (!changed.empty()) {
    logev::LinkHealth typed = collectors::logEvent(snap);
    typed.links = std::move(changed);
    nlohmann::json ev = typed;
    ev["reason"] = "changed";
    post_(std::move(ev));
  }
  passes_.fetch_add(1, std::memory_order_release);
}

// The map is one host's measurement: another host's pairs would name the wrong GPUs, so a map that says
// it is from elsewhere is refused. Its flags are WARNs: a weak pair is worth a look before the job runs long.
std::vector<collectors::LinkHealth> loadWiringLinks(const std::string& path, const std::string& host,
                                                    int64_t nowNs, const PostFn& post) {
  if (path.empty()) return {};
  wiring::WiringPrior prior;
  std::string error;
  if (!wiring::loadWiringPrior(path, nowNs, &prior, &error)) {
    const char* name = settingName(&Settings::wiring);
    WW_WARN(NCCL_INIT | NCCL_ENV, "%s: %s; continuing without a wiring prior (fix the file or unset %s)", name,
            error.c_str(), name);
    return {};
  }
  if (!prior.host.empty() && prior.host != host) {
    const char* name = settingName(&Settings::wiring);
    WW_WARN(NCCL_INIT | NCCL_ENV, "%s=%s was measured on host %s, this is %s: ignored (give each host its own map, "
            "e.g. %s=/maps/%%h.json)", name, path.c_str(), prior.host.c_str(), host.c_str(), name);
    return {};
  }
  for (const std::string& f : prior.flags) WW_WARN(NCCL_INIT, "wiring map %s: %s", path.c_str(), f.c_str());
  post(logev::WiringPrior{.file = path, .links = prior.links.size(), .flags = prior.flags});
  return std::move(prior.links);
}

}  // namespace wirewise
