// A Sampler over a fake sysfs tree, read by the production collectors, whose events land in a vector:
// tests step it at times of their choosing instead of starting its thread.
#pragma once

#include <chrono>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include <nlohmann/json.hpp>

#include "runtime/sampler.h"
#include "telemetry/collectors/collector_set.h"
#include "tests/telemetry/collectors/fake_sysfs.h"

namespace wirewise::testing {

inline std::unique_ptr<collectors::CollectorSet> fakeCollectors(const collectors::testing::FakeSysfs& sys) {
  collectors::CollectorConfig cc;
  cc.sysfsRoot = sys.root();
  cc.nvml = false;  // the machine's GPUs are no part of a fake tree
  return collectors::CollectorSet::create(cc, [](const std::string&) {});
}

struct SamplerHarness {
  explicit SamplerHarness(const collectors::testing::FakeSysfs& sys, SamplerOptions o = {}) {
    if (o.host.empty()) o.host = "node7";
    sampler = std::make_unique<Sampler>(
        fakeCollectors(sys), std::move(o), [this](nlohmann::json ev) { events.push_back(std::move(ev)); },
        [] { return SteadyTime{}; });  // never read: the tests step with their own times
  }
  // The link_health events posted so far with this reason.
  std::vector<nlohmann::json> linkHealth(const std::string& reason) const {
    std::vector<nlohmann::json> out;
    for (const auto& e : events)
      if (e.value("event", "") == "link_health" && e.value("reason", "") == reason) out.push_back(e);
    return out;
  }
  std::vector<nlohmann::json> events;
  std::unique_ptr<Sampler> sampler;
};

// Uptimes a machine may have when a job starts: just booted, a minute, ten days.
inline const std::vector<std::chrono::steady_clock::duration>& uptimes() {
  static const std::vector<std::chrono::steady_clock::duration> u = {
      std::chrono::seconds(0), std::chrono::seconds(60), std::chrono::hours(24 * 10)};
  return u;
}

// Waits for a real thread's progress without sleeping a fixed time: false when `limit` passed first.
template <class Done>
bool waitUntil(Done done, std::chrono::milliseconds limit = std::chrono::milliseconds(10000)) {
  const auto end = std::chrono::steady_clock::now() + limit;
  while (!done()) {
    if (std::chrono::steady_clock::now() > end) return false;
    std::this_thread::yield();
  }
  return true;
}

}  // namespace wirewise::testing
