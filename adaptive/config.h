// Static decision tables from a file: wirewise's JSON format (docs/config-format.md) or NCCL's example
// tuner CSV (nccl_tuner.conf). Parsing never throws and never stops at a bad line: every problem is
// reported with file, line and reason, and that line is skipped.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "adaptive/decision_table.h"

namespace wirewise {

struct ConfigRule {
  TableRule rule;
  int64_t nNodes = -1;  // -1: any
  int64_t nRanks = -1;  // -1: any
  int line = 0;         // 1-based source line (JSON: the rule's index + 1)
};

struct ConfigProblem {
  std::string file;
  int line = 0;  // 0: the file as a whole
  std::string reason;
  bool warningOnly = false;  // accepted, but the user should know (e.g. numPipeOps ignored)
};

struct ParsedConfig {
  std::string source;  // file name
  std::string format;  // "json", "csv" or "" when unreadable
  std::vector<ConfigRule> rules;
  std::vector<ConfigProblem> problems;
};

ParsedConfig parseConfigFile(const std::string& path);
ParsedConfig parseConfigText(std::string_view text, std::string_view sourceName);  // detects the format

// The rules that apply to a communicator of this shape (both rank-invariant), in file order.
std::vector<TableRule> rulesForComm(const ParsedConfig& cfg, uint64_t nRanks, uint64_t nNodes);

}  // namespace wirewise
