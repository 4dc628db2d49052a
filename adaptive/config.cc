// Telling the configuration formats apart and choosing the rules for one communicator. The per-format
// parsers live in config_csv.cc and config_json.cc; the file is read by the caller (common/file_text.h).
#include "adaptive/config.h"

#include <exception>

namespace wirewise {

namespace config_detail {

std::string quote(std::string_view s, size_t maxLen) {
  static constexpr char kHex[] = "0123456789abcdef";
  std::string out = "'";
  for (size_t i = 0; i < s.size() && i < maxLen; ++i) {
    auto c = static_cast<unsigned char>(s[i]);
    if (c >= 0x20 && c < 0x7f && c != '\\' && c != '\'') {
      out += static_cast<char>(c);
    } else {
      out += "\\x";
      out += kHex[c >> 4];
      out += kHex[c & 0xf];
    }
  }
  out += s.size() > maxLen ? "'..." : "'";
  return out;
}

}  // namespace config_detail

ParsedConfig parseConfigText(std::string_view text, std::string_view sourceName) {
  try {
    size_t i = text.starts_with("\xEF\xBB\xBF") ? 3 : 0;
    while (i < text.size() && (text[i] == ' ' || text[i] == '\t' || text[i] == '\r' || text[i] == '\n')) ++i;
    if (i < text.size() && text[i] == '{') return parseJsonConfig(text, sourceName);
    return parseCsvConfig(text, sourceName);
  } catch (const std::exception& e) {  // only allocation can get here; report it, keep nothing
    ParsedConfig cfg;
    cfg.source = std::string(sourceName);
    cfg.problems.push_back({cfg.source, 0, std::string("internal error while parsing: ") + e.what(), false});
    return cfg;
  }
}

ParsedConfig parseConfigFile(const std::string& path, const FileText& file) {
  if (file.ok()) return parseConfigText(file.text, path);
  ParsedConfig cfg;
  try {
    cfg.source = path;
    std::string reason = file.error;
    if (file.status == FileText::Status::kTooLarge) reason += "; not a configuration file";
    cfg.problems.push_back({path, 0, std::move(reason), false});
  } catch (const std::exception&) {  // only allocation can get here; an empty result still says "no rules"
  }
  return cfg;
}

std::vector<TableRule> rulesForComm(const ParsedConfig& cfg, uint64_t nRanks, uint64_t nNodes) {
  std::vector<TableRule> out;
  auto matches = [](int64_t want, uint64_t have) { return want == -1 || (want >= 0 && uint64_t(want) == have); };
  for (const ConfigRule& r : cfg.rules) {
    if (matches(r.nNodes, nNodes) && matches(r.nRanks, nRanks)) out.push_back(r.rule);
  }
  return out;
}

}  // namespace wirewise
