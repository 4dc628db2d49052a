#include <gtest/gtest.h>

#include <climits>
#include <cstring>
#include <random>
#include <utility>
#include <vector>

#include "adaptive/decision_table.h"

namespace wirewise {
namespace {

struct Choice {
  int algo = -1, proto = -1;
  friend bool operator==(const Choice&, const Choice&) = default;
};

// NCCL 2.28's selection after the tuner returns (topoGetAlgoInfo), rewritten from its description:
// skip -1.0 entries, keep the first strictly smaller entry among those >= 0 and < 3.6e9.
Choice ncclSelect(const std::vector<float>& t, int numAlgo, int numProto) {
  Choice c;
  float minTime = 3.6e9f;
  for (int a = 0; a < numAlgo; ++a) {
    for (int p = 0; p < numProto; ++p) {
      float v = t[size_t(a * numProto + p)];
      if (v == -1.0f) continue;
      if (v >= 0.0f && v < minTime) {
        c = {a, p};
        minTime = v;
      }
    }
  }
  return c;
}

bool eligible(float v) { return v >= 0.0f && v < 3.6e9f; }

float randomCost(std::mt19937& rng) {
  switch (rng() % 10) {
    case 0: case 1: case 2: return -1.0f;
    case 3: return 0.0f;  // ties at zero: NCCL's tie-break must not steal the forced entry
    case 4: return rng() % 2 ? 3.6e9f : 1e12f;
    case 5: return rng() % 2 ? -0.0f : -2.5f;
    default: return float(rng() % 1000) / 7.0f;
  }
}

constexpr int kGuard = 8;         // sentinels either side of the table: nothing outside may be touched
constexpr float kSentinel = 12345.0f;

TEST(ApplyDecision, AgreesWithNcclSelectionForEveryEntryOnRandomTables) {
  std::mt19937 rng(11);
  int applied = 0, refused = 0;
  for (int iter = 0; iter < 3000; ++iter) {
    int numAlgo = iter % 3 == 0 ? 7 : 1 + int(rng() % 8);
    int numProto = iter % 3 == 0 ? 3 : 1 + int(rng() % 4);
    std::vector<float> orig(size_t(numAlgo * numProto));
    for (float& v : orig) v = randomCost(rng);
    for (int a = -1; a <= numAlgo + 1; ++a) {
      for (int p = -1; p <= numProto + 1; ++p) {
        int8_t channels = int8_t(std::vector<int>{0, 1, 17, 64, 65, -1, -7}[rng() % 7]);
        Decision d{int8_t(a), int8_t(p), channels};
        std::vector<float> buf(orig.size() + 2 * kGuard, kSentinel);
        std::memcpy(buf.data() + kGuard, orig.data(), orig.size() * sizeof(float));
        int nCh = 0;
        bool changed = applyDecision(d, CostTableView(buf.data() + kGuard, numAlgo, numProto), &nCh);
        std::vector<float> after(buf.begin() + kGuard, buf.end() - kGuard);
        for (int g = 0; g < kGuard; ++g) {
          ASSERT_EQ(buf[size_t(g)], kSentinel);
          ASSERT_EQ(buf[buf.size() - 1 - size_t(g)], kSentinel);
        }
        // What should have been forced, computed from the original table.
        Choice want;
        bool applicable;
        auto at = [&](int x, int y) { return orig[size_t(x * numProto + y)]; };
        if (a == kAny && p == kAny) {
          applicable = false;
        } else if (a != kAny && p != kAny) {
          applicable = a >= 0 && p >= 0 && a < numAlgo && p < numProto && eligible(at(a, p));
          want = {a, p};
        } else {
          applicable = false;
          int n = a != kAny ? numProto : numAlgo;
          bool inRange = a != kAny ? (a >= 0 && a < numAlgo) : (p >= 0 && p < numProto);
          for (int i = 0; inRange && i < n; ++i) {
            int x = a != kAny ? a : i, y = a != kAny ? i : p;
            if (eligible(at(x, y)) && (!applicable || at(x, y) < at(want.algo, want.proto))) {
              applicable = true;
              want = {x, y};
            }
          }
        }
        bool channelsOnly = a == kAny && p == kAny;
        bool wantChannels = channels >= 1 && channels <= 64 && (applicable || channelsOnly);
        ASSERT_EQ(nCh, wantChannels ? channels : 0) << a << "," << p;
        ASSERT_EQ(changed, applicable || wantChannels);
        if (applicable) {
          ASSERT_EQ(ncclSelect(after, numAlgo, numProto), want) << "iter " << iter << " d " << a << "," << p;
          ++applied;
        } else {
          ASSERT_EQ(std::memcmp(after.data(), orig.data(), orig.size() * sizeof(float)), 0) << a << "," << p;
          ++refused;
        }
        for (size_t i = 0; i < orig.size(); ++i) {
          ASSERT_EQ(eligible(after[i]), eligible(orig[i])) << "enabledness changed at " << i;
          if (!eligible(orig[i])) {
            ASSERT_EQ(std::memcmp(&after[i], &orig[i], sizeof(float)), 0) << "a disabled entry was written";
          }
        }
      }
    }
  }
  EXPECT_GT(applied, 10000);  // both paths were really exercised
  EXPECT_GT(refused, 10000);
}

TEST(ApplyDecision, ForcedEntryBeatsEarlierZeroTies) {
  std::vector<float> t(21, 0.0f);
  int nCh = 0;
  ASSERT_TRUE(applyDecision(Decision{kAlgoPat, kProtoSimple, 0}, CostTableView(t.data(), 7, 3), &nCh));
  EXPECT_EQ(ncclSelect(t, 7, 3), (Choice{kAlgoPat, kProtoSimple}));
  EXPECT_EQ(nCh, 0);
  for (float v : t) EXPECT_TRUE(eligible(v));
}

TEST(ApplyDecision, DisabledWantedEntryChangesNothingIncludingChannels) {
  std::vector<float> t(21, 5.0f);
  t[kAlgoNvls * 3 + kProtoSimple] = -1.0f;
  auto copy = t;
  int nCh = 0;
  EXPECT_FALSE(applyDecision(Decision{kAlgoNvls, kProtoSimple, 16}, CostTableView(t.data(), 7, 3), &nCh));
  EXPECT_EQ(t, copy);
  EXPECT_EQ(nCh, 0);
}

TEST(ApplyDecision, OutOfRangeIsCheckedAgainstNcclsDimensions) {
  std::vector<float> t(4, 1.0f);  // a 2x2 table: algo 2 does not exist in it
  int nCh = 0;
  EXPECT_FALSE(applyDecision(Decision{kAlgoCollNetDirect, kProtoLL, 4}, CostTableView(t.data(), 2, 2), &nCh));
  EXPECT_FALSE(applyDecision(Decision{kAlgoTree, kProtoSimple, 4}, CostTableView(t.data(), 2, 2), &nCh));
  EXPECT_FALSE(applyDecision(Decision{int8_t(-3), kAny, 4}, CostTableView(t.data(), 2, 2), &nCh));
  EXPECT_EQ(nCh, 0);
  EXPECT_EQ(t, std::vector<float>(4, 1.0f));
}

TEST(ApplyDecision, InvalidViewAndNullChannelsAreSafe) {
  int nCh = 0;
  EXPECT_FALSE(applyDecision(Decision{kAny, kAny, 8}, CostTableView(nullptr, 7, 3), &nCh));
  std::vector<float> t(21, 1.0f);
  EXPECT_FALSE(applyDecision(Decision{kAlgoRing, kProtoLL, 8}, CostTableView(t.data(), 0, 3), &nCh));
  EXPECT_EQ(nCh, 0);
  EXPECT_TRUE(applyDecision(Decision{kAlgoRing, kProtoLL, 8}, CostTableView(t.data(), 7, 3), nullptr));
  EXPECT_FALSE(applyDecision(Decision{kAny, kAny, 8}, CostTableView(t.data(), 7, 3), nullptr));
  EXPECT_FALSE(applyDecision(Decision{}, CostTableView(t.data(), 7, 3), &nCh));
  // Counts of 0 or below refuse every kind of decision (no cell is read: the view would be garbage).
  t.assign(21, 1.0f);
  for (auto [numAlgo, numProto] : {std::pair{0, 3}, {7, 0}, {-1, 3}, {7, -4}, {INT_MIN, INT_MIN}}) {
    for (Decision d : {Decision{kAlgoRing, kProtoLL, 8}, Decision{kAlgoRing, kAny, 8}, Decision{kAny, kProtoLL, 8},
                       Decision{kAny, kAny, 8}}) {
      EXPECT_FALSE(applyDecision(d, CostTableView(t.data(), numAlgo, numProto), &nCh)) << numAlgo << "x" << numProto;
    }
  }
  EXPECT_EQ(nCh, 0);
  EXPECT_EQ(t, std::vector<float>(21, 1.0f));
}

}  // namespace
}  // namespace wirewise
