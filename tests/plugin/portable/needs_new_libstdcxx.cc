// The negative control for portable_check.py: a library built the ordinary way, which needs this
// compiler's libstdc++ (std::condition_variable::wait is GLIBCXX_3.4.30 with GCC 12) and so must fail to
// load where old_libstdcxx.c's stand-in comes first. If it loaded, the stand-in would prove nothing.
#include <condition_variable>
#include <mutex>

extern "C" __attribute__((visibility("default"))) int wwWaitOnce(int wait) {
  std::mutex m;
  std::condition_variable cv;
  std::unique_lock<std::mutex> lock(m);
  if (wait != 0) cv.wait(lock);
  return 0;
}
