// NCCL's example tuner CSV (ext-tuner/example, nccl_tuner.conf):
//   coll,min_bytes,max_bytes,algo,proto,channels,nNodes,nRanks[,numPipeOps[,regBuff]]
// Same meaning as the example, with its traps fixed: unknown names and malformed numbers are reported
// instead of silently becoming allreduce/ring/simple/0, and numPipeOps/regBuff never select a rule.
#include <optional>
#include <string>

#include "adaptive/config.h"

namespace wirewise {
namespace {

using config_detail::quote;

constexpr const char* kFieldNames[] = {"coll",     "min_bytes", "max_bytes", "algo",       "proto",
                                       "channels", "nNodes",    "nRanks",    "numPipeOps", "regBuff"};

std::string_view trim(std::string_view s) {
  auto blank = [](char c) { return c == ' ' || c == '\t' || c == '\r' || c == '\v' || c == '\f'; };
  while (!s.empty() && blank(s.front())) s.remove_prefix(1);
  while (!s.empty() && blank(s.back())) s.remove_suffix(1);
  return s;
}

// Strict decimal: an optional '-', then digits only (no '+', spaces, hex or exponent), within 64 bits.
struct Number {
  bool negative;
  uint64_t magnitude;
};

std::optional<Number> parseNumber(std::string_view s, std::string* why) {
  bool neg = !s.empty() && s.front() == '-';
  std::string_view digits = neg ? s.substr(1) : s;
  uint64_t v = 0;
  for (char c : digits) {
    if (c < '0' || c > '9') return *why = quote(s) + " is not a number", std::nullopt;
    if (v > (UINT64_MAX - uint64_t(c - '0')) / 10) return *why = quote(s) + " does not fit in 64 bits", std::nullopt;
    v = v * 10 + uint64_t(c - '0');
  }
  if (digits.empty()) return *why = quote(s) + " is not a number", std::nullopt;
  return Number{neg && v != 0, v};
}

// A byte count: 0..UINT64_MAX, or -1, which reads as UINT64_MAX exactly as strtoull does in the example.
std::optional<uint64_t> parseSize(std::string_view s, std::string* why) {
  if (s == "-1") return UINT64_MAX;
  auto v = parseNumber(s, why);
  if (v && v->negative) return *why = quote(s) + " is negative (only -1 is allowed)", std::nullopt;
  return v ? std::optional<uint64_t>(v->magnitude) : std::nullopt;
}

// An integer in [lo, hi]; zero is refused unless zeroOk (a count of 0 nodes would never match).
std::optional<int64_t> parseRange(std::string_view s, int64_t lo, int64_t hi, bool zeroOk, const char* allowed,
                                  std::string* why) {
  auto v = parseNumber(s, why);
  if (!v) return std::nullopt;
  bool fits = v->magnitude <= uint64_t{INT32_MAX};  // every ranged field is an int in NCCL
  auto value = fits ? (v->negative ? -static_cast<int64_t>(v->magnitude) : static_cast<int64_t>(v->magnitude)) : 0;
  if (!fits || value < lo || value > hi || (value == 0 && !zeroOk)) {
    return *why = quote(s) + " is out of range (" + allowed + ")", std::nullopt;
  }
  return value;
}

}  // namespace

ParsedConfig parseCsvConfig(std::string_view text, std::string_view sourceName) {
  ParsedConfig cfg;
  cfg.source = std::string(sourceName);
  cfg.format = "csv";
  bool warnedPipe = false, warnedFourGiB = false;
  if (text.starts_with("\xEF\xBB\xBF")) text.remove_prefix(3);  // a UTF-8 BOM from spreadsheet exports
  int lineNo = 0;
  while (!text.empty()) {
    size_t eol = text.find('\n');
    std::string_view line = text.substr(0, eol);
    text.remove_prefix(eol == std::string_view::npos ? text.size() : eol + 1);
    ++lineNo;
    line = trim(line.substr(0, line.find('#')));  // '#' starts a comment anywhere; names never hold one
    if (line.empty()) continue;
    auto problem = [&](std::string reason, bool warningOnly = false) {
      cfg.problems.push_back(ConfigProblem{cfg.source, lineNo, std::move(reason), warningOnly});
    };

    std::string_view f[10];
    size_t n = 0;
    for (size_t pos = 0;; ++n) {
      size_t comma = line.find(',', pos);
      if (n < 10) f[n] = trim(line.substr(pos, comma == std::string_view::npos ? comma : comma - pos));
      if (comma == std::string_view::npos) break;
      pos = comma + 1;
    }
    ++n;
    if (n < 8 || n > 10) {
      problem("expected 8 to 10 comma-separated fields (coll,min_bytes,max_bytes,algo,proto,channels,nNodes,"
              "nRanks[,numPipeOps[,regBuff]]), found " + std::to_string(n));
      continue;
    }
    std::string why;
    auto fail = [&](size_t field) { problem(std::string(kFieldNames[field]) + ": " + why); };
    size_t empty = 0;
    while (empty < n && !f[empty].empty()) ++empty;
    if (empty < n) {
      why = "empty field";
      fail(empty);
      continue;
    }
    int coll = parseColl(f[0]);
    if (coll == -2) {
      problem("unknown collective " + quote(f[0]) + " (broadcast, reduce, allgather, reducescatter, allreduce, -1)");
      continue;
    }
    auto minBytes = parseSize(f[1], &why);
    if (!minBytes) { fail(1); continue; }
    auto maxBytes = parseSize(f[2], &why);
    if (!maxBytes) { fail(2); continue; }
    if (*minBytes > *maxBytes) {
      problem("min_bytes " + std::string(f[1]) + " > max_bytes " + std::string(f[2]) + ": the rule covers nothing");
      continue;
    }
    int algo = parseAlgo(f[3]);
    if (algo == -2) {
      problem("unknown algorithm " + quote(f[3]) +
              " (tree, ring, collnet_direct, collnet_chain, nvls, nvls_tree, pat, -1)");
      continue;
    }
    int proto = parseProto(f[4]);
    if (proto == -2) {
      problem("unknown protocol " + quote(f[4]) + " (ll, ll128, simple, -1)");
      continue;
    }
    constexpr const char* kCount = "-1 or a positive count";
    auto channels = parseRange(f[5], -1, kMaxChannels, true, "-1..64", &why);
    if (!channels) { fail(5); continue; }
    auto nNodes = parseRange(f[6], -1, INT32_MAX, false, kCount, &why);
    if (!nNodes) { fail(6); continue; }
    auto nRanks = parseRange(f[7], -1, INT32_MAX, false, kCount, &why);
    if (!nRanks) { fail(7); continue; }
    std::optional<int64_t> pipeOps = -1, regBuff = -1;
    if (n >= 9 && !(pipeOps = parseRange(f[8], -1, INT32_MAX, false, kCount, &why))) { fail(8); continue; }
    if (n == 10 && !(regBuff = parseRange(f[9], -1, 1, true, "-1, 0 or 1", &why))) { fail(9); continue; }

    if (*minBytes == UINT64_MAX && f[1] == "-1") {
      problem("min_bytes -1 reads as 18446744073709551615 (as in NCCL's example): this rule matches no real "
              "size; write 0 for no lower bound", true);
    }
    if (*maxBytes == 4294967295ULL && !warnedFourGiB) {
      warnedFourGiB = true;
      problem("max_bytes 4294967295 ends at 4 GiB - 1: larger messages are not covered (NCCL's example "
              "README calls it 'all sizes'); write -1 for no upper bound", true);
    }
    if ((*pipeOps != -1 || *regBuff != -1) && !warnedPipe) {
      warnedPipe = true;
      problem("numPipeOps/regBuff are ignored in this file: they are rank-local, so a decision keyed on them "
              "could differ across ranks and hang the job; these rules apply whatever their values", true);
    }
    Decision d;
    d.algo = static_cast<int8_t>(algo);
    d.proto = static_cast<int8_t>(proto);
    d.nChannels = static_cast<int8_t>(*channels == -1 ? 0 : *channels);  // -1 and 0 both keep NCCL's
    cfg.rules.push_back(ConfigRule{TableRule{coll, *minBytes, *maxBytes, d}, *nNodes, *nRanks, lineNo});
  }
  return cfg;
}

}  // namespace wirewise
