#include "telemetry/adaptation_log.h"

#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <ctime>
#include <filesystem>

#include "common/safe_files.h"

namespace wirewise {
namespace {

std::string isoUtcNow() {
  using namespace std::chrono;
  auto now = system_clock::now();
  auto ms = duration_cast<milliseconds>(now.time_since_epoch()).count();
  std::time_t secs = static_cast<std::time_t>(ms / 1000);
  std::tm tm{};
  gmtime_r(&secs, &tm);
  char buf[40];
  size_t n = std::strftime(buf, sizeof(buf), "%Y-%m-%dT%H:%M:%S", &tm);
  std::snprintf(buf + n, sizeof(buf) - n, ".%03dZ", static_cast<int>(ms % 1000));
  return buf;
}

}  // namespace

std::string rotatedLogPath(const std::string& path, int k) {
  const std::filesystem::path p(path);
  const std::string n = "." + std::to_string(k);
  if (!p.has_extension() || p.stem().empty()) return path + n;
  return (p.parent_path() / (p.stem().string() + n + p.extension().string())).string();
}

AdaptationLog::AdaptationLog(std::string path, size_t maxQueuedLines, bool ownDir, LogRotation rotation)
    : path_(std::move(path)), ownDir_(ownDir), rotation_(rotation), maxQueued_(maxQueuedLines == 0 ? 1 : maxQueuedLines) {
  if (path_.empty()) {
    error_ = "disabled (empty path)";
    return;
  }
  try {
    if (error_ = makePrivateDirs(std::filesystem::path(path_).parent_path().string()); !error_.empty()) return;
    const int fd = openFile();
    if (fd < 0) return;
    // Append: several processes may share one file; each line is a single write of a whole batch.
    file_ = ::fdopen(fd, "a");
    if (file_ == nullptr) {
      error_ = "cannot open " + path_ + ": " + std::strerror(errno);
      ::close(fd);
      return;
    }
    writer_ = std::thread([this] { run(); });
    ok_ = true;
  } catch (const std::exception& e) {
    error_ = std::string("cannot start the log: ") + e.what();
  } catch (...) {
    error_ = "cannot start the log";
  }
  if (!ok_ && file_ != nullptr) {
    std::fclose(file_);
    file_ = nullptr;
  }
}

int AdaptationLog::openFile() {
  const uid_t uid = ::geteuid();
  const std::string parent = std::filesystem::path(path_).parent_path().string();
  int dirFd = -1;
  if (ownDir_ && (dirFd = openOwnDir(parent.empty() ? "." : parent, uid, &error_)) < 0) return -1;
  const int fd = openAppendLog(dirFd, path_, uid, &error_);
  if (dirFd >= 0) ::close(dirFd);
  return fd;
}

// Several processes may append to one path (WIREWISE_LOG without %p). The first to find the file full
// renames it; the others then find that the path names another file than theirs and only reopen it, so
// a file is rotated once however many write to it. A rotation that cannot open the new file keeps
// writing to the old one (now renamed): no line is lost, and it tries again after the next batch.
void AdaptationLog::rotate() {
  // Writers that find the file full at once take turns (a lock on the file itself, held for the renames
  // only): two that both renamed would push one full file over the other.
  const int fd = ::fileno(file_);
  while (::flock(fd, LOCK_EX) != 0 && errno == EINTR) {
  }
  struct stat mine {}, named {};
  const bool same = ::fstat(fd, &mine) == 0 && ::stat(path_.c_str(), &named) == 0 && mine.st_dev == named.st_dev &&
                    mine.st_ino == named.st_ino;
  bool renamed = false;
  if (same) {
    for (int k = rotation_.keep; k > 1; --k)
      ::rename(rotatedLogPath(path_, k - 1).c_str(), rotatedLogPath(path_, k).c_str());
    renamed = ::rename(path_.c_str(), rotatedLogPath(path_, 1).c_str()) == 0;
  }
  ::flock(fd, LOCK_UN);
  if (same && !renamed) return;
  std::string why;
  std::swap(why, error_);
  const int fresh = openFile();
  std::swap(why, error_);
  if (fresh < 0) return;
  std::FILE* next = ::fdopen(fresh, "a");
  if (next == nullptr) {
    ::close(fresh);
    return;
  }
  std::fclose(file_);
  file_ = next;
  if (same) {
    std::lock_guard<std::mutex> lk(mu_);
    ++rotations_;
  }
}

AdaptationLog::~AdaptationLog() {
  if (!writer_.joinable()) return;
  {
    std::lock_guard<std::mutex> lk(mu_);
    stop_ = true;
  }
  cv_.notify_all();
  writer_.join();
  std::fclose(file_);
}

void AdaptationLog::post(nlohmann::json event) noexcept {
  if (!ok_) return;
  try {
    if (!event.is_object()) event = nlohmann::json{{"payload", std::move(event)}};
    logev::stamp(event, {kSchemaVersion, isoUtcNow(), static_cast<int64_t>(::getpid())});
    // Invalid UTF-8 in a caller's string must not throw: replace it.
    std::string line = event.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
    {
      std::lock_guard<std::mutex> lk(mu_);
      if (queue_.size() >= maxQueued_) {
        ++dropped_;
        return;
      }
      queue_.push_back(std::move(line));
      ++posted_;
    }
    cv_.notify_one();
  } catch (...) {
    try {
      std::lock_guard<std::mutex> lk(mu_);
      ++dropped_;
    } catch (...) {
    }
  }
}

void AdaptationLog::flush() {
  if (!ok_) return;
  std::unique_lock<std::mutex> lk(mu_);
  uint64_t target = posted_;
  drained_.wait(lk, [&] { return written_ >= target; });
}

uint64_t AdaptationLog::dropped() const {
  std::lock_guard<std::mutex> lk(mu_);
  return dropped_;
}

uint64_t AdaptationLog::written() const {
  std::lock_guard<std::mutex> lk(mu_);
  return written_;
}

uint64_t AdaptationLog::rotations() const {
  std::lock_guard<std::mutex> lk(mu_);
  return rotations_;
}

void AdaptationLog::run() {
  std::deque<std::string> batch;
  std::unique_lock<std::mutex> lk(mu_);
  for (;;) {
    cv_.wait(lk, [&] { return stop_ || !queue_.empty() || dropped_ != reportedDropped_; });
    if (stop_ && queue_.empty() && dropped_ == reportedDropped_) break;
    batch.swap(queue_);
    uint64_t newDrops = dropped_ - reportedDropped_;
    reportedDropped_ = dropped_;
    lk.unlock();
    // I/O happens without the lock, so post() never waits for the disk.
    size_t lines = batch.size();
    for (const std::string& line : batch) {
      std::fwrite(line.data(), 1, line.size(), file_);
      std::fputc('\n', file_);
    }
    batch.clear();
    if (newDrops != 0) {
      try {
        nlohmann::json note = logev::LogDropped{newDrops};
        logev::stamp(note, {kSchemaVersion, isoUtcNow(), static_cast<int64_t>(::getpid())});
        std::string line = note.dump();
        std::fwrite(line.data(), 1, line.size(), file_);
        std::fputc('\n', file_);
        } catch (...) {
      }
    }
    std::fflush(file_);
    // The file's own size, not what this writer wrote: another process sharing the path counts too, and a
    // file another writer has rotated away is full, so this one follows it to the new file at once.
    struct stat st {};
    if (rotation_.maxBytes > 0 && ::fstat(::fileno(file_), &st) == 0 &&
        static_cast<uint64_t>(st.st_size) >= rotation_.maxBytes)
      rotate();
    lk.lock();
    written_ += lines;  // posted lines only (flush() compares with posted_), not log_dropped notes
    drained_.notify_all();
  }
}

}  // namespace wirewise
