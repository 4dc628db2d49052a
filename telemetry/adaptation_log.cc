#include "telemetry/adaptation_log.h"

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

AdaptationLog::AdaptationLog(std::string path, size_t maxQueuedLines, bool ownDir)
    : path_(std::move(path)), maxQueued_(maxQueuedLines == 0 ? 1 : maxQueuedLines) {
  if (path_.empty()) {
    error_ = "disabled (empty path)";
    return;
  }
  try {
    const uid_t uid = ::geteuid();
    const std::string parent = std::filesystem::path(path_).parent_path().string();
    if (error_ = makePrivateDirs(parent); !error_.empty()) return;
    int dirFd = -1;
    if (ownDir && (dirFd = openOwnDir(parent.empty() ? "." : parent, uid, &error_)) < 0) return;
    const int fd = openAppendLog(dirFd, path_, uid, &error_);
    if (dirFd >= 0) ::close(dirFd);
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
    lk.lock();
    written_ += lines;  // posted lines only (flush() compares with posted_), not log_dropped notes
    drained_.notify_all();
  }
}

}  // namespace wirewise
