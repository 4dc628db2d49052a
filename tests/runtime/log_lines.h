// The adaptation log as the tests read it: one JSON object per line; a line that does not parse (a write
// cut short) is skipped, as `wirewise log` skips it.
#pragma once

#include <fstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace wirewise::testing {

inline std::vector<nlohmann::json> readLog(const std::string& path) {
  std::vector<nlohmann::json> out;
  std::ifstream f(path);
  for (std::string line; std::getline(f, line);)
    if (auto j = nlohmann::json::parse(line, nullptr, false); !j.is_discarded()) out.push_back(j);
  return out;
}

}  // namespace wirewise::testing
