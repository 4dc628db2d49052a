// Files in shared places: private directories, logs that refuse a planted link or another user's file,
// secrets only their owner can read. The tests run as any user; the ones that hand a file or directory to
// another user need root (chown) and say so when skipped.
#include "common/safe_files.h"

#include <fcntl.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

namespace wirewise {
namespace {

using ::testing::HasSubstr;
namespace fs = std::filesystem;

constexpr uid_t kOther = 4242;  // a user that is not us

class SafeFiles : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/ww-safe-files-XXXXXX";
    ASSERT_NE(::mkdtemp(tmpl), nullptr);
    dir_ = tmpl;
  }
  void TearDown() override { fs::remove_all(dir_); }
  static std::string text(const std::string& path) {
    std::ifstream f(path);
    std::stringstream ss;
    ss << f.rdbuf();
    return ss.str();
  }
  static mode_t modeOf(const std::string& path) {
    struct stat st{};
    EXPECT_EQ(::lstat(path.c_str(), &st), 0) << path;
    return st.st_mode & 07777;
  }
  void write(const std::string& path, const std::string& content, mode_t mode) {
    std::ofstream(path) << content;
    ASSERT_EQ(::chmod(path.c_str(), mode), 0);
  }
  const uid_t me_ = ::geteuid();
  std::string dir_;
};

bool root() { return ::geteuid() == 0; }

TEST_F(SafeFiles, MissingDirectoriesAreCreatedPrivate) {
  const std::string deep = dir_ + "/a/b/c";
  EXPECT_EQ(makePrivateDirs(deep), "");
  for (const std::string& d : {dir_ + "/a", dir_ + "/a/b", deep}) EXPECT_EQ(modeOf(d), 0700u) << d;
  EXPECT_EQ(makePrivateDirs(deep), "");  // existing: fine
  write(dir_ + "/file", "x", 0600);
  EXPECT_THAT(makePrivateDirs(dir_ + "/file/sub"), HasSubstr("cannot create directory " + dir_ + "/file/sub"));
}

TEST_F(SafeFiles, ALogIsCreated0600AndAppendedTo) {
  const std::string log = dir_ + "/log.jsonl";
  for (int i = 0; i < 2; ++i) {
    std::string problem = "stale";
    const int fd = openAppendLog(-1, log, me_, &problem);
    ASSERT_GE(fd, 0) << problem;
    EXPECT_EQ(problem, "");
    EXPECT_EQ(::write(fd, "x\n", 2), 2);
    EXPECT_NE(::fcntl(fd, F_GETFD) & FD_CLOEXEC, 0);
    EXPECT_EQ(::fcntl(fd, F_GETFL) & O_NONBLOCK, 0);
    ::close(fd);
  }
  EXPECT_EQ(text(log), "x\nx\n");
  EXPECT_EQ(modeOf(log), 0600u);
}

TEST_F(SafeFiles, APlantedSymlinkIsRefusedAndItsTargetUntouched) {
  const std::string victim = dir_ + "/victim", log = dir_ + "/log.jsonl";
  write(victim, "precious\n", 0600);
  ASSERT_EQ(::symlink(victim.c_str(), log.c_str()), 0);
  std::string problem;
  EXPECT_EQ(openAppendLog(-1, log, me_, &problem), -1);
  EXPECT_THAT(problem, HasSubstr(log + " is a symbolic link"));
  EXPECT_THAT(problem, HasSubstr("remove it"));
  // Relative to a checked directory too.
  std::string dirProblem;
  const int d = openOwnDir(dir_, me_, &dirProblem);
  ASSERT_GE(d, 0) << dirProblem;
  EXPECT_EQ(openAppendLog(d, log, me_, &problem), -1);
  EXPECT_THAT(problem, HasSubstr(log + " is a symbolic link"));
  ::close(d);
  EXPECT_EQ(text(victim), "precious\n");
  // A dangling link would have been created through: refused as well, and nothing appears at its target.
  ASSERT_EQ(::unlink(log.c_str()), 0);
  ASSERT_EQ(::symlink((dir_ + "/created-through").c_str(), log.c_str()), 0);
  EXPECT_EQ(openAppendLog(-1, log, me_, &problem), -1);
  EXPECT_FALSE(fs::exists(dir_ + "/created-through"));
}

