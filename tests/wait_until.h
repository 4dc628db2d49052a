// Tests wait for a condition, never for a guessed duration: a guess is too short on a loaded machine and
// wasted time everywhere else. waitUntil returns as soon as pred() holds, or false once `timeout` passed
// with it still false (the caller asserts, so a broken condition fails instead of hanging).
#pragma once

#include <chrono>
#include <thread>

namespace wirewise {

// `poll`: how often pred() is asked; longer for a pred that reads files or the log.
template <class Pred, class Rep, class Period>
bool waitUntil(Pred&& pred, std::chrono::duration<Rep, Period> timeout,
               std::chrono::milliseconds poll = std::chrono::milliseconds(1)) {
  const auto deadline =
      std::chrono::steady_clock::now() + std::chrono::duration_cast<std::chrono::steady_clock::duration>(timeout);
  while (!pred()) {
    if (std::chrono::steady_clock::now() >= deadline) return pred();
    // A short nap rather than a spin: on a two-core box the thread being waited for needs the core.
    std::this_thread::sleep_for(poll);
  }
  return true;
}

}  // namespace wirewise
