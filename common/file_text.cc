#include "common/file_text.h"

#include <cerrno>
#include <cstdio>
#include <exception>
#include <system_error>

#include "common/units.h"

namespace wirewise {

FileText readFileText(const std::string& path, size_t maxBytes) noexcept {
  FileText out;
  std::FILE* f = nullptr;
  try {
    auto fail = [&](FileText::Status status, std::string error) {
      out.status = status;
      out.text.clear();
      out.error = std::move(error);
      return std::move(out);
    };
    f = std::fopen(path.c_str(), "rb");
    if (f == nullptr)
      return fail(FileText::Status::kCannotOpen, "cannot open: " + std::generic_category().message(errno));
    char buf[65536];
    size_t n = 0;
    while (out.text.size() <= maxBytes && (n = std::fread(buf, 1, sizeof buf, f)) > 0) out.text.append(buf, n);
    const int readError = std::ferror(f) ? errno : 0;
    std::fclose(f);
    f = nullptr;
    if (readError != 0)
      return fail(FileText::Status::kCannotRead, "cannot read: " + std::generic_category().message(readError));
    if (out.text.size() > maxBytes) return fail(FileText::Status::kTooLarge, "larger than " + bytesText(maxBytes));
    return out;
  } catch (const std::exception& e) {  // only allocation can get here
    if (f != nullptr) std::fclose(f);
    FileText failed;
    failed.status = FileText::Status::kCannotRead;
    try {
      failed.error = std::string("internal error while reading: ") + e.what();
    } catch (...) {
    }
    return failed;
  }
}

}  // namespace wirewise
