#include "common/units.h"

#include <cerrno>
#include <cinttypes>
#include <cmath>
#include <cstdio>
#include <cstdlib>

namespace wirewise {
namespace {

bool isSpace(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v'; }
bool isDigit(char c) { return c >= '0' && c <= '9'; }
char lower(char c) { return c >= 'A' && c <= 'Z' ? static_cast<char>(c - 'A' + 'a') : c; }

// The power of two a unit stands for, or -1.
int unitShift(std::string_view u) {
  if (u.empty() || u == "b") return 0;
  static constexpr std::string_view kPrefixes = "kmgt";
  const size_t p = kPrefixes.find(u.front());
  if (p == std::string_view::npos) return -1;
  const std::string_view rest = u.substr(1);
  if (!rest.empty() && rest != "b" && rest != "ib") return -1;
  return 10 * static_cast<int>(p + 1);
}

}  // namespace

std::string hexId(uint64_t id) {
  char buf[24];
  std::snprintf(buf, sizeof buf, "0x%016" PRIx64, id);
  return buf;
}

std::string durationText(double us) {
  char buf[32];
  if (us >= 1000)
    std::snprintf(buf, sizeof buf, "%.1f ms", us / 1000);
  else
    std::snprintf(buf, sizeof buf, "%.0f µs", us);
  return buf;
}

std::string signedDurationText(double us) {
  char buf[32];
  std::snprintf(buf, sizeof buf, std::fabs(us) >= 10 ? "%+.0f µs" : "%+.1f µs", us);
  return buf;
}

std::string bytesText(uint64_t bytes) {
  if (bytes == UINT64_MAX) return "max";
  static constexpr const char* kUnits[] = {"B", "KiB", "MiB", "GiB", "TiB", "PiB", "EiB"};
  int u = 0;
  while (u < 6 && bytes >= (uint64_t{1} << (10 * (u + 1)))) ++u;
  char buf[48];
  const uint64_t unit = uint64_t{1} << (10 * u);
  if (bytes % unit == 0) {
    std::snprintf(buf, sizeof buf, "%" PRIu64 " %s", bytes / unit, kUnits[u]);
    return buf;
  }
  std::snprintf(buf, sizeof buf, "%.2f", static_cast<double>(bytes) / static_cast<double>(unit));
  const std::string_view text(buf);
  if (text.size() > 3 && text.substr(text.size() - 3) == ".00")
    std::snprintf(buf, sizeof buf, "%" PRIu64 " B", bytes);
  else
    std::snprintf(buf, sizeof buf, "%.2f %s", static_cast<double>(bytes) / static_cast<double>(unit), kUnits[u]);
  return buf;
}

std::string bytesRangeText(uint64_t lo, uint64_t hi) { return bytesText(lo) + "-" + bytesText(hi); }

std::string roughBytesText(double bytes) {
  static constexpr const char* kUnits[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  int u = 0;
  while (bytes >= 1024 && u < 4) bytes /= 1024, ++u;
  char buf[32];
  std::snprintf(buf, sizeof buf, bytes >= 10 || bytes == std::floor(bytes) ? "%.0f %s" : "%.1f %s", bytes, kUnits[u]);
  return buf;
}

std::string percentText(double pct) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.0f%%", std::fabs(pct));
  return buf;
}

std::string finePercentText(double pct) {
  char buf[32];
  std::snprintf(buf, sizeof buf, std::fabs(pct) >= 10 ? "%.0f%%" : "%.1f%%", std::fabs(pct));
  return buf;
}

bool parseBytes(std::string_view text, uint64_t* bytes) {
  size_t i = 0;
  const size_t n = text.size();
  while (i < n && isSpace(text[i])) ++i;
  const size_t numStart = i;
  int dots = 0;
  for (; i < n && (isDigit(text[i]) || text[i] == '.'); ++i) dots += text[i] == '.';
  const std::string number(text.substr(numStart, i - numStart));
  if (number.empty() || dots > 1 || number == ".") return false;
  while (i < n && isSpace(text[i])) ++i;
  std::string unit;
  for (; i < n && !isSpace(text[i]); ++i) unit += lower(text[i]);
  while (i < n && isSpace(text[i])) ++i;
  if (i != n) return false;
  const int shift = unitShift(unit);
  if (shift < 0) return false;
  if (dots == 0) {
    // Whole numbers exactly, beyond what a double holds.
    errno = 0;
    const unsigned long long v = std::strtoull(number.c_str(), nullptr, 10);
    if (errno != 0 || (shift > 0 && v > (UINT64_MAX >> shift))) return false;
    *bytes = static_cast<uint64_t>(v) << shift;
    return true;
  }
  const double v = std::strtod(number.c_str(), nullptr) * std::ldexp(1.0, shift);
  if (!(v >= 0) || v >= 18446744073709551615.0) return false;
  *bytes = static_cast<uint64_t>(v);
  return true;
}

}  // namespace wirewise