TEST_F(SafeFiles, AHardLinkAPipeOrAnotherUsersFileIsRefused) {
  const std::string mine = dir_ + "/mine", linked = dir_ + "/linked.jsonl";
  write(mine, "", 0600);
  ASSERT_EQ(::link(mine.c_str(), linked.c_str()), 0);
  std::string problem;
  EXPECT_EQ(openAppendLog(-1, linked, me_, &problem), -1);
  EXPECT_THAT(problem, HasSubstr("2 hard links"));

  // A pipe nobody reads: refused, and the open did not block on it.
  const std::string fifo = dir_ + "/fifo.jsonl";
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  const auto start = std::chrono::steady_clock::now();
  EXPECT_EQ(openAppendLog(-1, fifo, me_, &problem), -1);
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(5));
  EXPECT_THAT(problem, HasSubstr(fifo + " is a pipe that nobody reads"));
  // With a reader (a log shipper of the user's), a pipe of the user's is a log.
  const int reader = ::open(fifo.c_str(), O_RDONLY | O_NONBLOCK);
  ASSERT_GE(reader, 0);
  const int fd = openAppendLog(-1, fifo, me_, &problem);
  EXPECT_GE(fd, 0) << problem;
  EXPECT_EQ(::write(fd, "x\n", 2), 2);
  char buf[4] = {};
  EXPECT_EQ(::read(reader, buf, sizeof buf), 2);
  ::close(fd);
  ::close(reader);
  EXPECT_EQ(openAppendLog(-1, "/dev/null", me_ + 1, &problem), -1);  // a device

  // Owned by someone else: as a user other than the file's (the check compares with the uid given).
  const std::string theirs = dir_ + "/theirs.jsonl";
  write(theirs, "", 0666);
  EXPECT_EQ(openAppendLog(-1, theirs, me_ + 1, &problem), -1);
  EXPECT_THAT(problem, HasSubstr("belongs to uid " + std::to_string(me_)));
}

TEST_F(SafeFiles, AnotherUsersFileIsRefused) {
  if (!root()) GTEST_SKIP() << "needs root to give a file to another user (chown)";
  const std::string theirs = dir_ + "/theirs.jsonl";
  write(theirs, "", 0666);
  ASSERT_EQ(::chown(theirs.c_str(), kOther, kOther), 0);
  std::string problem;
  EXPECT_EQ(openAppendLog(-1, theirs, me_, &problem), -1);
  EXPECT_THAT(problem, HasSubstr("belongs to uid 4242, not to this user"));
  EXPECT_EQ(text(theirs), "");
}

TEST_F(SafeFiles, OwnDirectoryMustBeOursAndWritableByNobodyElse) {
  std::string problem;
  int fd = openOwnDir(dir_, me_, &problem);
  EXPECT_GE(fd, 0) << problem;
  ::close(fd);
  ASSERT_EQ(::chmod(dir_.c_str(), 0755), 0);  // readable by others is fine: the files are 0600
  fd = openOwnDir(dir_, me_, &problem);
  EXPECT_GE(fd, 0) << problem;
  ::close(fd);
  for (mode_t m : {0770, 0757, 01777}) {
    ASSERT_EQ(::chmod(dir_.c_str(), m), 0);
    EXPECT_EQ(openOwnDir(dir_, me_, &problem), -1) << std::oct << m;
    EXPECT_THAT(problem, HasSubstr("writable by group or others: chmod 700 " + dir_));
  }
  ASSERT_EQ(::chmod(dir_.c_str(), 0700), 0);
  const std::string link = dir_ + "-link";
  ASSERT_EQ(::symlink(dir_.c_str(), link.c_str()), 0);
  EXPECT_EQ(openOwnDir(link, me_, &problem), -1);
  EXPECT_THAT(problem, HasSubstr("the directory " + link + " is a symbolic link"));
  ::unlink(link.c_str());
  EXPECT_EQ(openOwnDir(dir_ + "/missing", me_, &problem), -1);
  EXPECT_THAT(problem, HasSubstr("cannot open directory"));
}

