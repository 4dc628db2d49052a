// ProcessGroup: the fork, the frames both ways, and a child's failure or death turned into an error (or, when
// process 0 never looks, into the watchdog's exit) rather than a hang.
#include <signal.h>
#include <unistd.h>

#include <chrono>
#include <condition_variable>
#include <functional>
#include <memory>
#include <mutex>
#include <stdexcept>
#include <string>
#include <thread>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "sim/driver/process_group.h"

namespace wirewise::sim {
namespace {

using ::testing::HasSubstr;

// Runs body in a child and leaves; no-op in process 0. A child must never return into GoogleTest.
template <class F>
void inChild(ProcessGroup& g, F body) {
  if (g.parent()) return;
  int rc = 0;
  try {
    body();
  } catch (...) {
    rc = 1;
  }
  ProcessGroup::exitChild(rc);
}

std::string errorOf(const std::function<void()>& f) {
  try {
    f();
  } catch (const std::runtime_error& e) {
    return e.what();
  }
  return "(no error)";
}

TEST(ProcessGroup, OneProcessForksNothing) {
  ProcessGroup g(1);
  EXPECT_TRUE(g.parent());
  EXPECT_EQ(g.size(), 1);
  EXPECT_EQ(g.pid(0), ::getpid());
  EXPECT_TRUE(g.gather('X').empty());
  g.finish();
}

TEST(ProcessGroup, FramesGoBothWaysAndChildrenExitCleanly) {
  const std::string big(300000, 'x');  // more than a socket buffer: partial reads and writes
  ProcessGroup g(3);
  inChild(g, [&] {
    const std::string m = g.receive('Q');
    g.send('A', m + std::to_string(g.index()));
    g.send('B', "");
  });
  ASSERT_TRUE(g.parent());
  EXPECT_EQ(g.pid(0), ::getpid());
  EXPECT_NE(g.pid(1), g.pid(2));
  EXPECT_NE(g.pid(1), ::getpid());
  g.broadcast('Q', big);
  const auto got = g.gather('A');
  ASSERT_EQ(got.size(), 2u);
  EXPECT_EQ(got[0], big + "1");
  EXPECT_EQ(got[1], big + "2");
  const auto empty = g.gather('B');
  EXPECT_EQ(empty, (std::vector<std::string>{"", ""}));
  g.finish();
}

TEST(ProcessGroup, AChildsErrorFrameReachesProcessZero) {
  ProcessGroup g(3);
  inChild(g, [&] {
    if (g.index() == 2) g.send('E', "no plugin here");
    else g.send('A', "fine");
  });
  const std::string e = errorOf([&] { g.gather('A'); });
  EXPECT_THAT(e, HasSubstr("simulator process 2"));
  EXPECT_THAT(e, HasSubstr("no plugin here"));
}

TEST(ProcessGroup, ADeadChildIsNamedWithItsExitStatus) {
  ProcessGroup g(2);
  inChild(g, [&] { ProcessGroup::exitChild(3); });
  const std::string e = errorOf([&] { g.gather('A'); });
  EXPECT_THAT(e, HasSubstr("simulator process 1 (pid " + std::to_string(g.pid(1)) + ") exited with status 3"));
}

TEST(ProcessGroup, AKilledChildIsNamedWithItsSignal) {
  ProcessGroup g(3);
  inChild(g, [&] {
    g.receive('Q');
    g.send('A', "");
  });
  ::kill(g.pid(2), SIGKILL);
  const std::string e = errorOf([&] {
    g.broadcast('Q', "");
    g.gather('A');
  });
  EXPECT_THAT(e, HasSubstr("simulator process 2"));
  EXPECT_THAT(e, HasSubstr("killed by signal 9"));
}

TEST(ProcessGroup, FinishReportsAChildThatExitsBadlyAfterItsLastFrame) {
  ProcessGroup g(2);
  inChild(g, [&] {
    g.send('R', "");
    ProcessGroup::exitChild(4);
  });
  g.gather('R');
  EXPECT_THAT(errorOf([&] { g.finish(); }), HasSubstr("exited with status 4"));
}

TEST(ProcessGroup, AChildLeavesWhenProcessZeroGoes) {
  auto g = std::make_unique<ProcessGroup>(2);
  inChild(*g, [&] { g->receive('Q'); });  // throws at end of file: the child leaves with status 1
  // The destructor closes the channel and reaps, killing a child still there after 2 s: a child that
  // noticed the closed channel is gone well before.
  const auto t0 = std::chrono::steady_clock::now();
  g.reset();
  EXPECT_LT(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count(), 1.5);
}

TEST(ProcessGroup, RefusesToForkAMultithreadedProcess) {
  std::mutex mu;
  std::condition_variable cv;
  bool stop = false;
  std::thread t([&] {
    std::unique_lock<std::mutex> lock(mu);
    cv.wait(lock, [&] { return stop; });
  });
  EXPECT_THAT(errorOf([] { ProcessGroup g(2); }), HasSubstr("threads"));
  EXPECT_NO_THROW(ProcessGroup g(1));
  {
    std::lock_guard<std::mutex> lock(mu);
    stop = true;
  }
  cv.notify_all();
  t.join();
}

TEST(ProcessGroupDeathTest, WatchdogEndsAProcessZeroThatNeverNotices) {
  // Process 0 "blocked in the plugin": it never gathers, so only the watchdog can see the child die.
  EXPECT_EXIT(
      {
        ProcessGroup g(2, /*watchdogSeconds=*/1);
        if (!g.parent()) ProcessGroup::exitChild(0);
        ::sleep(20);  // the scenario: blocked, never gathering, until the watchdog ends the process
        std::_Exit(0);
      },
      ::testing::ExitedWithCode(2), "simulator process 1 .* died 1 s ago and process 0 is blocked in the plugin");
}

}  // namespace
}  // namespace wirewise::sim
