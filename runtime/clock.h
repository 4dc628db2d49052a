// The runtime's clocks are injected: the sampler and the sink tracker take "now" from a SteadyClock, so
// that tests drive them pass by pass, at any uptime, without sleeping. Production passes steadyNow.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>

namespace wirewise {

using SteadyTime = std::chrono::steady_clock::time_point;
using SteadyClock = std::function<SteadyTime()>;

inline SteadyTime steadyNow() { return std::chrono::steady_clock::now(); }

// The collectors' and the link-health model's time stamps (LinkHealth::lastChangeNs, "time_ns" in the
// log) are nanoseconds on this clock. Stamps only: an interval is a difference of two such stamps, never
// a stamp alone (the clock's epoch is the machine's boot, not the job's start).
inline int64_t stampNs(SteadyTime t) {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(t.time_since_epoch()).count();
}

}  // namespace wirewise