TEST_F(SafeFiles, AForeignOwnedDirectoryIsRefusedEvenWhenNotWritable) {
  if (!root()) GTEST_SKIP() << "needs root to give a directory to another user (chown)";
  const std::string theirs = dir_ + "/wirewise-" + std::to_string(me_);
  ASSERT_EQ(::mkdir(theirs.c_str(), 0755), 0);
  ASSERT_EQ(::chown(theirs.c_str(), kOther, kOther), 0);
  std::string problem;
  EXPECT_EQ(openOwnDir(theirs, me_, &problem), -1);
  EXPECT_THAT(problem, HasSubstr("the directory " + theirs + " belongs to uid 4242, not to this user"));
  EXPECT_THAT(problem, HasSubstr("remove it"));
}

TEST_F(SafeFiles, ASecretIsReadOnlyFromAFileOfTheOwnerAlone) {
  const std::string key = dir_ + "/job.key";
  write(key, "  s3cret-key\n\n", 0600);
  std::string problem;
  EXPECT_EQ(readSecretFile(key, me_, 4096, &problem), "s3cret-key");
  EXPECT_EQ(problem, "");
  write(key, "k", 0400);
  EXPECT_EQ(readSecretFile(key, me_, 4096, &problem), "k");
  for (mode_t m : {0640, 0604, 0660, 0602, 0644}) {
    write(key, "s3cret", m);
    EXPECT_EQ(readSecretFile(key, me_, 4096, &problem), "") << std::oct << m;
    EXPECT_THAT(problem, HasSubstr("may be read or written by group or others: chmod 600 " + key));
    EXPECT_EQ(problem.find("s3cret"), std::string::npos);  // a refusal never shows the content
  }
  write(key, " \n\t", 0600);
  EXPECT_EQ(readSecretFile(key, me_, 4096, &problem), "");
  EXPECT_THAT(problem, HasSubstr(key + " is empty"));
  write(key, std::string(5000, 'k'), 0600);
  EXPECT_EQ(readSecretFile(key, me_, 4096, &problem), "");
  EXPECT_THAT(problem, HasSubstr("more than a key"));
  EXPECT_EQ(readSecretFile(dir_ + "/missing", me_, 4096, &problem), "");
  EXPECT_THAT(problem, HasSubstr("cannot open " + dir_ + "/missing"));
  EXPECT_THAT(problem, HasSubstr("chmod 600"));
  EXPECT_EQ(readSecretFile(dir_, me_, 4096, &problem), "");
  EXPECT_THAT(problem, HasSubstr("not a regular file"));
  write(key, "s3cret", 0600);
  EXPECT_EQ(readSecretFile(key, me_ + 1, 4096, &problem), "");  // not the given user's
  EXPECT_THAT(problem, HasSubstr("belongs to uid"));
}

TEST_F(SafeFiles, ASecretOfAnotherUserIsRefused) {
  if (!root()) GTEST_SKIP() << "needs root to give a file to another user (chown)";
  const std::string key = dir_ + "/job.key";
  write(key, "s3cret", 0600);
  ASSERT_EQ(::chown(key.c_str(), kOther, kOther), 0);
  std::string problem;
  EXPECT_EQ(readSecretFile(key, me_, 4096, &problem), "");
  EXPECT_THAT(problem, HasSubstr("belongs to uid 4242"));
}

TEST_F(SafeFiles, ASecretReachedThroughALinkIsCheckedWhereItLies) {
  const std::string key = dir_ + "/job.key", link = dir_ + "/key-link";
  write(key, "s3cret", 0600);
  ASSERT_EQ(::symlink(key.c_str(), link.c_str()), 0);
  std::string problem;
  EXPECT_EQ(readSecretFile(link, me_, 4096, &problem), "s3cret") << problem;
  ASSERT_EQ(::chmod(key.c_str(), 0644), 0);
  EXPECT_EQ(readSecretFile(link, me_, 4096, &problem), "");
  EXPECT_THAT(problem, HasSubstr("chmod 600"));
}

}  // namespace
}  // namespace wirewise
