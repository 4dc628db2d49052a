#include "adaptive/evidence.h"

#include <algorithm>
#include <bit>
#include <map>
#include <string>
#include <tuple>

#include "adaptive/buckets.h"
#include "common/log_events.h"

namespace wirewise::adapt {

Decision toDecision(Choice c) {
  return {c.algo, c.proto, static_cast<int8_t>(std::min<int>(c.nChannels, kMaxChannels))};
}

std::string choiceName(Choice c) { return logev::formatDecision(algoName(c.algo), protoName(c.proto), c.nChannels); }

std::vector<Observation> mergeInterval(std::span<const MemberEvidence> members, MergeStats* stats) {
  struct Coll {
    uint64_t bytes = 0;
    uint32_t minNs = UINT32_MAX;
    Choice choice;
    bool mixed = false;
    uint64_t slow = 0;  // the kept (fastest) rank's summary
    uint16_t ratioQ8 = 0;
  };
  // (coll, seqNumber) names one collective on every rank.
  std::map<std::pair<int, uint64_t>, Coll> colls;
  for (const MemberEvidence& m : members)
    for (const Sample& s : m.samples) {
      if (s.coll < 0 || s.coll >= kNumCollTypes || s.algo < 0 || s.algo >= kNumAlgos || s.proto < 0 ||
          s.proto >= kNumProtos || s.durationNs == 0)
        continue;
      Choice ch{s.algo, s.proto, s.nChannels};
      auto [it, fresh] = colls.try_emplace({s.coll, s.seqNumber});
      Coll& c = it->second;
      if (fresh) {
        c.bytes = s.bytes;
        c.choice = ch;
      } else if (c.choice != ch) {
        c.mixed = true;
      }
      if (s.durationNs < c.minNs) c.minNs = s.durationNs, c.slow = s.slowChannels, c.ratioQ8 = s.slowRatioQ8;
    }
  using Key = std::tuple<int, int, Choice>;
  struct Acc {
    std::vector<double> us;
    double bytes = 0;
    int hits[64] = {};            // per channel: collectives that named it slow
    std::vector<double> ratios;   // of the collectives that named a channel
  };
  std::map<Key, Acc> acc;
  MergeStats st;
  for (const auto& [id, c] : colls) {
    ++st.collectives;
    if (c.mixed) {
      ++st.mixedChoices;
      continue;
    }
    Acc& a = acc[{id.first, SizeBuckets::index(c.bytes), c.choice}];
    a.us.push_back(c.minNs / 1000.0);
    a.bytes += static_cast<double>(c.bytes);
    if (c.slow != 0) {
      for (uint64_t m = c.slow; m != 0; m &= m - 1) ++a.hits[std::countr_zero(m)];
      a.ratios.push_back(c.ratioQ8 / 256.0);
    }
  }
  std::vector<Observation> out;
  out.reserve(acc.size());
  for (auto& [k, a] : acc) {
    Observation o;
    o.coll = std::get<0>(k);
    o.bucket = std::get<1>(k);
    o.choice = std::get<2>(k);
    o.n = static_cast<int>(a.us.size());
    for (double u : a.us) o.totalUs += u;
    o.meanBytes = a.bytes / o.n;
    auto mid = a.us.begin() + static_cast<std::ptrdiff_t>(a.us.size() / 2);
    std::nth_element(a.us.begin(), mid, a.us.end());
    o.medianUs = *mid;
    if (a.us.size() % 2 == 0) o.medianUs = (o.medianUs + *std::max_element(a.us.begin(), mid)) / 2;
    const int need = std::max(kMinSlowCollectives, (3 * o.n + 3) / 4);
    for (int c = 0; c < 64; ++c)
      if (a.hits[c] >= need) o.slowChannels |= uint64_t{1} << c;
    if (o.slowChannels != 0) {
      auto rmid = a.ratios.begin() + static_cast<std::ptrdiff_t>(a.ratios.size() / 2);
      std::nth_element(a.ratios.begin(), rmid, a.ratios.end());
      o.slowRatio = *rmid;
    }
    out.push_back(o);
  }
  if (stats != nullptr) *stats = st;
  return out;
}

}  // namespace wirewise::adapt
