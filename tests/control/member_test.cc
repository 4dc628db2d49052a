// A member's verdict list: the I/O thread delivers in order, the getCollInfo thread takes in order, and
// nodes the consumer can no longer reach are reused for later verdicts.
#include "control/member.h"

#include <gtest/gtest.h>

#include <atomic>
#include <thread>
#include <vector>

namespace wirewise::control {
namespace {

Verdict verdictAt(uint64_t k) {
  Verdict v{7, k, 64 + 8 * k, 72 + 8 * k, false, "t", {}};
  v.rules.push_back({kAny, 0, 1023 + k, {kAlgoRing, kProtoLL, 0}});
  return v;
}

// What the tuner does as it passes a boundary (runtime/tuner_core.cc), at steady-clock time nowUs.
void pass(Member& m, int64_t nowUs) {
  m.prevPassedAtUs.store(m.passedAtUs.load());
  m.passedAtUs.store(nowUs);
  m.passed.fetch_add(1);
}

// The steady clock counts from boot: the first boundary's report must not carry the machine's uptime as
// the interval's length (a minute after boot or ten days, the coordinator would size the next interval by
// it), but 0, which the coordinator reads as "no rate known yet".
TEST(Member, TheFirstBoundaryHasNoIntervalWhateverTheUptime) {
  for (int64_t bootUs : {int64_t{0}, int64_t{60} * 1000 * 1000, int64_t{864000} * 1000 * 1000}) {
    Member m(7, 1, 2, 1, 0);
    EXPECT_EQ(m.lastIntervalUs(), 0u);
    pass(m, bootUs);
    EXPECT_EQ(m.lastIntervalUs(), 0u) << "uptime " << bootUs << " us leaked into the first interval";
    pass(m, bootUs + 2500);
    EXPECT_EQ(m.lastIntervalUs(), 2500u);
    pass(m, bootUs + 2600);
    EXPECT_EQ(m.lastIntervalUs(), 100u);
  }
}

TEST(Member, DeliversInOrderAndDropsDuplicates) {
  Member m(7, 1, 2, 1, 0);
  EXPECT_EQ(m.deliver(verdictAt(1)), nullptr);  // not the next index
  ASSERT_NE(m.deliver(verdictAt(0)), nullptr);
  EXPECT_EQ(m.deliver(verdictAt(0)), nullptr);  // a duplicate after a resync
  EXPECT_EQ(m.delivered(), 1u);
  EXPECT_EQ(m.tryTake(1), nullptr);
  const VerdictNode* n = m.tryTake(0);
  ASSERT_NE(n, nullptr);
  EXPECT_EQ(n->boundary, 64u);
  ASSERT_NE(n->table, nullptr);
}

// The consumer takes each verdict some time after it was delivered (0 to 3 verdicts behind): every node
// it takes carries its own verdict's fields and table, including nodes that were reused.
TEST(Member, ReusedNodesCarryTheirOwnVerdict) {
  for (uint64_t lag = 0; lag < 4; ++lag) {
    Member m(7, 1, 2, 1, 0);
    std::vector<std::shared_ptr<const DecisionTable>> tables;
    uint64_t next = 0;
    for (uint64_t k = 0; k < 200; ++k) {
      Verdict v = verdictAt(k);
      if (k % 7 == 3) v.observeOnly = true;
      tables.push_back(v.observeOnly ? nullptr : DecisionTable::build(v.rules, v.reason));
      ASSERT_NE(m.deliver(v, tables.back()), nullptr);
      for (; next + lag <= k; ++next) {
        const VerdictNode* n = m.tryTake(next);
        ASSERT_NE(n, nullptr) << k << " " << next;
        EXPECT_EQ(n->index, next);
        EXPECT_EQ(n->boundary, 64 + 8 * next);
        EXPECT_EQ(n->next, 72 + 8 * next);
        EXPECT_EQ(n->observeOnly, next % 7 == 3);
        EXPECT_EQ(n->table, tables[next]);
      }
    }
  }
}

// Producer and consumer on their own threads (run under TSan too): the consumer follows the list as
// the producer appends and reuses nodes.
TEST(Member, ProducerAndConsumerThreads) {
  Member m(7, 1, 2, 1, 0);
  constexpr uint64_t kVerdicts = 20000;
  std::atomic<bool> bad{false};
  std::vector<std::shared_ptr<const DecisionTable>> tables;
  for (uint64_t k = 0; k < 5; ++k) tables.push_back(DecisionTable::build(verdictAt(k).rules, "t"));
  std::thread consumer([&] {
    for (uint64_t k = 0; k < kVerdicts;) {
      const VerdictNode* n = m.tryTake(k);
      if (n == nullptr) {
        std::this_thread::yield();
        continue;
      }
      if (n->index != k || n->boundary != 64 + 8 * k || n->next != 72 + 8 * k || n->table != tables[k % 5]) bad = true;
      ++k;
    }
  });
  for (uint64_t k = 0; k < kVerdicts; ++k) EXPECT_NE(m.deliver(verdictAt(k), tables[k % 5]), nullptr);
  consumer.join();
  EXPECT_FALSE(bad);
}

}  // namespace
}  // namespace wirewise::control
