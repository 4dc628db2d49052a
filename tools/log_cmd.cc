// `wirewise log summarize FILE... [--json]`: what an adaptation log says, per communicator.
// `wirewise log explain FILE... [--comm HEX] [--coll NAME] [--bytes N] [--json]`: why each range of the
// table in force at the end of the log is what it is, in plain English.
// `wirewise report FILE... [-o report.html]`: the same logs as one self-contained HTML page (log_report.h).
#include <fmt/core.h>

#include <algorithm>
#include <cstdio>
#include <fstream>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "adaptive/types.h"
#include "common/units.h"
#include "tools/commands.h"
#include "tools/log_explain.h"
#include "tools/log_report.h"
#include "tools/log_summary.h"

namespace wirewise::tools {
namespace {

struct SummarizeOptions {
  std::vector<std::string> files;
  bool json = false;
};

struct ReportOptionsCli {
  std::vector<std::string> files;
  std::string out = "report.html";
};

struct ExplainOptions {
  std::vector<std::string> files;
  std::string comm, coll, bytes;
  bool json = false;
};

// The wall-clock time of a file's first line ("" when it has none): files are read oldest first, so that a
// process's rotated files (h-7.2.jsonl, h-7.1.jsonl, h-7.jsonl, in whatever order a glob lists them) are
// read in the order they were written.
std::string firstTs(const std::string& file) {
  std::ifstream in(file);
  std::string line;
  if (!std::getline(in, line)) return "";
  const auto j = nlohmann::json::parse(line, nullptr, false);
  return j.is_object() && j.contains("ts") && j["ts"].is_string() ? j["ts"].get<std::string>() : "";
}

std::vector<std::string> oldestFirst(std::vector<std::string> files) {
  std::vector<std::pair<std::string, std::string>> keyed;
  for (auto& f : files) keyed.emplace_back(firstTs(f), std::move(f));
  std::stable_sort(keyed.begin(), keyed.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
  for (size_t i = 0; i < keyed.size(); ++i) files[i] = std::move(keyed[i].second);
  return files;
}

// Reads every file into *s, oldest first. Malformed lines get a warning on stderr; a last line cut short (the writer was
// busy, or died mid-line) gets a note of its own, since that is what a log still being written looks like.
// Returns false, having said why, when a file cannot be read.
bool readLogs(const std::vector<std::string>& given, const char* command, LogSummary* s) {
  for (const auto& file : oldestFirst(given)) {
    std::ifstream in(file);
    if (!in) {
      fmt::print(stderr, "wirewise {}: cannot read {}\n", command, file);
      return false;
    }
    const uint64_t before = s->malformed;
    const size_t listedBefore = s->malformedLines.size(), cutBefore = s->cutLines.size();
    const uint64_t firstLine = s->lines;
    addLog(in, s);
    const bool cut = s->cutLines.size() > cutBefore;
    const uint64_t cutLine = cut ? s->cutLines.back() : 0;
    const uint64_t bad = s->malformed - before - (cut ? 1 : 0);
    if (bad > 0) {
      std::string where;
      size_t listed = 0;
      for (size_t i = listedBefore; i < s->malformedLines.size(); ++i) {
        if (s->malformedLines[i] == cutLine) continue;
        where += (where.empty() ? "" : ", ") + std::to_string(s->malformedLines[i] - firstLine);
        ++listed;
      }
      fmt::print(stderr, "warning: {}: skipped {} malformed line(s) (line {}{})\n", file, bad, where,
                 bad > listed ? ", ..." : "");
    }
    if (cut)
      fmt::print(stderr,
                 "note: {}: the last line (line {}) is cut short, skipped (the log was still being "
                 "written, or its writer stopped mid-line)\n",
                 file, cutLine - firstLine);
  }
  return true;
}

int runSummarize(const SummarizeOptions& o) {
  LogSummary summary;
  if (!readLogs(o.files, "log summarize", &summary)) return 1;
  if (o.json) fmt::print("{}\n", summaryJson(summary).dump(2));
  else fmt::print("{}", summaryText(summary));
  return 0;
}

int runExplain(const ExplainOptions& o) {
  ExplainFilter f;
  if (!o.comm.empty()) {
    uint64_t id = 0;
    if (!parseCommId(o.comm, &id)) {
      fmt::print(stderr,
                 "wirewise log explain: --comm {}: expected a communicator id in hex, as the log "
                 "prints it (0x00c0ffee12345678)\n",
                 o.comm);
      return 1;
    }
    f.comm = id;
  }
  if (!o.coll.empty()) {
    int c = parseColl(o.coll);
    if (c < 0 || c >= kNumCollTypes) {
      fmt::print(stderr,
                 "wirewise log explain: --coll {}: expected broadcast, reduce, allgather, reducescatter "
                 "or allreduce\n",
                 o.coll);
      return 1;
    }
    f.coll = std::string(collName(static_cast<CollType>(c)));
  }
  if (!o.bytes.empty()) {
    uint64_t n = 0;
    if (!parseBytes(o.bytes, &n)) {
      fmt::print(stderr, "wirewise log explain: --bytes {}: expected a size in bytes (25165824, 24MiB, 64K)\n",
                 o.bytes);
      return 1;
    }
    f.bytes = n;
  }
  LogSummary summary;
  if (!readLogs(o.files, "log explain", &summary)) return 1;
  std::vector<Explanation> e = explainLog(summary, f);
  if (f.comm && e.empty()) {
    std::string known;
    for (const auto& c : summary.comms) known += (known.empty() ? "" : ", ") + c.id;
    fmt::print(stderr, "wirewise log explain: no communicator {} in the log (it has: {})\n", o.comm,
               known.empty() ? "none" : known);
    return 1;
  }
  if (o.json) fmt::print("{}\n", explainJson(e).dump(2));
  else if (e.empty()) fmt::print("The log names no communicator: nothing to explain.\n");
  else fmt::print("{}", explainText(e));
  return 0;
}

// The page goes to a temporary name first and is renamed over `out`: a reader never sees half a page.
int runReport(const ReportOptionsCli& o) {
  LogSummary summary;
  if (!readLogs(o.files, "report", &summary)) return 1;
  const std::string html = reportHtml(summary, ReportOptions{o.files});
  const std::string tmp = o.out + ".tmp";
  {
    std::ofstream f(tmp, std::ios::binary | std::ios::trunc);
    f.write(html.data(), static_cast<std::streamsize>(html.size()));
    if (!f.flush()) {
      fmt::print(stderr, "wirewise report: cannot write {}\n", tmp);
      std::remove(tmp.c_str());
      return 1;
    }
  }
  if (std::rename(tmp.c_str(), o.out.c_str()) != 0) {
    fmt::print(stderr, "wirewise report: cannot rename {} to {}\n", tmp, o.out);
    std::remove(tmp.c_str());
    return 1;
  }
  fmt::print("wrote {} ({} communicator(s), {} bytes)\n", o.out, summary.comms.size(), html.size());
  return 0;
}

}  // namespace

void addReportCommand(CLI::App& app) {
  auto o = std::make_shared<ReportOptionsCli>();
  auto* cmd = app.add_subcommand("report",
                                 "Write adaptation logs as one self-contained HTML page: tables in force over "
                                 "time with alarms, faults, explanations and exploration; bandwidth per size "
                                 "bucket over time; link health; control-plane waits");
  cmd->add_option("FILE", o->files, "adaptation log(s); several files (one per process) are merged by comm")
      ->required()
      ->check(CLI::ExistingFile);
  cmd->add_option("-o,--output", o->out, "the HTML file to write (default report.html)");
  cmd->callback([o] {
    if (int rc = runReport(*o); rc != 0) throw CLI::RuntimeError(rc);
  });
}

void addLogCommand(CLI::App& app) {
  auto* log = app.add_subcommand("log", "Read adaptation logs (JSON lines written by the plugin)");
  log->require_subcommand(1);
  auto opts = std::make_shared<SummarizeOptions>();
  auto* sum = log->add_subcommand("summarize",
                                  "Per communicator: init, tables over time, the coordinator's "
                                  "committed tables and crossovers, exploration, adapt events, "
                                  "observed bandwidth, drops and finalize counters");
  sum->add_option("FILE", opts->files, "adaptation log(s); several files (one per process) are merged by comm")
      ->required()
      ->check(CLI::ExistingFile);
  sum->add_flag("--json", opts->json, "print the summary as JSON instead of text");
  sum->callback([opts] {
    if (int rc = runSummarize(*opts); rc != 0) throw CLI::RuntimeError(rc);
  });

  auto ex = std::make_shared<ExplainOptions>();
  auto* exp = log->add_subcommand("explain",
                                  "One paragraph per range of the table in force at the end of the log: "
                                  "what runs there, since when, instead of what, and why");
  exp->add_option("FILE", ex->files, "adaptation log(s); several files (one per process) are merged by comm")
      ->required()
      ->check(CLI::ExistingFile);
  exp->add_option("--comm", ex->comm, "only this communicator (hex id as the log prints it)");
  exp->add_option("--coll", ex->coll, "only this collective (allreduce, allgather, ...)");
  exp->add_option("--bytes", ex->bytes, "only the range that contains this message size (25165824, 24MiB)");
  exp->add_flag("--json", ex->json, "print the paragraphs and their fields as JSON");
  exp->callback([ex] {
    if (int rc = runExplain(*ex); rc != 0) throw CLI::RuntimeError(rc);
  });
}

}  // namespace wirewise::tools
