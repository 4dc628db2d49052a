// `wirewise log explain`: for every range of the table in force at the end of an adaptation log, one
// paragraph of plain English saying what runs there, since when, instead of what, and the evidence the
// coordinator's "adapt" events give for it. Sizes no range covers (NCCL's own choice) get a paragraph too.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "tools/log_summary.h"

namespace wirewise::tools {

struct ExplainFilter {
  std::optional<uint64_t> comm;   // only this communicator
  std::string coll;               // only this collective (its log name, "allreduce"); empty: all
  std::optional<uint64_t> bytes;  // only the range that contains this size
};

struct Explanation {
  std::string comm, coll;  // coll empty: the log has nothing on this communicator
  uint64_t minBytes = 0, maxBytes = 0;
  std::string decision;  // what runs: decisionKey ("tree/simple/11"), "nccl" for NCCL's own choice
  std::string nccl;      // NCCL's own choice where the events measured it ("nvls_tree/simple/16"), else ""
  // The table from which the range has been as it is (none: NCCL's own choice all along, or no table).
  std::optional<uint64_t> sinceIndex, sinceBoundary;
  std::string kind;                // the latest adapt event that set a decision here; "" when none did
  std::vector<uint64_t> verdicts;  // indices of the adapt events the paragraph draws on, in order
  std::vector<std::string> links;  // implicated links named by those events
  std::string text;
};

// "0x00000000000000aa", "00aa", "aa": hexadecimal, at most 16 digits.
bool parseCommId(const std::string& text, uint64_t* id);

std::vector<Explanation> explainLog(const LogSummary& s, const ExplainFilter& f);
std::string explainText(const std::vector<Explanation>& e);  // paragraphs separated by blank lines
nlohmann::json explainJson(const std::vector<Explanation>& e);

}  // namespace wirewise::tools
