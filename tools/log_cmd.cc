// `wirewise log summarize FILE... [--json]`: what an adaptation log says, per communicator.
#include <fmt/core.h>

#include <fstream>
#include <memory>
#include <string>
#include <vector>

#include "tools/commands.h"
#include "tools/log_summary.h"

namespace wirewise::tools {
namespace {

struct SummarizeOptions {
  std::vector<std::string> files;
  bool json = false;
};

int runSummarize(const SummarizeOptions& o) {
  LogSummary summary;
  for (const auto& file : o.files) {
    std::ifstream in(file);
    if (!in) {
      fmt::print(stderr, "wirewise log summarize: cannot read {}\n", file);
      return 1;
    }
    const uint64_t before = summary.malformed;
    const size_t listedBefore = summary.malformedLines.size();
    const uint64_t firstLine = summary.lines;
    addLog(in, &summary);
    if (summary.malformed > before) {
      std::string where;
      for (size_t i = listedBefore; i < summary.malformedLines.size(); ++i)
        where += (where.empty() ? "" : ", ") + std::to_string(summary.malformedLines[i] - firstLine);
      fmt::print(stderr, "warning: {}: skipped {} malformed line(s) (line {}{})\n", file, summary.malformed - before,
                 where, summary.malformed - before > summary.malformedLines.size() - listedBefore ? ", ..." : "");
    }
  }
  if (o.json)
    fmt::print("{}\n", summaryJson(summary).dump(2));
  else
    fmt::print("{}", summaryText(summary));
  return 0;
}

}  // namespace

void addLogCommand(CLI::App& app) {
  auto* log = app.add_subcommand("log", "Read adaptation logs (JSON lines written by the plugin)");
  log->require_subcommand(1);
  auto opts = std::make_shared<SummarizeOptions>();
  auto* sum = log->add_subcommand("summarize", "Per communicator: init, tables over time, observed bandwidth, "
                                               "drops and finalize counters");
  sum->add_option("FILE", opts->files, "adaptation log(s); several files (one per process) are merged by comm")
      ->required()
      ->check(CLI::ExistingFile);
  sum->add_flag("--json", opts->json, "print the summary as JSON instead of text");
  sum->callback([opts] {
    if (int rc = runSummarize(*opts); rc != 0) throw CLI::RuntimeError(rc);
  });
}

}  // namespace wirewise::tools
