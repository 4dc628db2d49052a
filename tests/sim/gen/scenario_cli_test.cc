// `wirewise scenario generate`, run as the real binary: the files and their names, independence of --seed and
// --count, exit status 2 with a reason for every bad argument, and a generated file through `wirewise simulate`.
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>

#include <gtest/gtest.h>

#include "sim/gen/generator.h"
#include "tests/tools/cli_runner.h"

namespace wirewise::sim::gen {
namespace {

using tools::testing::CliResult;
using tools::testing::runCli;
using tools::testing::slurp;
namespace fs = std::filesystem;

class ScenarioCliTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("ww_gen_cli_" + std::to_string(::getpid()));
    fs::remove_all(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }
  std::string sub(const std::string& name) const { return (dir_ / name).string(); }
  fs::path dir_;
};

TEST_F(ScenarioCliTest, WritesOneFilePerSeed) {
  const CliResult r = runCli("scenario generate --count 5 --seed 10 --out '" + sub("a") + "'");
  ASSERT_EQ(r.status, 0) << r.err;
  for (uint64_t s = 10; s < 15; ++s) {
    const std::string path = sub("a") + "/gen-" + std::to_string(s) + ".json";
    ASSERT_TRUE(fs::exists(path)) << path;
    EXPECT_EQ(slurp(path), generateScenario(s).json) << path;
    EXPECT_NE(r.out.find(path + "\n"), std::string::npos) << r.out;
  }
  EXPECT_FALSE(fs::exists(sub("a") + "/gen-15.json"));
  EXPECT_FALSE(fs::exists(sub("a") + "/gen-9.json"));
  EXPECT_NE(r.out.find("wrote 5 scenarios (seeds 10..14)"), std::string::npos) << r.out;
  int files = 0;
  for ([[maybe_unused]] const auto& e : fs::directory_iterator(sub("a"))) ++files;
  EXPECT_EQ(files, 5);
}

TEST_F(ScenarioCliTest, SeedDoesNotDependOnTheRange) {
  ASSERT_EQ(runCli("scenario generate -q --count 6 --seed 3 --out '" + sub("a") + "'").status, 0);
  ASSERT_EQ(runCli("scenario generate -q --count 2 --seed 7 --out '" + sub("b") + "/nested'").status, 0);
  for (uint64_t s : {7, 8}) {
    const std::string name = "/gen-" + std::to_string(s) + ".json";
    EXPECT_EQ(slurp(sub("a") + name), slurp(sub("b") + "/nested" + name)) << s;
  }
}

TEST_F(ScenarioCliTest, LargestSeed) {
  const CliResult r = runCli("scenario generate --count 1 --seed 18446744073709551615 --out '" + sub("a") + "'");
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_TRUE(fs::exists(sub("a") + "/gen-18446744073709551615.json"));
}

TEST_F(ScenarioCliTest, BadArgumentsExit2WithAReason) {
  fs::create_directories(dir_);
  const std::string file = sub("file");
  { std::ofstream(file) << "x"; }
  struct Case {
    std::string args, reason;
  };
  const Case cases[] = {
      {"--count 0 --out '" + sub("o") + "'", "--count must be at least 1"},
      {"--count -3 --out '" + sub("o") + "'", "--count must be at least 1"},
      {"--count many --out '" + sub("o") + "'", "count"},
      {"--out '" + sub("o") + "'", "--count"},
      {"--count 2", "--out"},
      {"--count 2 --seed -1 --out '" + sub("o") + "'", "--seed -1: must be an integer in [0, 2^64 - 1]"},
      {"--count 2 --seed 18446744073709551616 --out '" + sub("o") + "'", "must be an integer"},
      {"--count 2 --seed 12x --out '" + sub("o") + "'", "must be an integer"},
      {"--count 2 --seed 18446744073709551615 --out '" + sub("o") + "'", "exceeds"},
      {"--count 2 --out '" + sub("o") + "' --bogus", "bogus"},
      {"--count 2 --out '" + file + "/x'", "cannot create the directory"},
      {"--count", "count"},
  };
  for (const Case& c : cases) {
    const CliResult r = runCli("scenario generate " + c.args);
    EXPECT_EQ(r.status, 2) << c.args << "\n" << r.err;
    EXPECT_NE(r.err.find(c.reason), std::string::npos) << c.args << ": " << r.err;
  }
  EXPECT_FALSE(fs::exists(sub("o") + "/gen-1.json"));
  EXPECT_EQ(runCli("scenario generate --help").status, 0);
}

TEST_F(ScenarioCliTest, GeneratedFileSimulates) {
  ASSERT_EQ(runCli("scenario generate -q --count 1 --seed 4 --out '" + sub("a") + "'").status, 0);
  const std::string report = sub("a") + "/report.json";
  const CliResult r = runCli("simulate '" + sub("a") + "/gen-4.json' --steps 20 --quiet --report '" + report + "'");
  ASSERT_EQ(r.status, 0) << r.err;
  const std::string text = slurp(report);
  EXPECT_NE(text.find("\"scenario\": \"gen-4\""), std::string::npos);
  EXPECT_NE(text.find("\"divergences\": 0"), std::string::npos);
}

}  // namespace
}  // namespace wirewise::sim::gen
