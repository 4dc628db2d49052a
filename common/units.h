// Numbers as a reader of a log line, a WARN or a table thinks of them: one spelling per unit for every
// component ("µs", never "us"; "KiB", never "KB"), so that texts written in one place and read or grepped in
// another agree. None of these is for a hot path: each returns a fresh std::string.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

namespace wirewise {

// "0x00000000000be7c4": a communicator id (or any 64-bit id) as every log line and WARN spells it.
std::string hexId(uint64_t id);

// "40 µs", "999 µs", "2.0 ms": a duration given in microseconds, switching to ms from 1000 µs.
std::string durationText(double us);
// "+37 µs", "-3.2 µs": a change of duration, signed, one decimal below 10 µs in magnitude.
std::string signedDurationText(double us);

// Exact sizes, for range edges: "0 B", "1023 B", "64 KiB", "87.89 KiB", "1.50 MiB", "1 GiB"; UINT64_MAX is
// "max" (an open-ended range). A value that would print as a whole unit without being one (65537 would be
// "64.00 KiB") prints in bytes, so that an edge one byte off a power of two never looks like the power.
std::string bytesText(uint64_t bytes);
// "0 B-64 KiB": both ends inclusive, as rules and ranges are.
std::string bytesRangeText(uint64_t lo, uint64_t hi);
// Approximate sizes, for prose: "4 KiB", "25 MiB", "1.5 KiB" (whole units from 10 up, else one decimal).
std::string roughBytesText(double bytes);

// "19%": a percentage's magnitude, whole (the words around it carry the sign: "19% slower").
std::string percentText(double pct);
// "9.5%", "19%": as percentText, with one decimal below 10%.
std::string finePercentText(double pct);

// A size a person types: "25165824", "24MiB", " 24 mib ", "64K", "1.5 KiB" (units B, K/KB/KiB .. T/TB/TiB,
// all binary, any case, spaces around). Whole numbers are exact up to UINT64_MAX. False on anything else,
// including a value that does not fit in 64 bits; *bytes is then unchanged.
bool parseBytes(std::string_view text, uint64_t* bytes);

}  // namespace wirewise
