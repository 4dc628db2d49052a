// Reading a configuration file and choosing the rules for one communicator. The per-format parsers
// live in config_csv.cc and config_json.cc.
#include "adaptive/config.h"

#include <cerrno>
#include <cstdio>
#include <exception>
#include <system_error>

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

ParsedConfig parseConfigFile(const std::string& path) {
  ParsedConfig cfg;
  try {
    cfg.source = path;
    auto unreadable = [&](std::string reason) {
      cfg.format.clear();
      cfg.rules.clear();
      cfg.problems = {ConfigProblem{path, 0, std::move(reason), false}};
      return cfg;
    };
    std::FILE* f = std::fopen(path.c_str(), "rb");
    if (f == nullptr) return unreadable("cannot open: " + std::generic_category().message(errno));
    std::string text;
    char buf[65536];
    size_t n = 0;
    // Bounded so that a FIFO or /dev/zero named by mistake cannot hang or exhaust init.
    while (text.size() <= kMaxConfigBytes && (n = std::fread(buf, 1, sizeof(buf), f)) > 0) text.append(buf, n);
    int readError = std::ferror(f) ? errno : 0;
    std::fclose(f);
    if (readError != 0) return unreadable("cannot read: " + std::generic_category().message(readError));
    if (text.size() > kMaxConfigBytes) return unreadable("larger than 16 MiB; not a configuration file");
    return parseConfigText(text, path);
  } catch (const std::exception& e) {
    cfg.problems.push_back({path, 0, std::string("internal error while reading: ") + e.what(), false});
    return cfg;
  }
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
