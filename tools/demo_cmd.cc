// `wirewise demo`: loads the plugin library the way NCCL 2.28 does, opens one communicator and shows, for
// every collective and a sweep of sizes, NCCL's choice on an illustrative cost table before and after the
// plugin's getCollInfo, using NCCL's own selection rule (loader::selectAlgo).
#include <fmt/core.h>

#include <cstdarg>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>

#include "adaptive/config.h"
#include "common/settings.h"
#include "adaptive/decision_table.h"
#include "common/units.h"
#include "tools/cli_util.h"
#include "tools/commands.h"
#include "tools/demo_costs.h"

namespace wirewise::tools {
namespace {

struct DemoOptions {
  std::string plugin, config, log;
  int ranks = 16, nodes = 2, channels = 32;
  bool verbose = false;
};

bool gVerbose = false;  // read by the C logger below, which has no context argument

// What NCCL passes as its ncclDebugLog: here WARN (and INFO with --verbose) go to stderr.
void demoLogger(ncclDebugLogLevel level, unsigned long, const char*, int, const char* format, ...) {
  if (level != NCCL_LOG_WARN && !(gVerbose && level == NCCL_LOG_INFO)) return;
  std::fprintf(stderr, "NCCL %s ", level == NCCL_LOG_WARN ? "WARN" : "INFO");
  va_list ap;
  va_start(ap, format);
  std::vfprintf(stderr, format, ap);
  va_end(ap);
  std::fputc('\n', stderr);
}

std::string choiceText(const loader::Selection& s) {
  if (!s.ok) return "none (NCCL fails the call)";
  return fmt::format("{}/{} ch={}", algoName(s.algo), protoName(s.proto), s.nChannels);
}

// Would the decision need an entry the table has disabled? (The plugin then leaves the table alone.)
bool wantsDisabledEntry(const Decision& d, const DemoTable t) {
  auto on = [&](int a, int p) { return t[a][p] >= 0.0f && t[a][p] < 3.6e9f; };
  for (int a = 0; a < NCCL_NUM_ALGORITHMS; ++a)
    for (int p = 0; p < NCCL_NUM_PROTOCOLS; ++p)
      if ((d.algo == kAny || d.algo == a) && (d.proto == kAny || d.proto == p) && on(a, p)) return false;
  return d.algo != kAny || d.proto != kAny;
}

// Sets the plugin's environment before it is loaded: it reads its settings once, at its first init.
void prepareEnvironment(const DemoOptions& o) {
  if (!o.config.empty()) setenv(settingName(&Settings::config), o.config.c_str(), 1);
  if (!o.log.empty())
    setenv(settingName(&Settings::logPath), o.log.c_str(), 1);
  else
    setenv(settingName(&Settings::logPath), "none", 0);  // the user's own log setting wins
  // One process plays one rank of a communicator of many, and there is no profiler face: no schedule
  // could start, so agreement would only add a coordinator and the WARN that nothing adapts. The demo
  // shows the static table (the user's own setting wins).
  setenv(settingName(&Settings::sync), "off", 0);
}

int runDemo(const DemoOptions& o) {
  if (o.nodes < 1 || o.ranks < o.nodes || o.channels < 1 || o.channels > 64) {
    fmt::print(stderr, "wirewise demo: need 1 <= nodes <= ranks and 1 <= channels <= 64\n");
    return 2;
  }
  gVerbose = o.verbose;
  prepareEnvironment(o);
  loader::OpenResult lib = findPluginLibrary(o.plugin);
  if (lib.handle == nullptr) {
    fmt::print(stderr, "wirewise demo: cannot open the tuner library: {}\n", lib.error);
    return 1;
  }
  std::string why;
  std::unique_ptr<loader::Tuner> tuner = loader::Tuner::load(lib.handle, &why);
  if (!tuner) {
    fmt::print(stderr, "wirewise demo: {}: {}\n", lib.path.empty() ? lib.name : lib.path, why);
    return 1;
  }
  const char* configEnv = std::getenv(settingName(&Settings::config));
  const char* modeEnv = std::getenv(settingName(&Settings::mode));
  const char* logEnv = std::getenv(settingName(&Settings::logPath));
  const std::string config = configEnv != nullptr ? configEnv : "";
  fmt::print("plugin: {} (ncclTunerPlugin_v{} \"{}\")\n", lib.path.empty() ? lib.name : lib.path, tuner->version(),
             tuner->name() ? tuner->name() : "");
  fmt::print("communicator: {} ranks on {} nodes, {} channels; mode {}\n", o.ranks, o.nodes, o.channels,
             modeEnv != nullptr ? modeEnv : "apply (default)");
  fmt::print("config: {}\n", config.empty() ? "none: pass-through, every choice is NCCL's" : config);
  fmt::print("{}\n", illustrativeTableNote());

  // The demo's own reading of the same file, only to show which rule covers each size.
  std::shared_ptr<const DecisionTable> rules = DecisionTable::neutral();
  if (!config.empty()) {
    ParsedConfig parsed = parseConfigFile(config, readFileText(config, kMaxConfigBytes));
    auto forComm = rulesForComm(parsed, static_cast<uint64_t>(o.ranks), static_cast<uint64_t>(o.nodes));
    if (!forComm.empty()) rules = DecisionTable::build(forComm, "demo");
  }

  void* context = nullptr;
  ncclNvlDomainInfo_v5_t nvl{o.nodes, o.ranks / o.nodes, (o.ranks + o.nodes - 1) / o.nodes};
  ncclTunerConstants_v5_t constants{};
  ncclResult_t rc = tuner->init(&context, 0x7777777777ull, static_cast<size_t>(o.ranks),
                                static_cast<size_t>(o.nodes), demoLogger, &nvl, &constants);
  if (rc != ncclSuccess) {
    fmt::print(stderr, "wirewise demo: init returned {}: NCCL would fail communicator creation\n",
               static_cast<int>(rc));
    return 1;
  }

  static constexpr ncclFunc_t kColls[] = {ncclFuncAllReduce, ncclFuncAllGather, ncclFuncReduceScatter,
                                          ncclFuncBroadcast, ncclFuncReduce};
  const loader::CommChannels comm{o.channels, o.channels / 2 > 0 ? o.channels / 2 : 1, o.nodes};
  int changed = 0, fallback = 0, kept = 0;
  for (ncclFunc_t coll : kColls) {
    fmt::print("\n{}\n  {:<10} {:<20} {:<20} {:<20} {}\n", collName(static_cast<CollType>(coll)), "size",
               "NCCL's choice", "rule", "wirewise", "result");
    for (uint64_t bytes = 1024; bytes <= (uint64_t{1} << 30); bytes *= 4) {
      DemoTable costs, table;
      illustrativeCostTable(coll, bytes, o.ranks, o.nodes, costs);
      std::memcpy(table, costs, sizeof table);
      loader::Selection before = loader::selectAlgo(costs, 0, o.channels, comm);
      int nChannels = 0;
      tuner->getCollInfo(context, coll, bytes, 1, table, 0, &nChannels);
      loader::Selection after = loader::selectAlgo(table, nChannels, o.channels, comm);
      Decision asked = rules->lookup(coll, bytes);
      const bool untouched = nChannels == 0 && std::memcmp(table, costs, sizeof table) == 0;
      std::string result;
      if (after.algo != before.algo || after.proto != before.proto || after.nChannels != before.nChannels) {
        result = "changed";
        ++changed;
      } else if (!asked.keepsNccl() && untouched && wantsDisabledEntry(asked, costs)) {
        result = "disabled entry -> NCCL's stands";
        ++fallback;
      } else {
        result = asked.keepsNccl() ? "kept" : untouched ? "kept (plugin did not act)" : "kept (rule agrees)";
        ++kept;
      }
      std::string ruleText = asked.keepsNccl() ? "-"
                                               : decisionText(std::string(algoName(asked.algo)),
                                                              std::string(protoName(asked.proto)), asked.nChannels);
      fmt::print("  {:<10} {:<20} {:<20} {:<20} {}\n", bytesText(bytes), choiceText(before), ruleText,
                 choiceText(after), result);
    }
  }
  tuner->finalize(context);
  fmt::print("\n{} choices: {} changed, {} disabled entry -> NCCL's stands, {} kept\n", changed + fallback + kept,
             changed, fallback, kept);
  if (config.empty()) fmt::print("hint: pass --config examples/static-table.json to see the plugin change choices\n");
  if (logEnv != nullptr && std::strcmp(logEnv, "none") != 0)
    fmt::print("adaptation log: {} (read it with: wirewise log summarize {})\n", logEnv, logEnv);
  return 0;
}

}  // namespace

void addDemoCommand(CLI::App& app) {
  auto opts = std::make_shared<DemoOptions>();
  auto* cmd = app.add_subcommand("demo", "Load the plugin as NCCL does and show how it changes NCCL's choices");
  cmd->add_option("--plugin", opts->plugin,
                  "tuner library, resolved like NCCL_TUNER_PLUGIN (default: ../lib next to this program)");
  cmd->add_option("--config", opts->config, fmt::format("static table to apply (sets {})", settingName(&Settings::config)))
      ->check(CLI::ExistingFile);
  cmd->add_option("--log", opts->log, fmt::format("write the adaptation log here (sets {}; default: none)", settingName(&Settings::logPath)));
  cmd->add_option("--ranks", opts->ranks, "ranks in the communicator")->capture_default_str();
  cmd->add_option("--nodes", opts->nodes, "nodes in the communicator")->capture_default_str();
  cmd->add_option("--channels", opts->channels, "NCCL's channel count for the communicator")->capture_default_str();
  cmd->add_flag("--verbose", opts->verbose, "also print the plugin's INFO lines");
  cmd->callback([opts] {
    if (int rc = runDemo(*opts); rc != 0) throw CLI::RuntimeError(rc);
  });
}

}  // namespace wirewise::tools
