// Several threads drive one EventSink the way NCCL does (Coll from launch threads, KernelCh from proxy
// threads) while a consumer drains. Meant to run under TSan as well (-DWIREWISE_SANITIZE=thread).
#include <gtest/gtest.h>

#include <atomic>
#include <deque>
#include <memory>
#include <mutex>
#include <random>
#include <set>
#include <thread>
#include <vector>

#include "telemetry/event_sink.h"
#include "telemetry/lockfree.h"
#include "telemetry/mpsc_ring.h"
#include "tests/telemetry/sink_test_util.h"

namespace wirewise {
namespace {

using testing::chanEvent;
using testing::collEvent;
using testing::expectBalanced;

// Channel c of collective seq runs [seq*10000 + 7c, seq*10000 + 1000 + seq%500 + 10c].
uint64_t chanStart(uint64_t seq, int c) { return seq * 10000 + 7 * c; }
uint64_t chanStop(uint64_t seq, int c) { return seq * 10000 + 1000 + seq % 500 + 10 * c; }
uint64_t expectedNs(uint64_t seq, int nCh) { return chanStop(seq, nCh - 1) - chanStart(seq, 0); }

struct Consumer {
  explicit Consumer(EventSink& s) : sink(s), thread([this] { run(); }) {}
  void run() {
    CollSample buf[64];
    for (;;) {
      bool last = done.load(std::memory_order_acquire);
      size_t n;
      while ((n = sink.drain(buf, 64)) > 0) samples.insert(samples.end(), buf, buf + n);
      if (last) return;
      std::this_thread::yield();
    }
  }
  std::vector<CollSample> finish() {
    done.store(true, std::memory_order_release);
    thread.join();
    return samples;
  }
  EventSink& sink;
  std::atomic<bool> done{false};
  std::vector<CollSample> samples;
  std::thread thread;
};

// A proxy thread's inbox: NCCL hands Coll handles to its proxy through its own synchronisation.
struct Inbox {
  std::mutex mu;
  std::deque<std::pair<void*, uint64_t>> q;
  bool closed = false;
};

// NCCL's threads on one communicator: the launch thread starts and stops each Coll, the proxy thread
// its KernelCh children; the sink is per communicator, and several communicators run at once. A comm's
// collectives complete in order, so one is never outstanding while a pool's worth of newer ones start
// (here at most kMaxOutstanding are): no collective may be taken for stale.
TEST(EventSinkConcurrency, EveryCompletedCollectiveYieldsOneCorrectSample) {
  const int kComms = 3, kPerComm = 3000, kMaxOutstanding = 8;
  std::vector<std::unique_ptr<EventSink>> sinks;
  std::vector<std::unique_ptr<Consumer>> consumers;
  for (int p = 0; p < kComms; ++p) {
    sinks.push_back(std::make_unique<EventSink>(p + 1, 0, 8, 64, 4096));
    consumers.push_back(std::make_unique<Consumer>(*sinks.back()));
  }
  std::vector<Inbox> inboxes(kComms);
  std::vector<std::atomic<int>> outstanding(kComms);
  std::vector<std::thread> threads;
  std::atomic<uint64_t> accepted{0};
  for (int p = 0; p < kComms; ++p) {
    EventSink& sink = *sinks[p];
    threads.emplace_back([&, p] {  // launcher
      for (int i = 0; i < kPerComm; ++i) {
        while (outstanding[p].load() >= kMaxOutstanding) std::this_thread::yield();
        uint64_t seq = static_cast<uint64_t>(p) * 100000 + i;
        int nCh = 1 + i % 4;
        void* h = sink.start(collEvent(seq, static_cast<uint8_t>(nCh)));
        ASSERT_NE(h, nullptr);  // at most 8 in flight in a pool of 64
        accepted.fetch_add(1);
        outstanding[p].fetch_add(1);
        {
          std::lock_guard<std::mutex> lk(inboxes[p].mu);
          inboxes[p].q.emplace_back(h, seq);
        }
        sink.stop(h);  // races with the proxy's channel stops
      }
      std::lock_guard<std::mutex> lk(inboxes[p].mu);
      inboxes[p].closed = true;
    });
    threads.emplace_back([&, p] {  // proxy
      for (;;) {
        std::pair<void*, uint64_t> item;
        {
          std::lock_guard<std::mutex> lk(inboxes[p].mu);
          if (inboxes[p].q.empty()) {
            if (inboxes[p].closed) return;
            item.first = nullptr;
          } else {
            item = inboxes[p].q.front();
            inboxes[p].q.pop_front();
          }
        }
        if (item.first == nullptr) {
          std::this_thread::yield();
          continue;
        }
        int nCh = 1 + static_cast<int>(item.second % 100000) % 4;
        void* chans[4] = {};
        for (int c = 0; c < nCh; ++c)
          chans[c] = sink.start(chanEvent(item.first, static_cast<uint8_t>(c), chanStart(item.second, c)));
        // Counted, not asserted here: a failed assertion would leave the launcher waiting.
        for (int c = nCh - 1; c >= 0; --c) {
          sink.recordState(chans[c], kStateKernelChStop, chanStop(item.second, c));
          sink.stop(chans[c]);
        }
        outstanding[p].fetch_sub(1);
      }
    });
  }
  for (auto& t : threads) t.join();
  EXPECT_EQ(accepted.load(), static_cast<uint64_t>(kComms * kPerComm));

  for (int p = 0; p < kComms; ++p) {
    EventSink& sink = *sinks[p];
    std::vector<CollSample> samples = consumers[p]->finish();
    SinkCounters c = sink.counters();
    EXPECT_EQ(c.collsStarted, static_cast<uint64_t>(kPerComm));
    EXPECT_EQ(c.droppedPoolExhausted, 0u);
    EXPECT_EQ(c.droppedIncomplete, 0u);
    EXPECT_EQ(c.orphanEvents, 0u);
    EXPECT_EQ(c.unsampled, 0u);
    EXPECT_EQ(c.samplesEmitted + c.droppedRingFull, c.collsStarted);
    EXPECT_EQ(samples.size(), c.samplesEmitted);
    std::set<uint64_t> seen;
    for (const CollSample& s : samples) {
      EXPECT_TRUE(seen.insert(s.seqNumber).second) << "duplicate sample " << s.seqNumber;
      EXPECT_EQ(s.seqNumber / 100000, static_cast<uint64_t>(p));
      EXPECT_EQ(s.nChannels, 1 + (s.seqNumber % 100000) % 4);
      EXPECT_EQ(s.durationNs, expectedNs(s.seqNumber, s.nChannels)) << s.seqNumber;
      EXPECT_EQ(s.bytes, 4096u);
    }
    EXPECT_EQ(sink.collsInFlight(), 0u);
    EXPECT_EQ(sink.channelsInFlight(), 0u);
    expectBalanced(sink);
  }
}

// A small pool under contention, with some collectives leaked on purpose and their events delivered
// late, after their slots may have been recycled: drops are counted, nothing leaks, and no late event
// ever corrupts another collective's time.
TEST(EventSinkConcurrency, PoolExhaustionAndStaleReclaimUnderContention) {
  const int kThreads = 4, kRounds = 600, kBatch = 12;  // one batch alone overfills the pool of 8
  EventSink sink(1, 0, 8, 8, 1 << 14);
  Consumer consumer(sink);
  std::atomic<uint64_t> accepted{0}, refused{0};
  std::atomic<int> ready{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      std::mt19937 rng(t);
      ready.fetch_add(1);
      while (ready.load() < kThreads) std::this_thread::yield();
      struct Late {
        void* coll;
        void* chan;
        uint64_t seq;
      };
      std::vector<Late> late;  // channel 1 stops delivered at the very end
      for (int r = 0; r < kRounds; ++r) {
        void* held[kBatch];
        uint64_t seqs[kBatch];
        for (int b = 0; b < kBatch; ++b) {
          seqs[b] = (static_cast<uint64_t>(t) * kRounds + r) * kBatch + b;
          held[b] = sink.start(collEvent(seqs[b], 2));
          (held[b] ? accepted : refused).fetch_add(1);
        }
        for (int b = 0; b < kBatch; ++b) {
          if (held[b] == nullptr) continue;
          void* ch0 = sink.start(chanEvent(held[b], 0, chanStart(seqs[b], 0)));
          void* ch1 = sink.start(chanEvent(held[b], 1, chanStart(seqs[b], 1)));
          sink.recordState(ch0, kStateKernelChStop, chanStop(seqs[b], 0));
          sink.stop(ch0);
          sink.stop(held[b]);
          if (rng() % 50 == 0) {
            late.push_back({held[b], ch1, seqs[b]});  // leaked for now
            continue;
          }
          sink.recordState(ch1, kStateKernelChStop, chanStop(seqs[b], 1));
          sink.stop(ch1);
        }
      }
      for (const Late& l : late) {
        // Its own true stop time: if the slot was recycled meanwhile, folding it into the new owner
        // would show as a wrong duration there (each seq has its own time window).
        sink.recordState(l.chan, kStateKernelChStop, chanStop(l.seq, 1));
        sink.stop(l.chan);
        sink.stop(l.coll);  // a second stop: ignored
      }
    });
  }
  for (auto& th : threads) th.join();
  std::vector<CollSample> samples = consumer.finish();

