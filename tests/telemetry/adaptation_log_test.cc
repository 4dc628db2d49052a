#include "telemetry/adaptation_log.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <regex>
#include <string>
#include <thread>
#include <vector>

#include "tests/wait_until.h"

namespace wirewise {
namespace {

namespace fs = std::filesystem;

class AdaptationLogTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("ww_log_test_" + std::to_string(::getpid()) + "_" +
                                        ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }

  static std::vector<nlohmann::json> readLines(const fs::path& p) {
    std::vector<nlohmann::json> out;
    std::ifstream in(p);
    std::string line;
    while (std::getline(in, line)) out.push_back(nlohmann::json::parse(line));  // throws if not JSON
    return out;
  }
  fs::path dir_;
};

TEST_F(AdaptationLogTest, LinesAreJsonInOrderWithEnvelope) {
  fs::path p = dir_ / "a" / "b" / "log.jsonl";  // parent directories do not exist yet
  {
    AdaptationLog log(p.string(), 1024);
    ASSERT_TRUE(log.ok()) << log.error();
    for (int i = 0; i < 200; ++i) log.post({{"event", "table"}, {"seq", i}, {"comm", "0x1f"}});
    log.flush();
    EXPECT_EQ(log.written(), 200u);
    EXPECT_EQ(log.dropped(), 0u);
  }
  auto lines = readLines(p);
  ASSERT_EQ(lines.size(), 200u);
  std::regex iso(R"(\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z)");
  for (int i = 0; i < 200; ++i) {
    const auto& j = lines[i];
    EXPECT_EQ(j.at("v"), AdaptationLog::kSchemaVersion);
    EXPECT_EQ(j.at("pid"), ::getpid());
    EXPECT_TRUE(std::regex_match(j.at("ts").get<std::string>(), iso)) << j.at("ts");
    EXPECT_EQ(j.at("event"), "table");
    EXPECT_EQ(j.at("seq"), i);
    EXPECT_EQ(j.at("comm"), "0x1f");
  }
}

TEST(RotatedLogPath, KeepsTheExtensionLastSoGlobsFindThem) {
  EXPECT_EQ(rotatedLogPath("/tmp/w/h-7.jsonl", 1), "/tmp/w/h-7.1.jsonl");
  EXPECT_EQ(rotatedLogPath("/tmp/w/h-7.jsonl", 12), "/tmp/w/h-7.12.jsonl");
  EXPECT_EQ(rotatedLogPath("log", 2), "log.2");
  EXPECT_EQ(rotatedLogPath("/tmp/w/.hidden", 1), "/tmp/w/.hidden.1");
}

// Lines written in batches of ten, each flushed, so the writer's size check runs between batches.
static void postBatches(AdaptationLog& log, int from, int to) {
  for (int i = from; i < to; ++i) {
    log.post({{"event", "table"}, {"seq", i}, {"pad", std::string(100, 'x')}});
    if (i % 10 == 9) log.flush();
  }
  log.flush();
}

TEST_F(AdaptationLogTest, RotatesAtTheCapAndKeepsTheNewestFiles) {
  const fs::path p = dir_ / "h-7.jsonl";
  constexpr int kLines = 400;  // about 160 B each: 64 KB, some 16 rotations of 4 KiB files
  uint64_t rotations = 0;
  {
    AdaptationLog log(p.string(), 1024, false, LogRotation{4096, 3});
    ASSERT_TRUE(log.ok()) << log.error();
    postBatches(log, 0, kLines);
    EXPECT_EQ(log.written(), static_cast<uint64_t>(kLines));
    rotations = log.rotations();
  }
  EXPECT_GE(rotations, 10u);
  // Exactly the live file and three rotated ones; oldest first they hold one run of consecutive lines
  // ending with the last posted: whole JSON lines, nothing lost inside what is kept.
  std::vector<int> seqs;
  for (int k = 3; k >= 0; --k) {
    const fs::path f = k == 0 ? p : fs::path(rotatedLogPath(p.string(), k));
    ASSERT_TRUE(fs::exists(f)) << f;
    if (k > 0) {
      EXPECT_GE(fs::file_size(f), 4096u) << f;
      EXPECT_LT(fs::file_size(f), 4096u + 10 * 200u) << f;  // one batch past the cap at most
    }
    for (const auto& j : readLines(f)) seqs.push_back(j.at("seq").get<int>());
  }
  EXPECT_FALSE(fs::exists(rotatedLogPath(p.string(), 4)));
  ASSERT_FALSE(seqs.empty());
  EXPECT_EQ(seqs.back(), kLines - 1);
  for (size_t i = 1; i < seqs.size(); ++i) ASSERT_EQ(seqs[i], seqs[i - 1] + 1) << "at " << i;
  EXPECT_GT(seqs.front(), 0);  // the oldest lines went with the oldest file
}

TEST_F(AdaptationLogTest, NoCapNeverRotates) {
  const fs::path p = dir_ / "h-7.jsonl";
  {
    AdaptationLog log(p.string(), 1024);
    postBatches(log, 0, 200);
    EXPECT_EQ(log.rotations(), 0u);
  }
  EXPECT_EQ(readLines(p).size(), 200u);
  EXPECT_FALSE(fs::exists(rotatedLogPath(p.string(), 1)));
}

// Two writers on one path (two processes with a WIREWISE_LOG without %p): each full file is rotated once,
// by whichever finds it full first; the other only reopens. With keep large enough nothing is lost.
TEST_F(AdaptationLogTest, TwoWritersOnOnePathRotateItOnceAndLoseNothing) {
  const fs::path p = dir_ / "shared.jsonl";
  constexpr int kLines = 300;
  {
    AdaptationLog a(p.string(), 1024, false, LogRotation{8192, 1000});
    AdaptationLog b(p.string(), 1024, false, LogRotation{8192, 1000});
    ASSERT_TRUE(a.ok() && b.ok());
    std::thread ta([&] { postBatches(a, 0, kLines); });
    std::thread tb([&] { postBatches(b, kLines, 2 * kLines); });
    ta.join();
    tb.join();
  }
  std::vector<bool> seen(2 * kLines, false);
  int files = 0;
  for (int k = 0; k < 1000; ++k) {
    const fs::path f = k == 0 ? p : fs::path(rotatedLogPath(p.string(), k));
    if (!fs::exists(f)) break;
    ++files;
    for (const auto& j : readLines(f)) seen.at(j.at("seq").get<size_t>()) = true;
  }
  EXPECT_GE(files, 5);
  for (size_t i = 0; i < seen.size(); ++i) EXPECT_TRUE(seen[i]) << "line " << i << " lost";
}

TEST_F(AdaptationLogTest, DestructorFlushesAndAppends) {
  fs::path p = dir_ / "log.jsonl";
  for (int round = 0; round < 2; ++round) {
    AdaptationLog log(p.string(), 64);
    for (int i = 0; i < 10; ++i) log.post({{"event", "summary"}, {"i", round * 10 + i}});
  }
  auto lines = readLines(p);
  ASSERT_EQ(lines.size(), 20u);
  for (int i = 0; i < 20; ++i) EXPECT_EQ(lines[i].at("i"), i);
}

TEST_F(AdaptationLogTest, EmptyPathDisables) {
  AdaptationLog log("", 8);
  EXPECT_FALSE(log.ok());
  log.post({{"event", "plugin_start"}});
  log.flush();
  EXPECT_EQ(log.dropped(), 0u);
  EXPECT_EQ(log.written(), 0u);
}

TEST_F(AdaptationLogTest, UnopenablePathsReportAndDoNotCrash) {
  fs::create_directories(dir_);
  std::ofstream(dir_ / "file") << "x";
  AdaptationLog underFile((dir_ / "file" / "sub" / "log.jsonl").string(), 8);
  EXPECT_FALSE(underFile.ok());
  EXPECT_NE(underFile.error().find("cannot"), std::string::npos) << underFile.error();
  underFile.post({{"event", "plugin_stop"}});
  underFile.flush();

  AdaptationLog isDir(dir_.string(), 8);  // a directory cannot be opened for appending
  EXPECT_FALSE(isDir.ok());
  EXPECT_FALSE(isDir.error().empty());
}

// The file and the directories it needs are created private; the log is appended to, never replaced.
TEST_F(AdaptationLogTest, CreatesItsDirectoriesAndFilePrivate) {
  const fs::path p = dir_ / "a" / "log.jsonl";
  {
    AdaptationLog log(p.string(), 8);
    ASSERT_TRUE(log.ok()) << log.error();
    log.post({{"event", "plugin_start"}});
  }
  struct stat st{};
  ASSERT_EQ(::stat((dir_ / "a").c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0700u);
  ASSERT_EQ(::stat(p.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0600u);
  EXPECT_EQ(readLines(p).size(), 1u);
}

TEST_F(AdaptationLogTest, APlantedSymlinkIsRefusedAndItsTargetUntouched) {
  fs::create_directories(dir_);
  const fs::path victim = dir_ / "victim", p = dir_ / "log.jsonl";
  std::ofstream(victim) << "precious\n";
  fs::create_symlink(victim, p);
  for (bool ownDir : {false, true}) {
    AdaptationLog log(p.string(), 8, ownDir);
    EXPECT_FALSE(log.ok());
    EXPECT_NE(log.error().find(p.string() + " is a symbolic link"), std::string::npos) << log.error();
    log.post({{"event", "plugin_start"}});
  }
  std::ifstream in(victim);
  std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  EXPECT_EQ(text, "precious\n");
}

// The default location (ownDir): a directory others may write is refused, and the log is off.
TEST_F(AdaptationLogTest, AnOwnDirectoryOthersMayWriteIsRefused) {
  fs::create_directories(dir_);
  ASSERT_EQ(::chmod(dir_.c_str(), 0777), 0);
  const fs::path p = dir_ / "log.jsonl";
  AdaptationLog shared(p.string(), 8, /*ownDir=*/true);
  EXPECT_FALSE(shared.ok());
  EXPECT_NE(shared.error().find("writable by group or others: chmod 700 " + dir_.string()), std::string::npos)
      << shared.error();
  EXPECT_FALSE(fs::exists(p));
  AdaptationLog chosen(p.string(), 8);  // a path the user chose may lie in a shared directory
  EXPECT_TRUE(chosen.ok()) << chosen.error();
}

TEST_F(AdaptationLogTest, OddEventsNeverThrow) {
  fs::path p = dir_ / "log.jsonl";
  {
    AdaptationLog log(p.string(), 8);
    log.post(nlohmann::json(42));                                   // not an object: wrapped
    log.post({{"event", "config_problem"}, {"reason", "bad \xff utf8"}});  // invalid UTF-8: replaced
    log.post({{"event", "x"}, {"v", 99}, {"pid", -1}});              // envelope wins
  }
  auto lines = readLines(p);
  ASSERT_EQ(lines.size(), 3u);
  EXPECT_EQ(lines[0].at("payload"), 42);
  EXPECT_EQ(lines[1].at("event"), "config_problem");
  EXPECT_EQ(lines[2].at("v"), AdaptationLog::kSchemaVersion);
  EXPECT_EQ(lines[2].at("pid"), ::getpid());
}

// The writer is stalled on a FIFO nobody reads: post() must not block, the queue must stay bounded
// (drops counted), and once the reader drains, a log_dropped line reports the loss.
TEST_F(AdaptationLogTest, StalledWriterDropsAndCounts) {
  fs::create_directories(dir_);
  fs::path fifo = dir_ / "fifo";
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  std::string data;
  std::atomic<bool> posted{false};
  // The read end first: the log opens a pipe without blocking, and one nobody reads is refused.
  const int fd = ::open(fifo.c_str(), O_RDONLY | O_NONBLOCK);
  ASSERT_GE(fd, 0);
  ASSERT_EQ(::fcntl(fd, F_SETFL, ::fcntl(fd, F_GETFL) & ~O_NONBLOCK), 0);
  std::thread reader([&] {
    // Stall until every post() returned (or 10 s, so a blocking post() fails instead of hanging).
    waitUntil([&] { return posted.load(); }, std::chrono::seconds(10));
    char buf[65536];
    ssize_t n;
    while ((n = ::read(fd, buf, sizeof(buf))) > 0) data.append(buf, static_cast<size_t>(n));
    ::close(fd);
  });
  const int kPosts = 2000;
  const size_t kQueue = 16;
  uint64_t dropped = 0;
  {
    AdaptationLog log(fifo.string(), kQueue);
    ASSERT_TRUE(log.ok()) << log.error();
    std::string pad(1000, 'x');  // 2000 x ~1 KB lines cannot fit into a 64 KiB pipe plus 16 queued
    auto t0 = std::chrono::steady_clock::now();
    for (int i = 0; i < kPosts; ++i) log.post({{"event", "summary"}, {"i", i}, {"pad", pad}});
    auto elapsed = std::chrono::steady_clock::now() - t0;
    posted.store(true);
    EXPECT_LT(elapsed, std::chrono::seconds(5));  // never waited for the stalled writer
    dropped = log.dropped();
    EXPECT_GT(dropped, 0u);
  }  // destructor waits for the reader to drain, then joins
  reader.join();
  std::vector<nlohmann::json> lines;
  size_t pos = 0;
  while (pos < data.size()) {
    size_t nl = data.find('\n', pos);
    ASSERT_NE(nl, std::string::npos);
    lines.push_back(nlohmann::json::parse(data.substr(pos, nl - pos)));
    pos = nl + 1;
  }
  uint64_t reported = 0, normal = 0;
  int last = -1;
  for (const auto& j : lines) {
    if (j.at("event") == "log_dropped") {
      reported += j.at("count").get<uint64_t>();
      continue;
    }
    ++normal;
    EXPECT_GT(j.at("i").get<int>(), last);  // order preserved
    last = j.at("i").get<int>();
  }
  EXPECT_EQ(normal + dropped, static_cast<uint64_t>(kPosts));
  EXPECT_EQ(reported, dropped);
}

}  // namespace
}  // namespace wirewise
