#include "runtime/metrics_textfile.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>

#include "common/safe_files.h"

namespace wirewise {
namespace {

// Writes all of text to fd; false with errno set on a short or failed write.
bool writeAll(int fd, const std::string& text) {
  size_t done = 0;
  while (done < text.size()) {
    const ssize_t n = ::write(fd, text.data() + done, text.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    done += static_cast<size_t>(n);
  }
  return true;
}

}  // namespace

MetricsTextfile::MetricsTextfile(RenderFn render, WarnFn warn, std::string dir, const std::string& host, long pid,
                                 std::chrono::milliseconds period)
    : render_(std::move(render)), warn_(std::move(warn)), dir_(std::move(dir)), period_(period) {
  path_ = dir_ + "/wirewise-" + host + "-" + std::to_string(pid) + ".prom";
}

MetricsTextfile::~MetricsTextfile() { stop(); }

bool MetricsTextfile::start(std::string* problem) {
  if (std::string p = makePrivateDirs(dir_); !p.empty()) {
    *problem = p;
    return false;
  }
  if (std::string p = writeNow(); !p.empty()) {
    *problem = p;
    return false;
  }
  thread_ = std::thread([this] { loop(); });
  return true;
}

void MetricsTextfile::stop() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (stop_) return;
    stop_ = true;
  }
  cv_.notify_all();
  if (thread_.joinable()) thread_.join();
  if (std::string p = writeNow(); !p.empty() && !warned_) warn_(p);
}

std::string MetricsTextfile::writeNow() {
  std::lock_guard<std::mutex> lock(writeMu_);
  const std::string text = render_();
  const std::string tmp = path_ + ".tmp";
  // A fresh file of our own each time: a leftover (or planted) .tmp is removed, and O_EXCL|O_NOFOLLOW
  // refuses whatever appears there between the unlink and the open. 0644: the textfile collector
  // usually runs as another user; the metrics hold nothing the log's 0600 protects (no key, no path).
  ::unlink(tmp.c_str());
  const int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644);
  if (fd < 0)
    return "cannot create " + tmp + ": " + std::strerror(errno) + " (make the directory writable, or set another " +
           "directory)";
  const bool written = writeAll(fd, text);
  const int err = errno;
  const bool closed = ::close(fd) == 0;
  if (!written || !closed) {
    ::unlink(tmp.c_str());
    return "cannot write " + tmp + ": " + std::strerror(written ? errno : err) + " (is the file system full?)";
  }
  if (::rename(tmp.c_str(), path_.c_str()) != 0) {
    const int e = errno;
    ::unlink(tmp.c_str());
    return "cannot rename " + tmp + " to " + path_ + ": " + std::strerror(e);
  }
  return "";
}

void MetricsTextfile::loop() {
  // The thread's top: nothing may leave it (std::terminate would end the job).
  try {
    std::unique_lock<std::mutex> lock(mu_);
    while (!stop_) {
      if (cv_.wait_for(lock, period_, [this] { return stop_; })) break;
      lock.unlock();
      const std::string p = writeNow();
      if (!p.empty() && !warned_) warn_(p);
      warned_ = !p.empty();
      lock.lock();
    }
  } catch (...) {
    // Memory ran out: the file keeps its last version; stop() tries once more.
  }
}

}  // namespace wirewise