  SinkCounters c = sink.counters();
  EXPECT_EQ(c.collsStarted, accepted.load());
  EXPECT_EQ(c.droppedPoolExhausted, refused.load());
  // 12 wanted at once, 8 slots: a start finds a slot a pool's worth of starts old and reclaims it (a
  // thread running alone reclaims its own batch's first ones), or, with the threads interleaved, all
  // eight in its turn younger than that and is refused. Which of the two, the scheduler decides.
  EXPECT_GT(c.droppedIncomplete, 0u);
  EXPECT_EQ(samples.size(), c.samplesEmitted);
  for (const CollSample& s : samples) {
    EXPECT_EQ(s.durationNs, expectedNs(s.seqNumber, 2)) << s.seqNumber;
  }
  std::set<uint64_t> seen;
  for (const CollSample& s : samples) EXPECT_TRUE(seen.insert(s.seqNumber).second);
  // Leaked collectives either completed late or were recycled as stale: nothing stays in flight.
  EXPECT_EQ(sink.collsInFlight(), 0u);
  EXPECT_EQ(sink.channelsInFlight(), 0u);
  expectBalanced(sink);
}

TEST(SampleRingConcurrency, MpscDeliversEachSampleOnceInProducerOrder) {
  const int kProducers = 4, kPer = 50000;
  SampleRing ring(1024);
  std::vector<std::thread> producers;
  for (int p = 0; p < kProducers; ++p) {
    producers.emplace_back([&, p] {
      for (int i = 0; i < kPer; ++i) {
        CollRecord s;
        s.seqNumber = static_cast<uint64_t>(p) << 32 | static_cast<uint64_t>(i);
        while (!ring.push(s)) std::this_thread::yield();
      }
    });
  }
  std::vector<int64_t> next(kProducers, 0);
  int64_t got = 0;
  CollRecord s;
  while (got < int64_t{kProducers} * kPer) {
    if (!ring.pop(&s)) continue;
    int p = static_cast<int>(s.seqNumber >> 32);
    ASSERT_EQ(static_cast<int64_t>(s.seqNumber & 0xffffffffu), next[p]);
    ++next[p];
    ++got;
  }
  for (auto& t : producers) t.join();
  EXPECT_FALSE(ring.pop(&s));
}

