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

// Text for HTML or SVG (XML), in element content and in quoted attribute values: & < > " and ' as entities
// (&#39;, which both languages read). Every page and drawing the tools write escapes through this.
inline std::string markupEscape(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  for (char ch : text) {
    switch (ch) {
      case '&': out += "&amp;"; break;
      case '<': out += "&lt;"; break;
      case '>': out += "&gt;"; break;
      case '"': out += "&quot;"; break;
      case '\'': out += "&#39;"; break;
      default: out += ch;
    }
  }
  return out;
}

}  // namespace wirewise
