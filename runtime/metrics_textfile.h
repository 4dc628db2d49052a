// The node_exporter textfile output of the Prometheus metrics (docs/prometheus.md): one file per process,
// `<dir>/wirewise-<host>-<pid>.prom`, rewritten every period and once more at stop. The collector may read
// the file at any moment, so each version is written to `<name>.tmp` and renamed over it: a reader sees
// the old file or the new one, never half of one.
//
// Its own thread does the writing, so neither NCCL's threads nor the runtime's other threads ever wait
// for a disk. The file stays after the process ends (a short job's last numbers remain scrapeable;
// node_exporter's node_textfile_mtime_seconds tells a stale file).
#pragma once

#include <chrono>
#include <condition_variable>
#include <functional>
#include <mutex>
#include <string>
#include <thread>

namespace wirewise {

class MetricsTextfile {
 public:
  using RenderFn = std::function<std::string()>;
  using WarnFn = std::function<void(const std::string&)>;

  // render: the exposition text (Metrics::render); warn: a failed write, said once until a write succeeds.
  MetricsTextfile(RenderFn render, WarnFn warn, std::string dir, const std::string& host, long pid,
                  std::chrono::milliseconds period);
  ~MetricsTextfile();  // stop()
  MetricsTextfile(const MetricsTextfile&) = delete;
  MetricsTextfile& operator=(const MetricsTextfile&) = delete;

  // Creates the directory's missing parts (0700), writes the first file, starts the thread. False, with
  // *problem (a sentence naming the path and the fix), when the directory or the file cannot be made.
  bool start(std::string* problem);
  // Writes the last version and joins the thread; idempotent.
  void stop();
  // One write now, on the caller's thread: "" or the problem.
  std::string writeNow();

  const std::string& path() const { return path_; }

 private:
  void loop();

  RenderFn render_;
  WarnFn warn_;
  std::string dir_, path_;
  std::chrono::milliseconds period_;
  std::mutex mu_;
  std::condition_variable cv_;
  bool stop_ = false;
  bool warned_ = false;  // a failure was said; the next success re-arms it
  std::mutex writeMu_;   // the thread's write and stop()'s last one
  std::thread thread_;
};

}  // namespace wirewise