TEST(MpscRing, RoundsCapacityUpRefusesWhenFullAndReusesCellsByLap) {
  EXPECT_EQ(MpscRing<int>(0).capacity(), 2u);
  EXPECT_EQ(MpscRing<int>(3).capacity(), 4u);
  EXPECT_EQ(MpscRing<int>(4).capacity(), 4u);
  MpscRing<int> ring(4);
  int fills = 0;
  for (int i = 0; i < 4; ++i) {
    EXPECT_TRUE(ring.push([&](int& v, uint64_t order) {
      v = 10 * i;
      EXPECT_EQ(order, static_cast<uint64_t>(i + 1));
      ++fills;
    }));
  }
  EXPECT_FALSE(ring.push([&](int&, uint64_t) { ++fills; }));  // full: nothing is written
  EXPECT_EQ(fills, 4);
  EXPECT_EQ(ring.reserved(), 4u);
  ASSERT_NE(ring.published(2), nullptr);
  EXPECT_EQ(*ring.published(2), 10);
  EXPECT_EQ(ring.published(5), nullptr);  // order 1's cell, not yet reused
  int value = -1;
  uint64_t order = 0;
  auto take = [&](int& v, uint64_t o) {
    value = v;
    order = o;
  };
  ASSERT_TRUE(ring.pop(take));
  EXPECT_EQ(value, 0);
  EXPECT_EQ(order, 1u);
  EXPECT_EQ(ring.published(1), nullptr);  // popped
  EXPECT_EQ(ring.nextPopOrder(), 2u);
  EXPECT_TRUE(ring.push([](int& v, uint64_t o) {
    v = 40;
    EXPECT_EQ(o, 5u);
  }));
  ASSERT_NE(ring.published(5), nullptr);  // the freed cell, one lap on
  EXPECT_EQ(ring.published(1), nullptr);
  for (int want = 1; want <= 4; ++want) {
    ASSERT_TRUE(ring.pop(take));
    EXPECT_EQ(value, 10 * want);
    EXPECT_EQ(order, static_cast<uint64_t>(want + 1));
  }
  EXPECT_FALSE(ring.pop(take));
  EXPECT_EQ(ring.nextPopOrder(), 6u);
}

