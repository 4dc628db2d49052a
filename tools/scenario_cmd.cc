// `wirewise scenario generate --count N --seed S --out DIR`: writes DIR/gen-<s>.json for s = S .. S+N-1, each a
// pure function of its own seed (sim/gen/generator.h), for corpus runs of the simulator.
#include <charconv>
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <limits>
#include <memory>
#include <string>

#include <CLI/CLI.hpp>

#include "sim/gen/generator.h"
#include "tools/commands.h"

namespace wirewise::tools {
namespace {

struct GenerateArgs {
  int64_t count = 0;
  std::string seedText = "1";  // parsed here: CLI11 would wrap "-1" around to 2^64 - 1
  uint64_t seed = 1;
  std::string out;
  bool quiet = false;
};

// Exit status: 0 written, 1 a file could not be written, 2 bad arguments.
int runGenerate(GenerateArgs& a) {
  const char* end = a.seedText.data() + a.seedText.size();
  const auto [ptr, err] = std::from_chars(a.seedText.data(), end, a.seed);
  if (err != std::errc() || ptr != end || a.seedText.empty()) {
    std::fprintf(stderr, "wirewise scenario generate: --seed %s: must be an integer in [0, 2^64 - 1]\n",
                 a.seedText.c_str());
    return 2;
  }
  if (a.count < 1) {
    std::fprintf(stderr, "wirewise scenario generate: --count must be at least 1\n");
    return 2;
  }
  if (static_cast<uint64_t>(a.count - 1) > std::numeric_limits<uint64_t>::max() - a.seed) {
    std::fprintf(stderr, "wirewise scenario generate: --seed + --count - 1 exceeds 2^64 - 1\n");
    return 2;
  }
  std::error_code ec;
  std::filesystem::create_directories(a.out, ec);
  if (ec || !std::filesystem::is_directory(a.out)) {
    std::fprintf(stderr, "wirewise scenario generate: --out %s: cannot create the directory%s%s\n", a.out.c_str(),
                 ec ? ": " : "", ec ? ec.message().c_str() : "");
    return 2;
  }
  for (int64_t i = 0; i < a.count; ++i) {
    const uint64_t s = a.seed + static_cast<uint64_t>(i);
    const sim::gen::Generated g = sim::gen::generateScenario(s);
    const std::string path = (std::filesystem::path(a.out) / (g.name + ".json")).string();
    std::ofstream f(path, std::ios::binary | std::ios::trunc);
    f << g.json;
    f.close();
    if (!f) {
      std::fprintf(stderr, "wirewise scenario generate: cannot write %s\n", path.c_str());
      return 1;
    }
    if (!a.quiet) std::printf("%s\n", path.c_str());
  }
  std::printf("wrote %lld scenario%s (seeds %llu..%llu) to %s\n", static_cast<long long>(a.count),
              a.count == 1 ? "" : "s",
              static_cast<unsigned long long>(a.seed),
              static_cast<unsigned long long>(a.seed + static_cast<uint64_t>(a.count - 1)), a.out.c_str());
  return 0;
}

}  // namespace

void addScenarioCommand(CLI::App& app) {
  auto* cmd = app.add_subcommand("scenario", "Scenario files for the simulator");
  cmd->require_subcommand(1);
  auto args = std::make_shared<GenerateArgs>();
  auto* gen = cmd->add_subcommand(
      "generate", "Write DIR/gen-<s>.json for seeds s = S .. S+N-1; scenario s depends only on s "
                  "(cluster, workload shape, faults and noise drawn from the space in docs/simulator.md)");
  gen->add_option("--count,-n", args->count, "How many scenarios (N >= 1)")->required();
  gen->add_option("--seed,-s", args->seedText, "First seed S, 0 to 2^64 - 1 (default 1)");
  gen->add_option("--out,-o", args->out, "Directory to write into (created if missing; files are overwritten)")
      ->required();
  gen->add_flag("--quiet,-q", args->quiet, "Only the summary line, not one line per file");
  gen->callback([args] {
    const int rc = runGenerate(*args);
    if (rc != 0) throw CLI::RuntimeError(rc);
  });
}

}  // namespace wirewise::tools
