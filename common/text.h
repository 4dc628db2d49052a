// Text that leaves the process — log lines, wire fields, NCCL's log — is printable ASCII: a name or a reason
// from a peer, a file or sysfs is never trusted to be. One definition of "printable" for every component.
#pragma once

#include <string>
#include <string_view>

namespace wirewise {

constexpr bool isPrintableAscii(char c) { return c >= 0x20 && c <= 0x7e; }

constexpr bool isPrintableAscii(std::string_view s) {
  for (char c : s)
    if (!isPrintableAscii(c)) return false;
  return true;
}

// s with every byte outside printable ASCII replaced by `standIn`.
inline std::string printableOnly(std::string s, char standIn = '?') {
  for (char& c : s)
    if (!isPrintableAscii(c)) c = standIn;
  return s;
}

}  // namespace wirewise
