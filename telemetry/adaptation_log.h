// The adaptation log: JSON lines (schema in docs/adaptation-log.md), one event per line, written by a
// background thread. post() never blocks on I/O: it copies the line into a bounded queue and drops
// (and counts) when the queue is full, so a slow disk can never stall a rank.
#pragma once

#include <condition_variable>
#include <cstdio>
#include <cstdint>
#include <deque>
#include <mutex>
#include <string>
#include <thread>

#include <nlohmann/json.hpp>

#include "common/log_events.h"

namespace wirewise {

// Size-capped rotation (WIREWISE_LOG_MAX_MB, WIREWISE_LOG_KEEP; docs/adaptation-log.md "Rotation"): once the
// file reaches maxBytes, after a whole batch of lines, it is renamed to rotatedLogPath(path, 1) (the one
// there moves to 2, and so on up to keep; the oldest is replaced) and a new file is opened at path.
// maxBytes 0: never.
struct LogRotation {
  uint64_t maxBytes = 0;
  int keep = 1;
};

// The k-th newest rotated file of path (k >= 1): "dir/h-7.jsonl" -> "dir/h-7.k.jsonl", so that a glob for
// *.jsonl still finds them; a name without an extension gets ".k" appended.
std::string rotatedLogPath(const std::string& path, int k);

class AdaptationLog {
 public:
  // path "" disables the log (post() is then a no-op). Creates missing parent directories (0700) and the
  // file (0600), never through a symbolic link; an existing file must be a regular one of this user's
  // (common/safe_files.h). ownDir: the directory must also be this user's and writable by nobody else (the
  // default location, in a shared /tmp). A refused or unopenable path disables the log; ok() tells,
  // error() says why and what to do.
  AdaptationLog(std::string path, size_t maxQueuedLines, bool ownDir = false, LogRotation rotation = {});
  ~AdaptationLog();  // flushes what is queued, then joins the writer
  AdaptationLog(const AdaptationLog&) = delete;
  AdaptationLog& operator=(const AdaptationLog&) = delete;

  // Adds "v" (schema version), "ts" (wall-clock ISO-8601 UTC with ms) and "pid" (overriding any the
  // caller set) and queues the line. A typed event (common/log_events.h) converts to its JSON at the call. A non-object event is wrapped as {"payload": event}. Never throws;
  // a line that cannot be built or queued counts as dropped. Lines dropped because the queue was full
  // are reported by the writer in a {"event":"log_dropped","count":N} line once it catches up.
  void post(nlohmann::json event) noexcept;
  void flush();  // waits until everything queued so far is written
  bool ok() const { return ok_; }
  const std::string& error() const { return error_; }
  const std::string& path() const { return path_; }
  uint64_t dropped() const;
  uint64_t written() const;  // posted lines written so far (log_dropped notes not counted)
  uint64_t rotations() const;  // files this writer has rotated away (another process's rotations not counted)
  static constexpr int kSchemaVersion = logev::kSchemaVersion;

 private:
  void run();
  int openFile();  // the path's file, checked (common/safe_files.h); -1 with error_ set
  void rotate();   // writer thread, between batches
  std::string path_;
  bool ownDir_ = false;
  LogRotation rotation_;
  size_t maxQueued_;
  bool ok_ = false;
  std::string error_;
  std::FILE* file_ = nullptr;
  mutable std::mutex mu_;
  std::condition_variable cv_, drained_;
  std::deque<std::string> queue_;
  uint64_t dropped_ = 0, reportedDropped_ = 0, posted_ = 0, written_ = 0, rotations_ = 0;
  bool stop_ = false;
  std::thread writer_;
};

}  // namespace wirewise
