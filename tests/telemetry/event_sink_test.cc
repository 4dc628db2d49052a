#include "telemetry/event_sink.h"

#include <gtest/gtest.h>

#include <vector>

#include "adaptive/types.h"
#include "tests/telemetry/sink_test_util.h"

namespace wirewise {
namespace {

using testing::chanEvent;
using testing::collEvent;
using testing::expectBalanced;
using testing::runChannel;

std::vector<CollSample> drainAll(EventSink& sink) {
  std::vector<CollSample> out(64);
  out.resize(sink.drain(out.data(), out.size()));
  return out;
}

TEST(ProfNames, MatchNcclStringsCaseInsensitively) {
  EXPECT_EQ(datatypeSize("ncclInt8"), 1);
  EXPECT_EQ(datatypeSize("ncclUint8"), 1);
  EXPECT_EQ(datatypeSize("ncclInt32"), 4);
  EXPECT_EQ(datatypeSize("ncclUint32"), 4);
  EXPECT_EQ(datatypeSize("ncclInt64"), 8);
  EXPECT_EQ(datatypeSize("ncclUint64"), 8);
  EXPECT_EQ(datatypeSize("ncclFloat16"), 2);
  EXPECT_EQ(datatypeSize("ncclFloat32"), 4);
  EXPECT_EQ(datatypeSize("ncclFloat64"), 8);
  EXPECT_EQ(datatypeSize("ncclBfloat16"), 2);
  EXPECT_EQ(datatypeSize("NCCLBFLOAT16"), 2);
  EXPECT_EQ(datatypeSize("ncclFloat8e4m3"), 1);
  EXPECT_EQ(datatypeSize("ncclFloat8e5m2"), 1);
  EXPECT_EQ(datatypeSize("Unknown"), 0);  // what 2.28.9 prints for ncclUint8
  EXPECT_EQ(datatypeSize(nullptr), 0);
  EXPECT_EQ(datatypeSize("ncclFloat"), 0);

  EXPECT_EQ(algoIndexFromName("TREE"), kAlgoTree);
  EXPECT_EQ(algoIndexFromName("ring"), kAlgoRing);
  EXPECT_EQ(algoIndexFromName("COLLNET_DIRECT"), kAlgoCollNetDirect);
  EXPECT_EQ(algoIndexFromName("CollNet_Chain"), kAlgoCollNetChain);
  EXPECT_EQ(algoIndexFromName("NVLS"), kAlgoNvls);
  EXPECT_EQ(algoIndexFromName("NVLS_TREE"), kAlgoNvlsTree);
  EXPECT_EQ(algoIndexFromName("PAT"), kAlgoPat);
  EXPECT_EQ(algoIndexFromName("Unknown"), -1);
  EXPECT_EQ(algoIndexFromName(nullptr), -1);

  EXPECT_EQ(protoIndexFromName("LL"), kProtoLL);
  EXPECT_EQ(protoIndexFromName("ll128"), kProtoLL128);
  EXPECT_EQ(protoIndexFromName("SIMPLE"), kProtoSimple);
  EXPECT_EQ(protoIndexFromName("LL64"), -1);

  EXPECT_EQ(collIndexFromName("Broadcast"), 0);
  EXPECT_EQ(collIndexFromName("Reduce"), 1);
  EXPECT_EQ(collIndexFromName("AllGather"), 2);
  EXPECT_EQ(collIndexFromName("ReduceScatter"), 3);
  EXPECT_EQ(collIndexFromName("allreduce"), 4);
  EXPECT_EQ(collIndexFromName("AlltoAll"), -1);
  EXPECT_EQ(collIndexFromName("SendRecv"), -1);
}

TEST(EventSink, CollectiveCompletesWhenAllItsChannelsHaveStopped) {
  EventSink sink(0xabc, 0, 8, 16, 16);
  void* coll = sink.start(collEvent(7, 2, 1024, "AllReduce", "ncclBfloat16", "RING", "LL128"));
  ASSERT_NE(coll, nullptr);
  EXPECT_EQ(EventSink::ownerOf(coll), &sink);
  sink.stop(coll);  // "enqueued": nothing complete yet
  EXPECT_TRUE(runChannel(sink, coll, 0, 1000, 5000));
  EXPECT_TRUE(drainAll(sink).empty());
  EXPECT_TRUE(runChannel(sink, coll, 1, 1200, 6000));
  auto samples = drainAll(sink);
  ASSERT_EQ(samples.size(), 1u);
  EXPECT_EQ(samples[0].seqNumber, 7u);
  EXPECT_EQ(samples[0].bytes, 2048u);
  EXPECT_EQ(samples[0].durationNs, 5000u);  // max stop 6000 - min start 1000
  EXPECT_EQ(samples[0].coll, 4);
  EXPECT_EQ(samples[0].algo, kAlgoRing);
  EXPECT_EQ(samples[0].proto, kProtoLL128);
  EXPECT_EQ(samples[0].nChannels, 2);
  EXPECT_EQ(sink.collsInFlight(), 0u);
  EXPECT_EQ(sink.channelsInFlight(), 0u);
  EXPECT_EQ(sink.counters().samplesEmitted, 1u);
  expectBalanced(sink);
}

// NCCL stops a Coll at launch, but nothing says its channels cannot finish first: the Coll stop only
// means "enqueued" and is not waited for, early or late.
TEST(EventSink, TheCollStopIsNotWaitedFor) {
  EventSink sink(1, 0, 2, 1, 4);
  void* coll = sink.start(collEvent(1, 1));
  void* ch = sink.start(chanEvent(coll, 0, 100));
  ASSERT_NE(ch, nullptr);
  EXPECT_EQ(EventSink::ownerOf(ch), &sink);
  sink.recordState(ch, kStateKernelChStop, 400);
  sink.stop(ch);
  auto samples = drainAll(sink);
  ASSERT_EQ(samples.size(), 1u);
  EXPECT_EQ(samples[0].durationNs, 300u);
  void* next = sink.start(collEvent(2, 1));  // the only slot came back
  ASSERT_NE(next, nullptr);
  sink.stop(coll);  // late, and for the slot's previous owner: changes nothing
  EXPECT_TRUE(runChannel(sink, next, 0, 10, 30));
  samples = drainAll(sink);
  ASSERT_EQ(samples.size(), 1u);
  EXPECT_EQ(samples[0].seqNumber, 2u);
  expectBalanced(sink);
}

TEST(EventSink, UntimedChannelsAreCountedButNotFolded) {
  EventSink sink(1, 0, 2, 4, 4);
  void* coll = sink.start(collEvent(1, 3));
  runChannel(sink, coll, 0, 100, 300);
  runChannel(sink, coll, 1, 90, 0);    // stop 0: seen in real traces
  runChannel(sink, coll, 2, 50, 40);   // stop before start
  sink.stop(coll);
  auto samples = drainAll(sink);
  ASSERT_EQ(samples.size(), 1u);
  EXPECT_EQ(samples[0].durationNs, 200u);
  // A channel stopped without a recorded stop time is untimed too.
  void* c2 = sink.start(collEvent(2, 1));
  void* ch = sink.start(chanEvent(c2, 0, 10));
  sink.stop(ch);
  sink.stop(c2);
  EXPECT_TRUE(drainAll(sink).empty());
  EXPECT_EQ(sink.counters().unsampled, 1u);
  expectBalanced(sink);
}

// No child can complete a Coll of zero channels: it is complete at its start, without a sample, a slot
// or a handle (so NCCL calls no stop for it).
TEST(EventSink, ZeroChannelsCompleteAtTheirStartWithoutSample) {
  EventSink sink(1, 0, 2, 1, 4);
  EXPECT_EQ(sink.start(collEvent(1, 0)), nullptr);
  EXPECT_TRUE(drainAll(sink).empty());
  EXPECT_EQ(sink.counters().unsampled, 1u);
  EXPECT_EQ(sink.counters().collsStarted, 1u);
  EXPECT_EQ(sink.collsInFlight(), 0u);
  EXPECT_NE(sink.start(collEvent(2, 1)), nullptr);  // the only slot was never taken
  expectBalanced(sink);
}

TEST(EventSink, AllGatherAndReduceScatterBytesAreTheWholeBuffer) {
  EventSink sink(1, 0, 8, 4, 4);
  for (const char* func : {"AllGather", "ReduceScatter", "Broadcast"}) {
    void* coll = sink.start(collEvent(1, 1, 1000, func, "ncclFloat16"));
    runChannel(sink, coll, 0, 0 + 10, 20);
    sink.stop(coll);
  }
  auto samples = drainAll(sink);
  ASSERT_EQ(samples.size(), 3u);
  EXPECT_EQ(samples[0].bytes, 8u * 2000u);  // count is per rank; the tuner saw nRanks x that
  EXPECT_EQ(samples[1].bytes, 8u * 2000u);
  EXPECT_EQ(samples[2].bytes, 2000u);
}

// Names are resolved when drained, off NCCL's thread: a record of an unknown func or datatype is
// emitted, then dropped by drain() and counted.
TEST(EventSink, UnknownDatatypeOrFuncIsTrackedButNotSampled) {
  EventSink sink(1, 0, 2, 4, 4);
  void* a = sink.start(collEvent(1, 1, 10, "AllReduce", "Unknown"));
  void* b = sink.start(collEvent(1, 1, 10, "AlltoAll", "ncclInt8"));
  ASSERT_NE(a, nullptr);
  ASSERT_NE(b, nullptr);
  for (void* c : {a, b}) {
    EXPECT_TRUE(runChannel(sink, c, 0, 1, 2));  // children are not orphans
    sink.stop(c);
  }
  EXPECT_EQ(sink.counters().samplesEmitted, 2u);
  EXPECT_EQ(sink.counters().unresolved, 0u);
  EXPECT_TRUE(drainAll(sink).empty());
  EXPECT_EQ(sink.counters().unresolved, 2u);
  EXPECT_EQ(sink.counters().unsampled, 0u);
  EXPECT_EQ(sink.counters().orphanEvents, 0u);
  EXPECT_EQ(sink.collsInFlight(), 0u);
}

TEST(EventSink, OtherEventTypesAndNullHandlesAreIgnored) {
  EventSink sink(1, 0, 2, 4, 4);
  for (uint64_t t : {uint64_t{1}, uint64_t{1} << 2, kEvProxyOp, kEvProxyStep, uint64_t{1} << 11}) {
    ProfEvent ev;
    ev.type = t;
    EXPECT_EQ(sink.start(ev), nullptr);
  }
  sink.stop(nullptr);
  sink.recordState(nullptr, kStateKernelChStop, 5);
  EXPECT_EQ(EventSink::ownerOf(nullptr), nullptr);
  int notOurs = 0;
  sink.stop(&notOurs);  // not inside our pools: ignored without dereferencing
  sink.recordState(&notOurs, kStateKernelChStop, 5);
  EXPECT_EQ(sink.counters().collsStarted, 0u);
}

TEST(EventSink, OrphanKernelChannels) {
  EventSink sink(1, 0, 2, 4, 4), other(2, 0, 2, 4, 4);
  int notOurs = 0;
  EXPECT_EQ(sink.start(chanEvent(nullptr, 0, 1)), nullptr);
  EXPECT_EQ(sink.start(chanEvent(&notOurs, 0, 1)), nullptr);
  void* foreign = other.start(collEvent(1, 1));
  EXPECT_EQ(sink.start(chanEvent(foreign, 0, 1)), nullptr);
  EXPECT_EQ(sink.counters().orphanEvents, 3u);

  // One KernelCh too many: the collective completes with the first; the extra one is an orphan.
  void* coll = sink.start(collEvent(1, 1));
  void* ch0 = sink.start(chanEvent(coll, 0, 100));
  void* ch1 = sink.start(chanEvent(coll, 1, 50));
  sink.recordState(ch0, kStateKernelChStop, 200);
  sink.recordState(ch1, kStateKernelChStop, 900);
  sink.stop(coll);
  sink.stop(ch0);
  sink.stop(ch1);
  auto samples = drainAll(sink);
  ASSERT_EQ(samples.size(), 1u);
  EXPECT_EQ(samples[0].durationNs, 100u);
  EXPECT_EQ(sink.counters().orphanEvents, 4u);
  EXPECT_EQ(sink.channelsInFlight(), 0u);
}

TEST(EventSink, LateEventsOfARecycledSlotAreIgnored) {
  EventSink sink(1, 0, 2, 1, 4);
  void* a = sink.start(collEvent(1, 1));
  void* aCh = sink.start(chanEvent(a, 0, 10));
  sink.recordState(aCh, kStateKernelChStop, 20);
  sink.stop(aCh);
  EXPECT_EQ(drainAll(sink).size(), 1u);
  void* b = sink.start(collEvent(2, 1));  // same slot, next generation
  ASSERT_NE(b, nullptr);
  EXPECT_NE(a, b);
  void* bCh = sink.start(chanEvent(b, 0, 30));
  ASSERT_NE(bCh, nullptr);
  EXPECT_NE(aCh, bCh);
  // a's channel again, late: its record must not set b's stop time, nor its stop complete b.
  sink.recordState(aCh, kStateKernelChStop, 1000);
  sink.stop(aCh);
  EXPECT_EQ(sink.counters().orphanEvents, 1u);
  EXPECT_EQ(sink.collsInFlight(), 1u);
  sink.recordState(bCh, kStateKernelChStop, 70);
  sink.stop(bCh);
  auto samples = drainAll(sink);
  ASSERT_EQ(samples.size(), 1u);
  EXPECT_EQ(samples[0].seqNumber, 2u);
  EXPECT_EQ(samples[0].durationNs, 40u);
}

// A handle's tag is 16 bits of its slot's generation, in the top address bits (telemetry/slot_tag.h):
// 64 and 32,768 generations later (where a 15-bit tag would wrap) an old handle still names no one.
TEST(EventSink, StaleHandleIsRecognisedAfterManyGenerations) {
  EventSink sink(1, 0, 2, 1, 4);
  void* a = sink.start(collEvent(1, 1));
  void* aCh = sink.start(chanEvent(a, 0, 1));
  for (int generations : {64, 32768}) {
    sink.recordState(aCh, kStateKernelChStop, 2);
    sink.stop(aCh);  // completes a; then the slot's generation moves on
    drainAll(sink);
    for (int i = 1; i < generations; ++i) EXPECT_TRUE(runChannel(sink, sink.start(collEvent(2, 1)), 0, 10, 20));
    drainAll(sink);
    void* b = sink.start(collEvent(3, 1));
    ASSERT_NE(b, nullptr);
    EXPECT_EQ(sink.start(chanEvent(a, 0, 1)), nullptr);  // still not b
    EXPECT_EQ(sink.collsInFlight(), 1u);
    ASSERT_TRUE(runChannel(sink, b, 0, 10, 20));
    EXPECT_EQ(drainAll(sink).size(), 1u);
    a = sink.start(collEvent(4, 1));
    aCh = sink.start(chanEvent(a, 0, 1));
    ASSERT_NE(aCh, nullptr);
  }
}

// Slots are taken in turn: the third collective of a pool of two takes the first's slot, and the first,
// still open a pool's worth of collectives later, is stale: recycled, its late events ignored.
TEST(EventSink, SlotsAreTakenInTurnAndAStaleOwnerIsReclaimed) {
  EventSink sink(1, 0, 2, 2, 4);
  void* a = sink.start(collEvent(1, 1));
  void* b = sink.start(collEvent(2, 1));
  void* c = sink.start(collEvent(3, 1));
  ASSERT_NE(c, nullptr);
  EXPECT_EQ(sink.counters().droppedIncomplete, 1u);  // a
  EXPECT_EQ(sink.counters().droppedPoolExhausted, 0u);
  EXPECT_FALSE(runChannel(sink, a, 0, 1, 2));  // a's late child: an orphan, c untouched
  sink.stop(a);
  runChannel(sink, b, 0, 10, 30);
  sink.stop(b);
  runChannel(sink, c, 0, 100, 150);
  sink.stop(c);
  auto samples = drainAll(sink);
  ASSERT_EQ(samples.size(), 2u);
  EXPECT_EQ(samples[0].seqNumber, 2u);
  EXPECT_EQ(samples[1].seqNumber, 3u);
  EXPECT_EQ(samples[1].durationNs, 50u);
  EXPECT_EQ(sink.collsInFlight(), 0u);
  expectBalanced(sink);
}

TEST(EventSink, StaleCollIsReclaimedAndItsLateEventsIgnored) {
  const size_t pool = 4;
  EventSink sink(1, 0, 2, pool, 64);
  void* leaked = sink.start(collEvent(0, 2));
  void* leakedCh = sink.start(chanEvent(leaked, 0, 1));  // never stopped until much later
  ASSERT_NE(leakedCh, nullptr);
  for (uint64_t seq = 1; seq <= 10; ++seq) {  // healthy traffic through the other slots
    void* c = sink.start(collEvent(seq, 1));
    runChannel(sink, c, 0, 100, 200);
    sink.stop(c);
  }
  std::vector<void*> open;
  for (uint64_t seq = 11; seq < 11 + pool - 1; ++seq) open.push_back(sink.start(collEvent(seq, 1)));
  void* fresh = sink.start(collEvent(99, 1));  // pool full: the leaked one is > pool starts old
  ASSERT_NE(fresh, nullptr);
  EXPECT_EQ(sink.counters().droppedIncomplete, 1u);
  EXPECT_EQ(sink.counters().droppedPoolExhausted, 0u);
  // The leaked collective's late events must not touch the slot's new owner.
  sink.recordState(leakedCh, kStateKernelChStop, 1'000'000);
  sink.stop(leakedCh);
  sink.stop(leaked);
  EXPECT_GE(sink.counters().orphanEvents, 1u);
  runChannel(sink, fresh, 0, 500, 800);
  sink.stop(fresh);
  auto samples = drainAll(sink);
  ASSERT_EQ(samples.size(), 11u);  // the healthy ten and fresh, untouched by the leaked one's events
  EXPECT_EQ(samples.back().seqNumber, 99u);
  EXPECT_EQ(samples.back().durationNs, 300u);
  for (void* c : open) {
    runChannel(sink, c, 0, 1, 2);
    sink.stop(c);
  }
  EXPECT_EQ(sink.collsInFlight(), 0u);
  EXPECT_EQ(sink.channelsInFlight(), 0u);
  expectBalanced(sink);
}

// Every slot leaked (Colls whose KernelCh never came): the next start recycles the oldest, in O(1).
TEST(EventSink, APoolThatLeakedEverySlotRecovers) {
  const size_t pool = 4;
  EventSink sink(1, 0, 2, pool, 64);
  for (uint64_t seq = 0; seq < pool; ++seq) ASSERT_NE(sink.start(collEvent(seq, 1)), nullptr);
  void* fresh = sink.start(collEvent(pool, 1));
  ASSERT_NE(fresh, nullptr);
  EXPECT_EQ(sink.counters().droppedIncomplete, 1u);
  EXPECT_EQ(sink.counters().droppedPoolExhausted, 0u);
  runChannel(sink, fresh, 0, 10, 30);
  sink.stop(fresh);
  auto samples = drainAll(sink);
  ASSERT_EQ(samples.size(), 1u);
  EXPECT_EQ(samples[0].seqNumber, pool);
}

// A KernelCh lives in its parent's slot: a collective of 64 channels, all open at once, needs no other
// slot and is timed whole, whatever the pool size.
TEST(EventSink, ChannelsNeedNoSlotsOfTheirOwn) {
  EventSink sink(1, 0, 2, 1, 4);
  void* coll = sink.start(collEvent(1, 64));
  std::vector<void*> chans;
  for (uint8_t c = 0; c < 64; ++c) chans.push_back(sink.start(chanEvent(coll, c, 1000 + c)));
  for (void* h : chans) {
    ASSERT_NE(h, nullptr);
    EXPECT_EQ(EventSink::ownerOf(h), &sink);
  }
  EXPECT_EQ(sink.channelsInFlight(), 64u);
  sink.stop(coll);
  for (int c = 63; c >= 0; --c) {
    sink.recordState(chans[c], kStateKernelChStop, 5000 + c);
    sink.stop(chans[c]);
  }
  auto samples = drainAll(sink);
  ASSERT_EQ(samples.size(), 1u);
  EXPECT_EQ(samples[0].durationNs, 5063u - 1000u);
  EXPECT_EQ(sink.counters().orphanEvents, 0u);
  EXPECT_EQ(sink.channelsInFlight(), 0u);
  expectBalanced(sink);
}

// A channel started twice while open, or stopped twice, is an orphan: the second start gets no handle,
// and a second stop takes no channel credit, so the collective still waits for its other channel.
TEST(EventSink, AChannelStartedOrStoppedTwiceCountsOnce) {
  EventSink sink(1, 0, 2, 4, 4);
  void* coll = sink.start(collEvent(1, 2));
  void* ch0 = sink.start(chanEvent(coll, 0, 100));
  ASSERT_NE(ch0, nullptr);
  EXPECT_EQ(sink.start(chanEvent(coll, 0, 150)), nullptr);
  EXPECT_EQ(sink.counters().orphanEvents, 1u);
  sink.recordState(ch0, kStateKernelChStop, 300);
  sink.stop(ch0);
  sink.stop(ch0);  // a duplicate: not channel 1's stop
  EXPECT_EQ(sink.counters().orphanEvents, 2u);
  sink.stop(coll);
  EXPECT_TRUE(drainAll(sink).empty());
  EXPECT_EQ(sink.collsInFlight(), 1u);
  EXPECT_TRUE(runChannel(sink, coll, 1, 120, 400));
  auto samples = drainAll(sink);
  ASSERT_EQ(samples.size(), 1u);
  EXPECT_EQ(samples[0].durationNs, 300u);  // channel 0's start (100), not the refused 150, to 400
  // A KernelCh handle is no parent.
  void* c2 = sink.start(collEvent(2, 1));
  void* k = sink.start(chanEvent(c2, 0, 10));
  EXPECT_EQ(sink.start(chanEvent(k, 0, 10)), nullptr);
  EXPECT_EQ(sink.counters().orphanEvents, 3u);
  expectBalanced(sink);
}

// NCCL emits fewer KernelCh events than the Coll's nChannels (one of eight here). The first pool's worth
// of collectives cannot complete; the first one recycled says how many children NCCL emits, and from
// then on every collective completes with them: no sample lost in steady state. (The other leaked slots
// stay taken until a start finds no free slot among those it looks at.)
TEST(EventSink, FewerChildrenThanChannelsAreLearnedFromTheFirstStaleCollective) {
  const size_t pool = 4;
  EventSink sink(1, 0, 2, pool, 64);
  const uint64_t n = 40;
  size_t samples = 0;
  for (uint64_t seq = 0; seq < n; ++seq) {
    void* c = sink.start(collEvent(seq, 8));
    ASSERT_NE(c, nullptr);
    runChannel(sink, c, 3, 100 * seq, 100 * seq + 40);
    sink.stop(c);
    samples += drainAll(sink).size();
  }
  EXPECT_EQ(samples, n - pool);
  EXPECT_EQ(sink.counters().droppedIncomplete, 1u);
  EXPECT_EQ(sink.collsInFlight(), pool - 1);
  EXPECT_EQ(sink.counters().droppedPoolExhausted, 0u);
  expectBalanced(sink);
  // One child more than learned: NCCL emits all eight again; the next collective waits for all of them.
  void* c = sink.start(collEvent(n, 8));
  for (uint8_t ch = 0; ch < 2; ++ch) runChannel(sink, c, ch, 10, 20);
  sink.stop(c);
  EXPECT_EQ(drainAll(sink).size(), 1u);  // completed by its first child, as learned
  void* d = sink.start(collEvent(n + 1, 8));
  for (uint8_t ch = 0; ch < 7; ++ch) runChannel(sink, d, ch, 10, 20);
  sink.stop(d);
  EXPECT_TRUE(drainAll(sink).empty());  // waits for the eighth
  runChannel(sink, d, 7, 10, 90);
  auto last = drainAll(sink);
  ASSERT_EQ(last.size(), 1u);
  EXPECT_EQ(last[0].durationNs, 80u);
  expectBalanced(sink);
}

// A stale collective whose child is still open (started, its stop not yet come: a slow proxy, not a
// release that emits fewer children) teaches nothing: the next collectives still wait for all channels.
TEST(EventSink, AStaleCollectiveWithAnOpenChildTeachesNothing) {
  const size_t pool = 4;
  EventSink sink(1, 0, 2, pool, 64);
  void* first = sink.start(collEvent(0, 8));
  runChannel(sink, first, 0, 10, 20);
  ASSERT_NE(sink.start(chanEvent(first, 1, 10)), nullptr);  // open, never stopped
  sink.stop(first);
  for (uint64_t seq = 1; seq < pool; ++seq) sink.stop(sink.start(collEvent(seq, 8)));  // no children yet
  void* c = sink.start(collEvent(pool, 8));  // every slot held: the first one's, a pool old, is reclaimed
  ASSERT_NE(c, nullptr);
  EXPECT_EQ(sink.counters().droppedIncomplete, 1u);
  runChannel(sink, c, 0, 10, 20);
  sink.stop(c);
  EXPECT_TRUE(drainAll(sink).empty());  // one child of eight is not the whole collective
  for (uint8_t ch = 1; ch < 8; ++ch) runChannel(sink, c, ch, 10, 20);
  EXPECT_EQ(drainAll(sink).size(), 1u);
}

// Children that never come at all (KernelCh not enabled) teach nothing: such collectives yield no sample,
// and every start still costs O(1).
TEST(EventSink, CollsWithoutChildrenAreRecycledWithoutLearning) {
  const size_t pool = 4;
  EventSink sink(1, 0, 2, pool, 64);
  for (uint64_t seq = 0; seq < 20; ++seq) sink.stop(sink.start(collEvent(seq, 8)));
  EXPECT_EQ(sink.counters().droppedIncomplete, 20u - pool);
  void* c = sink.start(collEvent(20, 8));
  for (uint8_t ch = 0; ch < 7; ++ch) runChannel(sink, c, ch, 10, 20);
  sink.stop(c);
  EXPECT_TRUE(drainAll(sink).empty());  // still waits for all eight
  runChannel(sink, c, 7, 10, 20);
  EXPECT_EQ(drainAll(sink).size(), 1u);
}

TEST(EventSink, FullRingDropsAndCounts) {
  EventSink sink(1, 0, 2, 8, 2);
  for (uint64_t seq = 0; seq < 3; ++seq) {
    void* c = sink.start(collEvent(seq, 1));
    runChannel(sink, c, 0, 1, 2);
    sink.stop(c);
  }
  EXPECT_EQ(sink.counters().samplesEmitted, 2u);
  EXPECT_EQ(sink.counters().droppedRingFull, 1u);
  EXPECT_EQ(drainAll(sink).size(), 2u);
  expectBalanced(sink);
}


// ---- the slow-channel summary ----

// One collective of n channels starting at 1000; channel c stops after ns[c].
CollSample runWith(EventSink& sink, uint64_t seq, const std::vector<uint64_t>& ns) {
  void* coll = sink.start(collEvent(seq, static_cast<uint8_t>(ns.size())));
  EXPECT_NE(coll, nullptr);
  sink.stop(coll);
  for (size_t c = 0; c < ns.size(); ++c)
    EXPECT_TRUE(runChannel(sink, coll, static_cast<uint8_t>(c), 1000, 1000 + ns[c]));
  auto samples = drainAll(sink);
  EXPECT_EQ(samples.size(), 1u);
  return samples.empty() ? CollSample{} : samples[0];
}

TEST(EventSink, ChannelsOnASlowNicAreNamedWithTheirRatio) {
  EventSink sink(1, 0, 16, 4, 16);
  std::vector<uint64_t> ns(16, 10'000);
  for (size_t c = 0; c < 16; ++c) ns[c] += 37 * c;  // a healthy spread of under 6%
  ns[7] = ns[15] = 40'000;
  CollSample s = runWith(sink, 1, ns);
  EXPECT_EQ(s.slowChannels, (uint64_t{1} << 7) | (uint64_t{1} << 15));
  // The lower median of the 16 (the 8th smallest) is channel 8's 10,296 ns (sorted: 0..6, 8..14, 7, 15).
  EXPECT_EQ(s.slowRatioQ8, static_cast<uint16_t>(256.0 * 40'000 / 10'296 + 0.5));
  EXPECT_EQ(s.durationNs, 40'000u);  // the collective's time is unchanged: max stop - min start
  expectBalanced(sink);
}

TEST(EventSink, EvenChannelsNameNothing) {
  EventSink sink(1, 0, 16, 4, 16);
  std::vector<uint64_t> even(16, 10'000);
  even[3] = 11'900;  // 1.19x: below the factor
  CollSample s = runWith(sink, 1, even);
  EXPECT_EQ(s.slowChannels, 0u);
  EXPECT_EQ(s.slowRatioQ8, 0u);
  even[3] = 12'100;  // 1.21x: above it
  s = runWith(sink, 2, even);
  EXPECT_EQ(s.slowChannels, uint64_t{1} << 3);
  // One channel has no median to compare with.
  s = runWith(sink, 3, {50'000});
  EXPECT_EQ(s.slowChannels, 0u);
}

TEST(EventSink, OneSlowChannelOfTwoStandsOut) {
  EventSink sink(1, 0, 2, 4, 16);
  CollSample s = runWith(sink, 1, {10'000, 15'000});
  EXPECT_EQ(s.slowChannels, uint64_t{1} << 1);  // the lower median: the fast one
  EXPECT_EQ(s.slowRatioQ8, 384u);               // 1.5 x 256
}

TEST(EventSink, SummaryDoesNotLeakIntoTheSlotsNextCollective) {
  EventSink sink(1, 0, 8, 1, 16);  // one Coll slot: every collective reuses it
  std::vector<uint64_t> slow(8, 10'000);
  slow[5] = 30'000;
  EXPECT_EQ(runWith(sink, 1, slow).slowChannels, uint64_t{1} << 5);
  // The next collective has 4 even channels: channel 5's old time must not count.
  CollSample s = runWith(sink, 2, std::vector<uint64_t>(4, 10'000));
  EXPECT_EQ(s.slowChannels, 0u);
  EXPECT_EQ(s.slowRatioQ8, 0u);
}

TEST(EventSink, UntimedChannelsAreLeftOutOfTheSummary) {
  EventSink sink(1, 0, 8, 4, 16);
  void* coll = sink.start(collEvent(1, 3));
  sink.stop(coll);
  runChannel(sink, coll, 0, 1000, 11'000);
  runChannel(sink, coll, 1, 1000, 11'000);
  runChannel(sink, coll, 2, 1000, 0);  // untimed: not a zero-length channel
  auto samples = drainAll(sink);
  ASSERT_EQ(samples.size(), 1u);
  EXPECT_EQ(samples[0].durationNs, 10'000u);
  EXPECT_EQ(samples[0].slowChannels, 0u);
  expectBalanced(sink);
}

// NCCL's MAXCHANNELS is 64: a channel id beyond it is not kept, so its collective cannot be timed whole
// and completes without a sample (a partial time would lie).
TEST(EventSink, AChannelBeyondSixtyFourLeavesItsCollectiveUnsampled) {
  EventSink sink(1, 0, 8, 4, 16);
  void* coll = sink.start(collEvent(1, 2));
  sink.stop(coll);
  runChannel(sink, coll, 0, 1000, 11'000);
  EXPECT_FALSE(runChannel(sink, coll, 70, 1000, 90'000));
  EXPECT_TRUE(drainAll(sink).empty());
  EXPECT_EQ(sink.collsInFlight(), 0u);
  EXPECT_EQ(sink.counters().droppedIncomplete, 1u);
  EXPECT_EQ(sink.counters().orphanEvents, 1u);
  expectBalanced(sink);
}

}  // namespace
}  // namespace wirewise
