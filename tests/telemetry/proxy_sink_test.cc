// ProxySink: ProxyOp/ProxyStep events as NCCL's proxy thread reports them, with our own timestamps,
// into per-path totals; PXN, null parents, start/stop mismatches, pool exhaustion and threads.
#include "telemetry/proxy_sink.h"

#include <gtest/gtest.h>

#include <atomic>
#include <thread>
#include <vector>

#include "telemetry/event_sink.h"
#include "tests/telemetry/sink_test_util.h"

namespace wirewise::testing {
namespace {

constexpr int kPid = 4242;

ProfEvent opEvent(int channel, int peer, bool isSend, void* parent = reinterpret_cast<void*>(0x40), int pid = kPid,
                  int nSteps = 4, int chunkSize = 1 << 19) {
  ProfEvent ev;
  ev.type = kEvProxyOp;
  ev.parent = parent;
  ev.pid = pid;
  ev.channelId = static_cast<uint8_t>(channel);
  ev.peer = peer;
  ev.isSend = isSend;
  ev.nSteps = nSteps;
  ev.chunkSize = chunkSize;
  return ev;
}

ProfEvent stepEvent(void* parent, int step = 0) {
  ProfEvent ev;
  ev.type = kEvProxyStep;
  ev.parent = parent;
  ev.step = step;
  return ev;
}

NetPathTotals onlyPath(const ProxySink& sink) {
  NetPathTotals t[4];
  EXPECT_EQ(sink.paths(t, 4), 1u);
  return t[0];
}

NetPathTotals pathOf(const ProxySink& sink, int channel, int peer, bool isSend) {
  std::vector<NetPathTotals> t(sink.pathCapacity());
  t.resize(sink.paths(t.data(), t.size()));
  for (const auto& p : t)
    if (p.channel == channel && p.peer == peer && p.isSend == isSend) return p;
  ADD_FAILURE() << "no path " << channel << "/" << peer << "/" << isSend;
  return {};
}

// One send step as net.cc instruments it, at times t0 + offsets.
void sendStep(ProxySink& sink, void* op, uint64_t t0, uint64_t bytes) {
  void* s = ProxySink::startChild(stepEvent(op), t0);
  ASSERT_NE(s, nullptr);
  sink.recordState(s, kStateSendGpuWait, 999, t0 + 100);
  sink.recordState(s, kStateSendPeerWait, 999, t0 + 300);
  sink.recordState(s, kStateSendWait, bytes, t0 + 400);
  sink.stop(s, t0 + 1400);
}

TEST(ProxySink, SendStepStatesBecomePathTotals) {
  ProxySink sink(1, 0, 16, 64);
  void* op = sink.startOp(opEvent(3, 7, true), 1000);
  ASSERT_NE(op, nullptr);
  void* s = ProxySink::startChild(stepEvent(op), 1100);
  ASSERT_NE(s, nullptr);
  sink.recordState(s, kStateSendGpuWait, 555, 1200);       // transSize is stale here: not counted
  sink.recordState(s, kStateSendPeerWait, 555, 1300);
  sink.recordState(s, kStateSendPeerWait, 555, 1350);      // NCCL repeats it while polling isend
  sink.recordState(s, kStateSendWait, 4096, 1400);
  sink.recordState(s, kStateSendWait, 4096, 1420);         // a repeat continues the state: bytes once
  sink.recordState(s, kStateKernelChStop, 1, 1450);        // not a ProxyStep state: ignored
  sink.stop(s, 2400);
  sink.stop(op, 3000);

  NetPathTotals t = onlyPath(sink);
  EXPECT_EQ(t.channel, 3);
  EXPECT_EQ(t.peer, 7);
  EXPECT_TRUE(t.isSend);
  EXPECT_EQ(t.ops, 1u);
  EXPECT_EQ(t.plannedSteps, 4u);
  EXPECT_EQ(t.chunkSize, 1u << 19);
  EXPECT_EQ(t.steps, 1u);
  EXPECT_EQ(t.bytes, 4096u);
  EXPECT_EQ(t.stateNs[kPsSendGpuWait], 100u);
  EXPECT_EQ(t.stateNs[kPsSendPeerWait], 100u);  // from the first SendPeerWait
  EXPECT_EQ(t.stateNs[kPsSendWait], 1000u);
  EXPECT_EQ(t.netNs, 1000u);
  EXPECT_EQ(t.activeNs, 2000u);
  EXPECT_EQ(sink.opsInFlight(), 0u);
  EXPECT_EQ(sink.stepsInFlight(), 0u);
  EXPECT_EQ(sink.counters().staleEvents, 0u);
}

TEST(ProxySink, OverlappingRecvStepsCountNetworkTimeOnce) {
  ProxySink sink(1, 0, 16, 64);
  void* op = sink.startOp(opEvent(0, 2, false), 0);
  void* a = ProxySink::startChild(stepEvent(op, 0), 50);
  void* b = ProxySink::startChild(stepEvent(op, 1), 60);
  ASSERT_TRUE(op && a && b);
  sink.recordState(a, kStateRecvWait, 0, 100);
  sink.recordState(b, kStateRecvWait, 0, 150);
  sink.recordState(a, kStateRecvFlushWait, 1000, 300);
  sink.recordState(a, kStateRecvGpuWait, 1000, 350);
  sink.stop(a, 400);
  sink.recordState(b, kStateRecvFlushWait, 2000, 500);
  sink.recordState(b, kStateRecvGpuWait, 2000, 550);
  sink.stop(b, 600);
  sink.stop(op, 700);

  NetPathTotals t = onlyPath(sink);
  EXPECT_FALSE(t.isSend);
  EXPECT_EQ(t.steps, 2u);
  EXPECT_EQ(t.bytes, 3000u);
  EXPECT_EQ(t.stateNs[kPsRecvWait], 200u + 350u);
  EXPECT_EQ(t.stateNs[kPsRecvFlushWait], 50u + 50u);
  EXPECT_EQ(t.stateNs[kPsRecvGpuWait], 50u + 50u);
  EXPECT_EQ(t.netNs, 400u);  // the union [100, 500], not 550
  EXPECT_EQ(t.activeNs, 700u);
}

TEST(ProxySink, PathsAreKeptApartByChannelPeerAndDirection) {
  ProxySink sink(1, 0, 64, 64);
  uint64_t t = 0;
  for (int ch = 0; ch < 4; ++ch)
    for (int peer : {1, 5})
      for (bool send : {true, false}) {
        void* op = sink.startOp(opEvent(ch, peer, send), t);
        ASSERT_NE(op, nullptr);
        for (int i = 0; i <= ch; ++i) sendStep(sink, op, t, 1000 * (peer + 1));
        sink.stop(op, t + 5000);
        t += 10000;
      }
  std::vector<NetPathTotals> all(sink.pathCapacity());
  ASSERT_EQ(sink.paths(all.data(), all.size()), 16u);
  NetPathTotals p = pathOf(sink, 2, 5, false);
  EXPECT_EQ(p.ops, 1u);
  EXPECT_EQ(p.steps, 3u);
  EXPECT_EQ(p.bytes, 3u * 6000u);
  EXPECT_EQ(pathOf(sink, 0, 1, true).bytes, 2000u);
}

TEST(ProxySink, PxnOpsNeverTouchTheContextAndTheirStepsAreOrphans) {
  ForeignProxyCounters before = ProxySink::foreignCounters();
  bool asked = false;
  auto sinkOf = [&]() -> ProxySink* {
    asked = true;  // would read the context: another process's pointer under PXN
    return nullptr;
  };
  // The parent is another process's address too; a wild value proves it is not dereferenced.
  ProfEvent pxn = opEvent(1, 3, true, reinterpret_cast<void*>(0xdead0), kPid + 1);
  EXPECT_EQ(startProxyEvent(pxn, kPid, 10, sinkOf), nullptr);
  EXPECT_FALSE(asked);
  // NCCL then starts the op's steps with our (null) op handle as parent, and the same foreign context.
  EXPECT_EQ(startProxyEvent(stepEvent(nullptr), kPid, 20, sinkOf), nullptr);
  EXPECT_FALSE(asked);
  ForeignProxyCounters after = ProxySink::foreignCounters();
  EXPECT_EQ(after.pxnOps - before.pxnOps, 1u);
  EXPECT_EQ(after.orphanSteps - before.orphanSteps, 1u);

  // An op of our own pid asks for the sink.
  ProxySink sink(1, 0, 16, 64);
  void* op = startProxyEvent(opEvent(1, 3, true), kPid, 30, [&]() -> ProxySink* { return &sink; });
  EXPECT_NE(op, nullptr);
  sink.stop(op, 40);
  EXPECT_EQ(sink.counters().opsStarted, 1u);
}

TEST(ProxySink, NullAndWrongParentsAreCountedNotFollowed) {
  ProxySink sink(1, 0, 16, 64);
  ForeignProxyCounters before = ProxySink::foreignCounters();
  // A ProxyOp of a p2p (we do not track P2p events) has a null parent; its path is still measured.
  void* op = sink.startOp(opEvent(0, 1, true, nullptr), 0);
  ASSERT_NE(op, nullptr);
  EXPECT_EQ(sink.counters().opsNullParent, 1u);
  sendStep(sink, op, 100, 64);
  sink.stop(op, 2000);
  EXPECT_EQ(onlyPath(sink).bytes, 64u);

  // A step whose parent is a Coll handle, and a NetPlugin event whose parent is a ProxyOp handle.
  EventSink events(1, 0, 8, 16, 16);
  void* coll = events.start(collEvent(1, 1));
  ASSERT_NE(coll, nullptr);
  EXPECT_EQ(ProxySink::startChild(stepEvent(coll), 0), nullptr);
  void* op2 = sink.startOp(opEvent(0, 1, true), 0);
  ProfEvent net;
  net.type = kEvNetPlugin;
  net.parent = op2;
  EXPECT_EQ(ProxySink::startChild(net, 0), nullptr);
  ForeignProxyCounters after = ProxySink::foreignCounters();
  EXPECT_EQ(after.orphanSteps - before.orphanSteps, 1u);
  EXPECT_EQ(after.orphanNetPlugin - before.orphanNetPlugin, 1u);
  // Under one of our steps, a NetPlugin event is seen and counted by that step's sink.
  void* s = ProxySink::startChild(stepEvent(op2), 0);
  net.parent = s;
  EXPECT_EQ(ProxySink::startChild(net, 0), nullptr);
  EXPECT_EQ(sink.counters().netPluginEvents, 1u);
  sink.stop(s, 1);
  sink.stop(op2, 1);
  events.stop(coll);
}

TEST(ProxySink, LateAndDuplicateStopsAndRecordsAreIgnored) {
  ProxySink sink(1, 0, 1, 64);  // one op slot, two step slots: every start reuses a slot
  void* op = sink.startOp(opEvent(0, 1, true), 0);
  void* s = ProxySink::startChild(stepEvent(op), 0);
  sink.recordState(s, kStateSendWait, 100, 10);
  sink.stop(s, 20);
  sink.stop(s, 30);                              // duplicate
  sink.recordState(s, kStateSendWait, 100, 40);  // record after stop
  sink.stop(op, 50);
  sink.stop(op, 60);
  EXPECT_EQ(ProxySink::startChild(stepEvent(op), 70), nullptr);  // child of a stopped op
  EXPECT_EQ(sink.counters().staleEvents, 4u);

  // The recycled slots serve new events; the old handles do not reach them.
  void* op2 = sink.startOp(opEvent(0, 1, true), 100);
  ASSERT_NE(op2, nullptr);
  EXPECT_NE(op2, op);
  sink.stop(op, 110);
  EXPECT_EQ(sink.opsInFlight(), 1u);
  sink.stop(op2, 200);
  NetPathTotals t = onlyPath(sink);
  EXPECT_EQ(t.steps, 1u);
  EXPECT_EQ(t.bytes, 100u);
  EXPECT_EQ(t.netNs, 10u);
  EXPECT_EQ(t.activeNs, 50u + 100u);
  EXPECT_EQ(sink.counters().staleEvents, 5u);
}

TEST(ProxySink, ExhaustedPoolsDropThenReclaimWhatNcclNeverStopped) {
  constexpr size_t kOps = 4;
  ProxySink sink(1, 0, kOps, 64);
  std::vector<void*> leaked;
  for (size_t i = 0; i < kOps; ++i) leaked.push_back(sink.startOp(opEvent(0, 1, true), i));
  // Full of live ops: refused and counted until more than a pool's worth of attempts followed the oldest.
  EXPECT_EQ(sink.startOp(opEvent(0, 1, true), 10), nullptr);
  EXPECT_EQ(sink.counters().droppedPoolExhausted, 1u);
  EXPECT_EQ(sink.counters().reclaimed, 0u);
  void* fresh = sink.startOp(opEvent(0, 1, true), 20);
  ASSERT_NE(fresh, nullptr);
  EXPECT_EQ(sink.counters().reclaimed, 1u);
  sink.stop(leaked[0], 30);  // the reclaimed op's late stop does not stop the new one
  EXPECT_EQ(sink.opsInFlight(), kOps);
  EXPECT_EQ(sink.counters().staleEvents, 1u);

  // Steps: 2 per op slot. Steps of a stopped op that were never stopped (NVIDIA/nccl#1658) are dead
  // and reclaimed when the step pool runs dry; steps of live ops are not.
  void* a = ProxySink::startChild(stepEvent(leaked[1]), 40);
  for (size_t i = 1; i < 2 * kOps; ++i) ASSERT_NE(ProxySink::startChild(stepEvent(leaked[1]), 40), nullptr);
  EXPECT_EQ(ProxySink::startChild(stepEvent(fresh), 41), nullptr);
  EXPECT_EQ(sink.counters().droppedPoolExhausted, 2u);
  sink.recordState(a, kStateSendWait, 7, 45);
  sink.stop(leaked[1], 50);
  void* b = ProxySink::startChild(stepEvent(fresh), 60);
  EXPECT_NE(b, nullptr);
  EXPECT_EQ(sink.counters().reclaimed, 2u);
  sink.stop(b, 70);
  EXPECT_EQ(pathOf(sink, 0, 1, true).bytes, 7u);
}

TEST(ProxySink, FullPathTableDropsNewPaths) {
  ProxySink sink(1, 0, 64, 16);  // capacity rounds to 16 paths
  ASSERT_EQ(sink.pathCapacity(), 16u);
  for (int peer = 0; peer < 16; ++peer) {
    void* op = sink.startOp(opEvent(0, peer, true), 0);
    ASSERT_NE(op, nullptr);
    sink.stop(op, 1);
  }
  EXPECT_EQ(sink.startOp(opEvent(0, 99, true), 2), nullptr);
  EXPECT_EQ(sink.counters().droppedPathsFull, 1u);
  void* known = sink.startOp(opEvent(0, 3, true), 3);  // a known path still works
  EXPECT_NE(known, nullptr);
  sink.stop(known, 4);
}

// Three proxy threads (as with three comms' proxies sharing one sink would never happen, but PXN within
// one process can bring a second thread) drive their own paths while a fourth replays stale stops and
// a reader snapshots the totals. Totals are exact and no slot leaks.
TEST(ProxySink, ConcurrentProxyThreadsKeepExactTotals) {
  constexpr int kThreads = 3, kOpsPerThread = 3000, kStepsPerOp = 4;
  ProxySink sink(1, 0, 64, 64);
  std::atomic<bool> done{false};
  std::atomic<void*> lastStale{nullptr};
  std::vector<std::thread> threads;
  for (int th = 0; th < kThreads; ++th) {
    threads.emplace_back([&, th] {
      uint64_t t = 0;
      for (int i = 0; i < kOpsPerThread; ++i) {
        void* op = sink.startOp(opEvent(th, 10 + th, th % 2 == 0), t);
        if (op == nullptr) {
          ADD_FAILURE() << "op pool exhausted";
          return;
        }
        for (int s = 0; s < kStepsPerOp; ++s) {
          void* h = ProxySink::startChild(stepEvent(op, s), t);
          if (h == nullptr) {
            ADD_FAILURE() << "step refused";
            return;
          }
          sink.recordState(h, kStateSendWait, 100, t + 1);
          sink.stop(h, t + 2);
          lastStale.store(h, std::memory_order_relaxed);
          t += 3;
        }
        sink.stop(op, t);
      }
    });
  }
  std::thread stale([&] {
    while (!done.load()) {
      if (void* h = lastStale.load(std::memory_order_relaxed)) sink.stop(h, 0);  // already stopped (or reused)
    }
  });
  std::thread reader([&] {
    std::vector<NetPathTotals> buf(sink.pathCapacity());
    while (!done.load()) sink.paths(buf.data(), buf.size());
  });
  for (auto& t : threads) t.join();
  done = true;
  stale.join();
  reader.join();
  for (int th = 0; th < kThreads; ++th) {
    NetPathTotals p = pathOf(sink, th, 10 + th, th % 2 == 0);
    EXPECT_EQ(p.ops, static_cast<uint64_t>(kOpsPerThread));
    EXPECT_EQ(p.steps, static_cast<uint64_t>(kOpsPerThread * kStepsPerOp));
    EXPECT_EQ(p.bytes, 100u * kOpsPerThread * kStepsPerOp);
  }
  EXPECT_EQ(sink.opsInFlight(), 0u);
  EXPECT_EQ(sink.stepsInFlight(), 0u);
}

TEST(ProxySink, StateIndicesMatchNcclValues) {
  EXPECT_EQ(proxyStateIndex(8), kPsSendGpuWait);
  EXPECT_EQ(proxyStateIndex(20), kPsSendPeerWait);
  EXPECT_EQ(proxyStateIndex(9), kPsSendWait);
  EXPECT_EQ(proxyStateIndex(10), kPsRecvWait);
  EXPECT_EQ(proxyStateIndex(11), kPsRecvFlushWait);
  EXPECT_EQ(proxyStateIndex(12), kPsRecvGpuWait);
  for (int s : {0, 7, 13, 19, 21, 22, 23, 24}) EXPECT_EQ(proxyStateIndex(s), -1) << s;
  EXPECT_STREQ(proxyStateName(kPsSendPeerWait), "send_peer_wait");
}

}  // namespace
}  // namespace wirewise::testing
