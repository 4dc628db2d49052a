#include "common/file_text.h"

#include <gtest/gtest.h>

#include <fstream>
#include <string>

namespace wirewise {
namespace {

std::string writeTemp(const std::string& name, const std::string& text) {
  const std::string path = ::testing::TempDir() + "/" + name;
  std::ofstream(path, std::ios::binary) << text;
  return path;
}

TEST(FileText, ReadsAWholeFileUpToTheBound) {
  const std::string text = std::string("a,b\n\0c", 6);  // bytes as they are, a NUL included
  const std::string path = writeTemp("ww_file_text_exact", text);
  FileText f = readFileText(path, text.size());
  EXPECT_TRUE(f.ok());
  EXPECT_EQ(f.text, text);
  EXPECT_EQ(f.error, "");
  EXPECT_TRUE(readFileText(writeTemp("ww_file_text_empty", ""), 0).ok());
}

TEST(FileText, OneByteOverTheBoundIsTooLarge) {
  const std::string path = writeTemp("ww_file_text_over", std::string(17, 'x'));
  FileText f = readFileText(path, 16);
  EXPECT_EQ(f.status, FileText::Status::kTooLarge);
  EXPECT_EQ(f.error, "larger than 16 B");
  EXPECT_TRUE(f.text.empty());
  EXPECT_EQ(readFileText(path, 16 << 20).text.size(), 17u);
}

TEST(FileText, AnEndlessFileStopsAtTheBound) {
  FileText f = readFileText("/dev/zero", size_t{16} << 20);
  EXPECT_EQ(f.status, FileText::Status::kTooLarge);
  EXPECT_EQ(f.error, "larger than 16 MiB");
}

TEST(FileText, SaysWhyItCouldNotRead) {
  FileText missing = readFileText("/nonexistent/ww_file_text", 1024);
  EXPECT_EQ(missing.status, FileText::Status::kCannotOpen);
  EXPECT_EQ(missing.error, "cannot open: No such file or directory");
  FileText dir = readFileText(::testing::TempDir(), 1024);
  EXPECT_EQ(dir.status, FileText::Status::kCannotRead);
  EXPECT_EQ(dir.error, "cannot read: Is a directory");
  EXPECT_FALSE(dir.ok());
}

}  // namespace
}  // namespace wirewise
