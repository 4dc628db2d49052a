// `wirewise settings`: the settings table, printed from the same rows the plugin reads (common/settings.h).
#include <fmt/core.h>

#include <algorithm>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "common/settings.h"
#include "tools/commands.h"

namespace wirewise::tools {
namespace {

// Greedy word wrap; a word longer than the width stays whole on its own line.
std::vector<std::string> wrap(std::string_view text, size_t width) {
  std::vector<std::string> lines(1);
  size_t pos = 0;
  while (pos < text.size()) {
    size_t end = text.find(' ', pos);
    if (end == std::string_view::npos) end = text.size();
    std::string_view word = text.substr(pos, end - pos);
    if (!lines.back().empty() && lines.back().size() + 1 + word.size() > width) lines.emplace_back();
    if (!lines.back().empty()) lines.back() += ' ';
    lines.back() += word;
    pos = end + 1;
  }
  return lines;
}

void printSettings() {
  const char* headers[4] = {"variable", "type", "default", "accepted"};
  struct Row {
    std::string cols[4];
    std::string doc;
  };
  std::vector<Row> rows;
  for (const SettingSpec& s : settingSpecs())
    rows.push_back({{s.name, settingType(s), plainDoc(settingDefault(s)), plainDoc(settingAccepted(s))}, plainDoc(s.doc)});
  size_t w[4];
  for (int i = 0; i < 4; ++i) w[i] = std::string_view(headers[i]).size();
  for (const Row& r : rows)
    for (int i = 0; i < 4; ++i) w[i] = std::max(w[i], r.cols[i].size());
  size_t used = w[0] + w[1] + w[2] + w[3] + 8;
  size_t docWidth = used + 30 < 120 ? 120 - used : 30;
  fmt::print("{:<{}}  {:<{}}  {:<{}}  {:<{}}  {}\n", headers[0], w[0], headers[1], w[1], headers[2], w[2], headers[3],
             w[3], "meaning");
  for (const Row& r : rows) {
    std::vector<std::string> doc = wrap(r.doc, docWidth);
    fmt::print("{:<{}}  {:<{}}  {:<{}}  {:<{}}  {}\n", r.cols[0], w[0], r.cols[1], w[1], r.cols[2], w[2], r.cols[3],
               w[3], doc[0]);
    for (size_t i = 1; i < doc.size(); ++i) fmt::print("{:<{}}{}\n", "", used, doc[i]);
  }
  fmt::print("\nRead once when the first communicator initialises the plugin; a bad value warns and the default "
             "is used.\n");
}

}  // namespace

void addSettingsCommand(CLI::App& app) {
  auto* cmd = app.add_subcommand("settings", "List every WIREWISE_* setting: type, default, accepted values");
  auto format = std::make_shared<std::string>("text");
  cmd->add_option("--format", *format,
                  "text (default), markdown (docs/settings.md's table, which is generated from this) or names")
      ->check(CLI::IsMember({"text", "markdown", "names"}));
  cmd->callback([format] {
    if (*format == "markdown") {
      fmt::print("{}", settingsMarkdownTable());
    } else if (*format == "names") {
      for (const SettingSpec& s : settingSpecs()) fmt::print("{}\n", s.name);
    } else {
      printSettings();
    }
  });
}

}  // namespace wirewise::tools