// A ring of 4 cells and several producers: every cell is reused thousands of times while producers race
// for it. Plain (non-atomic) payload fields written in fill must arrive whole, each entry exactly once,
// in reservation order, and in each producer's own order. Under TSan this also checks the orderings.
TEST(MpscRingConcurrency, WrapsManyTimesWithSeveralProducers) {
  struct Entry {
    uint32_t producer = 0;
    uint32_t index = 0;
    uint64_t order = 0;
    uint64_t check = 0;
  };
  auto mix = [](uint64_t p, uint64_t i) { return (p + 1) * 0x9e3779b97f4a7c15ull ^ i * 0xbf58476d1ce4e5b9ull; };
  const int kProducers = 3, kPer = 20000;
  MpscRing<Entry> ring(4);
  ASSERT_EQ(ring.capacity(), 4u);
  std::atomic<int> finished{0};
  std::vector<std::thread> producers;
  for (int p = 0; p < kProducers; ++p) {
    producers.emplace_back([&, p] {
      for (uint32_t i = 0; i < static_cast<uint32_t>(kPer); ++i) {
        auto fill = [&](Entry& e, uint64_t order) {
          e.producer = static_cast<uint32_t>(p);
          e.index = i;
          e.order = order;
          e.check = mix(static_cast<uint64_t>(p), i);
        };
        while (!ring.push(fill)) std::this_thread::yield();
      }
      finished.fetch_add(1, std::memory_order_release);
    });
  }
  std::vector<uint32_t> next(kProducers, 0);
  uint64_t got = 0;
  int bad = 0;
  auto take = [&](Entry& e, uint64_t order) {
    if (order != got + 1 || e.order != order || e.producer >= static_cast<uint32_t>(kProducers) ||
        e.check != mix(e.producer, e.index) || e.index != next[e.producer]) {
      ++bad;
    } else {
      ++next[e.producer];
    }
    ++got;
  };
  // Drains until every producer has finished and the ring is empty, so a ring that lost or duplicated
  // entries fails below instead of hanging.
  for (;;) {
    bool allFinished = finished.load(std::memory_order_acquire) == kProducers;
    bool any = false;
    while (ring.pop(take)) any = true;
    if (allFinished) break;
    if (!any) std::this_thread::yield();
  }
  for (auto& t : producers) t.join();
  EXPECT_EQ(bad, 0);
  EXPECT_EQ(got, static_cast<uint64_t>(kProducers) * kPer);
  for (int p = 0; p < kProducers; ++p) EXPECT_EQ(next[p], static_cast<uint32_t>(kPer));
  EXPECT_EQ(ring.reserved(), got);
  Entry e;
  EXPECT_FALSE(ring.pop([&](Entry& x, uint64_t) { e = x; }));
}

TEST(IndexFreeListConcurrency, NoIndexIsHandedOutTwice) {
  const uint32_t kSlots = 16;
  IndexFreeList list(kSlots);
  std::vector<std::atomic<int>> owners(kSlots);
  std::atomic<int> violations{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&] {
      for (int i = 0; i < 50000; ++i) {
        uint32_t idx;
        if (!list.pop(&idx)) continue;
        if (owners[idx].fetch_add(1) != 0) violations.fetch_add(1);
        owners[idx].fetch_sub(1);
        list.push(idx);
      }
    });
  }
  for (auto& th : threads) th.join();
  EXPECT_EQ(violations.load(), 0);
  std::set<uint32_t> all;
  uint32_t idx;
  while (list.pop(&idx)) EXPECT_TRUE(all.insert(idx).second);
  EXPECT_EQ(all.size(), kSlots);
}

}  // namespace
}  // namespace wirewise
