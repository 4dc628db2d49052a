#include "telemetry/collectors/sysfs_util.h"

#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <cstring>

namespace wirewise::collectors {

int readSmallFile(const char* path, char* buf, int cap) {
  int fd = ::open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) return -1;
  int total = 0;
  while (total < cap - 1) {
    ssize_t n = ::read(fd, buf + total, static_cast<size_t>(cap - 1 - total));
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      ::close(fd);
      return -1;
    }
    if (n == 0) break;
    total += static_cast<int>(n);
  }
  ::close(fd);
  buf[total] = '\0';
  return total;
}

static std::string_view trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t' || s.front() == '\n' || s.front() == '\r')) {
    s.remove_prefix(1);
  }
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t' || s.back() == '\n' || s.back() == '\r')) {
    s.remove_suffix(1);
  }
  return s;
}

std::optional<uint64_t> parseU64(std::string_view text) {
  text = trim(text);
  if (text.empty() || text.size() > 20) return std::nullopt;
  uint64_t v = 0;
  for (char c : text) {
    if (c < '0' || c > '9') return std::nullopt;
    uint64_t d = static_cast<uint64_t>(c - '0');
    if (v > (UINT64_MAX - d) / 10) return std::nullopt;
    v = v * 10 + d;
  }
  return v;
}

bool pathExists(const std::string& path) {
  struct stat st;
  return ::stat(path.c_str(), &st) == 0;
}

double sumRate(const std::vector<std::string>& files, std::vector<CounterTrack>& tracks, double dt,
               bool countResets) {
  uint64_t total = 0;
  for (size_t i = 0; i < files.size(); ++i) {
    uint64_t d = 0;
    const CounterTrack::Step step = tracks[i].step(readU64(files[i]), &d);
    if (step == CounterTrack::Step::kDelta || step == CounterTrack::Step::kWrap32 ||
        (countResets && step == CounterTrack::Step::kReset)) {
      total += d;
    }
  }
  return dt > 0 ? static_cast<double>(total) / dt : 0.0;
}

std::optional<uint64_t> readU64(const std::string& path) {
  char buf[64];
  int n = readSmallFile(path.c_str(), buf, sizeof buf);
  if (n <= 0) return std::nullopt;
  return parseU64(std::string_view(buf, static_cast<size_t>(n)));
}

std::optional<std::string> readLine(const std::string& path) {
  char buf[256];
  int n = readSmallFile(path.c_str(), buf, sizeof buf);
  if (n < 0) return std::nullopt;
  std::string_view s(buf, static_cast<size_t>(n));
  if (auto nl = s.find('\n'); nl != std::string_view::npos) s = s.substr(0, nl);
  return std::string(trim(s));
}

std::vector<std::string> listDir(const std::string& path) {
  std::vector<std::string> out;
  DIR* d = ::opendir(path.c_str());
  if (!d) return out;
  while (dirent* e = ::readdir(d)) {
    if (std::strcmp(e->d_name, ".") == 0 || std::strcmp(e->d_name, "..") == 0) continue;
    out.emplace_back(e->d_name);
  }
  ::closedir(d);
  std::sort(out.begin(), out.end());
  return out;
}

std::optional<double> parseIbRate(std::string_view text) {
  text = trim(text);
  // "<number> Gb/sec (...)": the kernel prints the integer or one decimal ("2.5 Gb/sec (1X SDR)").
  size_t i = 0;
  double whole = 0, frac = 0, scale = 0.1;
  bool digits = false, dot = false;
  for (; i < text.size(); ++i) {
    char c = text[i];
    if (c >= '0' && c <= '9') {
      digits = true;
      if (dot) {
        frac += (c - '0') * scale;
        scale /= 10;
      } else {
        whole = whole * 10 + (c - '0');
      }
    } else if (c == '.' && !dot) {
      dot = true;
    } else {
      break;
    }
  }
  if (!digits) return std::nullopt;
  std::string_view rest = trim(text.substr(i));
  if (rest.substr(0, 6) != "Gb/sec") return std::nullopt;
  double gbps = whole + frac;
  if (!(gbps > 0) || gbps > 1e6) return std::nullopt;
  return gbps * 1e9 / 8.0;
}

std::optional<int> parseIbState(std::string_view text) {
  text = trim(text);
  auto colon = text.find(':');
  if (colon == std::string_view::npos) return std::nullopt;
  auto v = parseU64(text.substr(0, colon));
  if (!v || *v > 15) return std::nullopt;
  return static_cast<int>(*v);
}

CounterTrack::Step CounterTrack::step(std::optional<uint64_t> raw, uint64_t* delta) {
  *delta = 0;
  if (!raw) {
    have = false;
    ++missing;
    return Step::kMissing;
  }
  uint64_t cur = *raw;
  if (!have) {
    have = true;
    last = cur;
    return Step::kFirst;
  }
  uint64_t prev = last;
  last = cur;
  constexpr uint64_t kMax32 = 0xFFFFFFFFull;
  if (cur >= prev) {
    if (cur == kMax32 && prev == kMax32) return Step::kSaturated;
    *delta = cur - prev;
    return Step::kDelta;
  }
  // Backwards. A 32-bit counter that was in its upper half and is now small has wrapped; anything
  // else is a reset (cleared by perfquery -R, driver reload) and the interval is unusable for rates.
  if (prev <= kMax32 && prev > (kMax32 >> 1) && cur < (kMax32 >> 1)) {
    ++wraps;
    *delta = (kMax32 - prev) + cur + 1;
    return Step::kWrap32;
  }
  ++resets;
  *delta = cur;
  return Step::kReset;
}

void RateMeter::update(std::optional<uint64_t> raw, double dtSeconds, double scale, double tauSeconds) {
  uint64_t delta = 0;
  lastStep = counter.step(raw, &delta);
  if (lastStep != CounterTrack::Step::kDelta && lastStep != CounterTrack::Step::kWrap32) return;
  if (!(dtSeconds > 0)) return;
  lastRate = static_cast<double>(delta) * scale / dtSeconds;
  if (!valid || !(tauSeconds > 0)) {
    smoothed = lastRate;
    valid = true;
    return;
  }
  double alpha = 1.0 - std::exp(-dtSeconds / tauSeconds);
  smoothed += alpha * (lastRate - smoothed);
}

}  // namespace wirewise::collectors
