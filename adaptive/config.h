// Static decision tables from a file: wirewise's JSON format (docs/config-format.md) or NCCL's example
// tuner CSV (nccl_tuner.conf). Parsing never throws and never stops at a bad line: every problem is
// reported with file, line and reason, and that line is skipped. Pure: the caller reads the file
// (common/file_text.h readFileText, bounded by kMaxConfigBytes) and hands over what it got.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "adaptive/decision_table.h"
#include "common/file_text.h"

namespace wirewise {

struct ConfigRule {
  TableRule rule;
  int64_t nNodes = -1;  // -1: any
  int64_t nRanks = -1;  // -1: any
  int line = 0;         // 1-based source line (JSON: the rule's index + 1)
};

struct ConfigProblem {
  std::string file;
  int line = 0;  // 0: the file as a whole; JSON: the rule's index + 1 (a syntax error: its text line)
  std::string reason;  // printable ASCII only: user text is quoted with \xNN escapes and cut short
  bool warningOnly = false;  // accepted, but the user should know (e.g. numPipeOps ignored)
};

struct ParsedConfig {
  std::string source;  // file name
  std::string format;  // "json", "csv" or "" when unreadable
  std::vector<ConfigRule> rules;
  std::vector<ConfigProblem> problems;
};

inline constexpr size_t kMaxConfigBytes = size_t{16} << 20;

// Never throw. The file at path as read: an unreadable (or over 16 MiB) one gives one problem with line 0
// and no rules. Call as parseConfigFile(path, readFileText(path, kMaxConfigBytes)).
ParsedConfig parseConfigFile(const std::string& path, const FileText& file);
// JSON when the first non-blank character (after an optional UTF-8 BOM) is '{', NCCL's CSV otherwise.
ParsedConfig parseConfigText(std::string_view text, std::string_view sourceName);
// The two formats directly, when the caller already knows which one it has.
ParsedConfig parseCsvConfig(std::string_view text, std::string_view sourceName);
ParsedConfig parseJsonConfig(std::string_view text, std::string_view sourceName);

// The rules that apply to a communicator of this shape (both rank-invariant), in file order.
std::vector<TableRule> rulesForComm(const ParsedConfig& cfg, uint64_t nRanks, uint64_t nNodes);

namespace config_detail {
// User text made safe for a problem's reason: 'quoted', non-printable bytes as \xNN, at most maxLen bytes.
std::string quote(std::string_view s, size_t maxLen = 40);
}  // namespace config_detail

}  // namespace wirewise
