#include "telemetry/launch_ring.h"

#include <gtest/gtest.h>

#include <atomic>
#include <cstring>
#include <set>
#include <thread>
#include <vector>

namespace wirewise {
namespace {

const void* streamPtr(uintptr_t v) { return reinterpret_cast<const void*>(v); }

TEST(LaunchRing, PopsInPushOrderUpToTheLimit) {
  LaunchRing ring(3);
  EXPECT_EQ(ring.capacity(), 4u);
  EXPECT_EQ(ring.push(0xa, 0, 0x100), 1u);
  EXPECT_EQ(ring.push(0xb, 1, 0x200), 2u);
  EXPECT_EQ(ring.push(0xa, 0, 0x100), 3u);
  EXPECT_EQ(ring.pushed(), 3u);
  LaunchRecord r;
  ASSERT_TRUE(ring.pop(2, &r));
  EXPECT_EQ(r.order, 1u);
  EXPECT_EQ(r.commId, 0xau);
  EXPECT_EQ(r.stream, 0x100u);
  EXPECT_EQ(r.colls, 0u);
  EXPECT_EQ(r.func, nullptr);
  ASSERT_TRUE(ring.pop(2, &r));
  EXPECT_EQ(r.order, 2u);
  EXPECT_EQ(r.rank, 1);
  EXPECT_FALSE(ring.pop(2, &r));  // order 3 is beyond the limit
  ASSERT_TRUE(ring.pop(UINT64_MAX, &r));
  EXPECT_EQ(r.order, 3u);
  EXPECT_FALSE(ring.pop(UINT64_MAX, &r));
}

TEST(LaunchRing, FullRingCountsLostLaunches) {
  LaunchRing ring(2);
  EXPECT_NE(ring.push(1, 0, 0x100), 0u);
  EXPECT_NE(ring.push(1, 0, 0x100), 0u);
  EXPECT_EQ(ring.push(1, 0, 0x100), 0u);
  EXPECT_EQ(ring.lost(), 1u);
  LaunchRecord r;
  ASSERT_TRUE(ring.pop(UINT64_MAX, &r));
  EXPECT_EQ(ring.push(1, 0, 0x100), 3u);  // a freed cell is reused
}

TEST(LaunchRing, ClaimsApplyOnlyWhileTheLaunchIsInTheRing) {
  LaunchRing ring(2);
  uint64_t first = ring.push(1, 0, 0x100);
  ring.claim(first, "AllReduce", 7);
  ring.claim(first, "AllGather", 2);  // a second collective of the same plan: counted, not named
  LaunchRecord r;
  ASSERT_TRUE(ring.pop(UINT64_MAX, &r));
  EXPECT_EQ(r.colls, 2u);
  EXPECT_STREQ(r.func, "AllReduce");
  EXPECT_EQ(r.seq, 7u);
  // The cell now belongs to order 3 (capacity 2): a late claim for order 1 must not land on it.
  ring.push(1, 0, 0x100);
  uint64_t third = ring.push(1, 0, 0x100);
  ring.claim(first, "Broadcast", 1);
  ASSERT_TRUE(ring.pop(UINT64_MAX, &r));
  ASSERT_TRUE(ring.pop(UINT64_MAX, &r));
  EXPECT_EQ(r.order, third);
  EXPECT_EQ(r.colls, 0u);
  EXPECT_EQ(r.func, nullptr);
}

TEST(CommLaunchRecorder, OnlyTheLaunchingThreadClaims) {
  LaunchRing ring(8);
  CommLaunchRecorder rec(&ring, 0xc0, 3);
  rec.onColl("AllReduce", 1);  // before any launch: nothing to claim
  rec.onKernelLaunch(streamPtr(0x100));
  std::thread other([&] { rec.onColl("Broadcast", 9); });  // CUDA's host-callback thread
  other.join();
  rec.onColl("AllReduce", 4);
  rec.onKernelLaunch(streamPtr(0x200));
  rec.onColl("AllGather", 5);
  rec.onColl("ReduceScatter", 6);
  LaunchRecord r;
  ASSERT_TRUE(ring.pop(UINT64_MAX, &r));
  EXPECT_EQ(r.commId, 0xc0u);
  EXPECT_EQ(r.rank, 3);
  EXPECT_EQ(r.stream, 0x100u);
  EXPECT_EQ(r.colls, 1u);
  EXPECT_STREQ(r.func, "AllReduce");
  EXPECT_EQ(r.seq, 4u);
  ASSERT_TRUE(ring.pop(UINT64_MAX, &r));
  EXPECT_EQ(r.stream, 0x200u);
  EXPECT_EQ(r.colls, 2u);
  EXPECT_STREQ(r.func, "AllGather");
  EXPECT_FALSE(ring.pop(UINT64_MAX, &r));
}

TEST(CommLaunchRecorder, ALostLaunchIsNotCreditedToThePreviousOne) {
  LaunchRing ring(2);
  CommLaunchRecorder rec(&ring, 1, 0);
  rec.onKernelLaunch(streamPtr(0x100));
  rec.onKernelLaunch(streamPtr(0x100));
  rec.onKernelLaunch(streamPtr(0x100));  // ring full: lost
  rec.onColl("AllReduce", 1);
  EXPECT_EQ(ring.lost(), 1u);
  LaunchRecord r;
  ASSERT_TRUE(ring.pop(UINT64_MAX, &r));
  ASSERT_TRUE(ring.pop(UINT64_MAX, &r));
  EXPECT_EQ(r.colls, 0u);
}

TEST(CommLaunchRecorder, NullRingIsInert) {
  CommLaunchRecorder rec(nullptr, 1, 0);
  EXPECT_FALSE(rec.enabled());
  rec.onKernelLaunch(streamPtr(0x100));
  rec.onColl("AllReduce", 1);
}

TEST(LaunchRing, ConcurrentProducersLoseNothingAndKeepFields) {
  constexpr int kThreads = 4, kPerThread = 20000;
  LaunchRing ring(1024);
  std::atomic<bool> done{false};
  std::vector<uint64_t> seen;
  std::thread consumer([&] {
    LaunchRecord r;
    for (;;) {
      bool finished = done.load(std::memory_order_acquire);
      while (ring.pop(UINT64_MAX, &r)) {
        EXPECT_EQ(r.stream, r.commId * 16);  // fields of one push travel together
        seen.push_back(r.order);
      }
      if (finished) break;
    }
  });
  std::vector<std::thread> producers;
  std::atomic<uint64_t> accepted{0};
  for (int t = 0; t < kThreads; ++t)
    producers.emplace_back([&, t] {
      for (int i = 0; i < kPerThread; ++i) {
        uint64_t id = static_cast<uint64_t>(t + 1);
        if (ring.push(id, t, id * 16) != 0) accepted.fetch_add(1);
      }
    });
  for (auto& p : producers) p.join();
  done.store(true, std::memory_order_release);
  consumer.join();
  EXPECT_EQ(accepted.load() + ring.lost(), static_cast<uint64_t>(kThreads * kPerThread));
  EXPECT_EQ(seen.size(), accepted.load());
  for (size_t i = 1; i < seen.size(); ++i) ASSERT_LT(seen[i - 1], seen[i]);
}

}  // namespace
}  // namespace wirewise
