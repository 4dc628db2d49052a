// Small, allocation-free readers for sysfs-style text files, and the counter arithmetic every collector
// shares (deltas of cumulative counters that may wrap, saturate, reset or vanish). The collectors run on
// a background sampler thread, never on NCCL's hot path, but a pass should still be cheap: one
// open/read/close per file into a stack buffer.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace wirewise::collectors {

// Reads at most cap-1 bytes of `path` into buf (NUL-terminated); returns the length, or -1 if the file
// cannot be opened or read (missing, permission, EIO from a driver).
int readSmallFile(const char* path, char* buf, int cap);

// "12345\n" -> 12345. Anything else (empty, negative, trailing garbage, overflow) -> nullopt.
std::optional<uint64_t> parseU64(std::string_view text);
std::optional<uint64_t> readU64(const std::string& path);

// Trimmed first line of a text file, or nullopt when it is unreadable.
std::optional<std::string> readLine(const std::string& path);

// Whether anything exists at path (file or directory).
bool pathExists(const std::string& path);

// Names in a directory (no "." / ".."), sorted; empty when the directory is missing.
std::vector<std::string> listDir(const std::string& path);

// IB `rate` file, "400 Gb/sec (4X NDR)" -> 5e10 bytes/s; garbage -> nullopt.
std::optional<double> parseIbRate(std::string_view text);
// IB `state` file, "4: ACTIVE" -> 4; garbage -> nullopt.
std::optional<int> parseIbState(std::string_view text);

// One cumulative counter. step() turns a new raw reading into an increment since the last reading.
struct CounterTrack {
  enum class Step {
    kFirst,      // first reading (or first after the counter came back): baseline only
    kDelta,      // normal increment
    kWrap32,     // a 32-bit counter wrapped past 2^32; the increment accounts for it
    kReset,      // went backwards without looking like a 32-bit wrap (cleared, driver reload): re-baseline
    kSaturated,  // stuck at 2^32-1 (IB legacy PortCounters saturate): increment unknown
    kMissing,    // file vanished or unparsable: increment unknown, re-baseline when it returns
  };
  uint64_t last = 0;
  bool have = false;
  uint64_t wraps = 0, resets = 0, missing = 0;

  // Returns the step kind; *delta is set for kDelta/kWrap32 (and for kReset to the value since the
  // reset, which error counters may count, but a rate must not, since the reset time is unknown).
  Step step(std::optional<uint64_t> raw, uint64_t* delta);
};

// Sum of the increments of a set of counters since their last readings, per second (0 when dt is
// unknown). tracks[i] follows files[i]. countResets adds the value since a reset too (error counters,
// where an error after a reset is still an error; see CounterTrack::step).
double sumRate(const std::vector<std::string>& files, std::vector<CounterTrack>& tracks, double dt,
               bool countResets);

// A rate derived from a counter: last-interval rate and an exponentially smoothed estimate with a
// time constant tau (irregular intervals handled with alpha = 1 - exp(-dt/tau)).
struct RateMeter {
  CounterTrack counter;
  double lastRate = 0;   // units per second over the last valid interval
  double smoothed = 0;   // EWMA of lastRate
  bool valid = false;    // smoothed holds at least one interval
  CounterTrack::Step lastStep = CounterTrack::Step::kFirst;

  // scale converts counter units to reported units (4 for IB data words -> bytes).
  void update(std::optional<uint64_t> raw, double dtSeconds, double scale, double tauSeconds);
};

}  // namespace wirewise::collectors
