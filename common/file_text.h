// A small text file read whole, with a bound: configuration files and the like, read once at init by the
// layers that may do I/O (runtime/, tools/), so that the parsers they hand the text to stay pure.
#pragma once

#include <cstddef>
#include <string>

namespace wirewise {

struct FileText {
  enum class Status { kOk, kCannotOpen, kCannotRead, kTooLarge };
  Status status = Status::kOk;
  std::string text;   // the whole file when kOk; empty otherwise
  std::string error;  // "" when kOk; else "cannot open: <strerror>", "cannot read: <strerror>",
                      // "larger than 16 MiB" (the bound, common/units.h bytesText) or "internal error ..."
  bool ok() const { return status == Status::kOk; }
};

// Never throws. Reads at most maxBytes + 1 bytes, so that a FIFO or /dev/zero named by mistake can neither
// hang nor exhaust the caller: a longer file is kTooLarge.
FileText readFileText(const std::string& path, size_t maxBytes) noexcept;

}  // namespace wirewise
