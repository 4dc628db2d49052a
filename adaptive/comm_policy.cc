#include "adaptive/comm_policy.h"

#include <algorithm>
#include <cinttypes>
#include <cmath>
#include <cstdio>

#include "adaptive/buckets.h"
#include "adaptive/table_json.h"
#include "common/units.h"

namespace wirewise::adapt {
namespace {

constexpr double kMinShare = 0.005;  // buckets below this share of the comm's time are left to NCCL
constexpr int kMaxRefine = 9;        // channel probes per episode
constexpr int kMinDetectSamples = 16;  // collectives behind one detector observation
constexpr uint64_t kReportLag = 2;      // verdict k's collectives reach the policy at verdict k+2
constexpr double kSameState = 1.04;     // incumbent times this close are taken for the same link state
// The heal check's first interval (verdicts after the switch) and its longest, once doubled.
constexpr uint64_t kHealFirstGap = 16;
constexpr uint64_t kHealMaxGap = 512;
constexpr uint64_t kResumeWithin = 128;  // verdicts within which an episode cut by the budget may go on
constexpr double kNewState = 2.0;       // an incumbent this much slower (or faster): the full channel count re-measured
constexpr double kSameRanking = 1.15;   // a second choice gaining less than this on it: still that state
constexpr double kClearWin = 0.8;       // a probe this much faster than the incumbent is adopted at once
constexpr size_t kMemory = 8;           // past episodes remembered per bucket
constexpr uint64_t kFruitlessMemory = 32;  // verdicts a fruitless alarm's size is remembered after its last use
constexpr uint64_t kSuspicion = 6;      // verdicts during which a new unhealthy link lowers the alarm bar
// Exploration budget: a token bucket that earns exploreShare of the measured time, with a credit of this
// many of the probed bucket's collectives (at its healthy time) so that calibration and an early fault are
// not left alone. Every probe is checked against it at its predicted cost; out of budget, a calibration
// waits and an episode ends with what it measured.
constexpr double kBurstCollectives = 192;
// No probe is predicted to run a collective more than this many times the incumbent's time: the budget caps
// the mean, this caps the tail a user sees as a step-time spike.
constexpr double kMaxProbeCost = 1.5;
// A probe interval may be shorter than probeSpacing collectives (down to minSamples + 1) when it still holds
// this much of the comm's traffic: enough for a verdict's round trip (about 1 ms, docs/control-plane.md).
constexpr double kShortProbeUs = 2000;
constexpr int kMaxOutstanding = 2;   // probes of one bucket in flight (results come back two verdicts later)
constexpr uint64_t kProbeTimeout = 4;  // verdicts after which an unmeasured probe is given up (or retried)
// A probe whose interval held none of its collectives is issued again on an interval twice as long, at most
// this many times: collectives come in runs (a step's bucketed all-reduces, then its all-gathers), so an
// interval sized by a size's average share can fall between two runs of it.
constexpr int kProbeRetries = 3;
constexpr int kCostlyRounds = 4;  // channel-stage refills in one verdict when every count proposed was too costly

std::string decisionName(const Decision& d) {
  if (d.keepsNccl()) return std::string(logev::kNcclDecision);
  return logev::formatDecision(algoName(d.algo), protoName(d.proto), d.nChannels);
}

TableRule ruleFor(int coll, int bucket, Decision d) {
  uint64_t hi = SizeBuckets::upperEdge(bucket);
  return {coll, SizeBuckets::lowerEdge(bucket), hi == UINT64_MAX ? UINT64_MAX : hi - 1, d};
}


double round1(double x) { return std::round(x * 10) / 10; }

}  // namespace

CommPolicy::CommPolicy(uint64_t commId, uint32_t nRanks, uint32_t nNodes, PolicyParams params, EventFn emit)
    : commId_(commId), nRanks_(nRanks), nNodes_(nNodes), p_(params), emit_(std::move(emit)) {}

CommPolicy::Bucket& CommPolicy::bucketOf(int coll, int bucket) {
  auto [it, fresh] = buckets_.try_emplace({coll, bucket});
  if (fresh) {
    it->second.coll = coll;
    it->second.bucket = bucket;
    it->second.det = ChangeDetector(p_.detector);
  }
  return it->second;
}

bool CommPolicy::matchesPending(const Bucket& b, Choice c) const {
  if (b.ran && c == *b.ran) return false;
  for (const Pending& p : b.pending)
    if (p.d.algo == c.algo && p.d.proto == c.proto && (p.d.nChannels == 0 || p.d.nChannels == c.nChannels)) return true;
  return false;
}

void CommPolicy::ingest(std::span<const MemberEvidence> evidence, uint64_t index) {
  (void)index;
  // Members' cost tables merge into one that enables only what every member enables (a choice disabled on
  // one rank would leave that rank at NCCL's own pick: a divergence), at the worst member's cost. The merge
  // does not depend on the order in which reports arrive.
  for (const MemberEvidence& m : evidence)
    for (const Sight& s : m.sights) {
      Bucket& b = bucketOf(s.coll, s.bucket);
      if (!b.sight) {
        b.sight = s;
        continue;
      }
      b.sight->bytes = std::min(b.sight->bytes, s.bytes);
      for (int a = 0; a < kNumAlgos; ++a)
        for (int p = 0; p < kNumProtos; ++p) {
          float& w = b.sight->cost[a][p];
          const float v = s.cost[a][p];
          const bool both = w >= 0 && w < CostTableView::kExcluded && v >= 0 && v < CostTableView::kExcluded;
          w = both ? std::max(w, v) : -1.0f;
        }
    }
  // Link health: the union of the members' unhealthy links. A link that was not unhealthy before raises
  // suspicion at once: every watched bucket alarms on its next observation that is off its baseline by
  // more than twice the drift, without waiting for the CUSUM to accumulate.
  std::map<std::string, LinkNote> links;
  for (const MemberEvidence& m : evidence)
    for (const LinkNote& l : m.links) links.emplace(l.link, l);
  bool fresh = false;
  for (const auto& [name, l] : links) fresh |= !links_.count(name);
  if (!evidence.empty()) links_ = std::move(links);
  if (fresh)
    for (auto& [key, b] : buckets_)
      if (b.phase == Phase::Steady) b.suspectUntil = index + kSuspicion;
  MergeStats st;
  std::vector<Observation> obs = mergeInterval(evidence, &st);
  mixed_ += st.mixedChoices;
  for (const Observation& o : obs) {
    Bucket& b = bucketOf(o.coll, o.bucket);
    totalUs_ += o.totalUs;
    totalColls_ += static_cast<uint64_t>(o.n);
    b.timeUs += o.totalUs;
    b.colls += static_cast<uint64_t>(o.n);
    b.bytesSum += o.meanBytes * o.n;
    maxChannels_ = std::max<int>(maxChannels_, o.choice.nChannels);
    if (o.choice.algo >= 0 && o.choice.algo < kNumAlgos)
      algoChannels_[o.choice.algo] = std::max<int>(algoChannels_[o.choice.algo], o.choice.nChannels);
    if (o.n >= p_.minSamples) {
      if (o.slowChannels != 0)
        b.chans[o.choice] = {o.slowChannels, o.slowRatio, o.choice.nChannels, b.epoch};
      else
        b.chans.erase(o.choice);
    }
    if (b.phase == Phase::Exploring && matchesPending(b, o.choice)) {
      exploredUs_ += o.totalUs;
      b.spentUs += o.totalUs;
      for (auto it = b.pending.begin(); it != b.pending.end(); ++it)
        if (it->d.algo == o.choice.algo && it->d.proto == o.choice.proto &&
            (it->d.nChannels == 0 || it->d.nChannels == o.choice.nChannels)) {
          reservedUs_ = std::max(0.0, reservedUs_ - it->reservedUs);
          b.pending.erase(it);
          b.misses = 0;
          break;
        }
      addObservation(b.est, o, b.epoch);
      continue;
    }
    addObservation(b.est, o, b.epoch);
    // Not a probe. The incumbent's own collectives only once the reports cover intervals run under it
    // (reports at B_k carry verdict k-1's interval; the agreement decides verdict k+1 on them): before
    // that they are the previous incumbent's, which must neither teach "what NCCL runs" nor feed the
    // detector. An explicit incumbent is recognised by its choice.
    const bool settled = index >= b.switchedAt + kReportLag;
    const bool own = b.incumbent.keepsNccl() ? settled : (settled && b.ran && o.choice == *b.ran);
    if (!own) continue;
    if (b.incumbent.keepsNccl()) b.nccl = o.choice, b.ran = o.choice;
    if (b.phase != Phase::Steady) continue;
    if (b.accN == 0) b.accFrom = index;
    b.accLog += std::log(o.medianUs) * o.n;
    b.accN += o.n;
    // A detector observation needs more collectives than a probe: its baseline must not move with noise.
    if (b.accN < std::max(p_.minSamples, kMinDetectSamples)) continue;
    double x = b.accLog / b.accN;
    b.accLog = 0, b.accN = 0;
    b.lastObsLog = x;
    b.lastObsAt = index;
    b.lastObsFrom = b.accFrom;
    double up = b.det.upper(), down = b.det.lower(), base = b.det.baseline();
    const bool warming = !b.det.calibrated();
    Shift s = b.det.observe(x);
    if (up == 0 && b.det.upper() > 0) b.slowerSince = index;
    if (down == 0 && b.det.lower() > 0) b.fasterSince = index;
    // An observation that sets a new incumbent's baseline, far (a shock) from what the incumbent measured
    // when it was chosen: the link changed in between. Alarm against that measurement rather than
    // calibrate on the changed state.
    if (warming && b.chosenLog && std::fabs(x - *b.chosenLog) > b.det.params().shock) {
      s = x > *b.chosenLog ? Shift::Slower : Shift::Faster;
      b.det.resetTo(*b.chosenLog);
      up = down = 0, base = *b.chosenLog;
    }
    if (b.det.calibrated()) b.chosenLog.reset();
    if (s == Shift::None && index < b.suspectUntil && b.det.calibrated() &&
        std::fabs(x - base) > 2 * b.det.params().drift) {
      s = x > base ? Shift::Slower : Shift::Faster;
      b.det.resetTo(base);
      b.suspected = true;
    }
    // No larger than a change already shown not to matter (its episode kept the incumbent), and no new
    // unhealthy link behind it: the same flapping, not a new state. Watched, not acted on.
    if (s == Shift::Slower && !b.suspected && b.fruitlessShift > 0 && index <= b.fruitlessAt + kFruitlessMemory &&
        x - base <= b.fruitlessShift + b.det.params().drift) {
      s = Shift::None;
      b.det.resetTo(base);
      b.fruitlessAt = index;
    }
    if (s != Shift::None) {
      const DetectorParams& d = b.det.params();
      b.shift = s;
      b.changeAt = s == Shift::Slower ? (up > 0 ? b.slowerSince : index) : (down > 0 ? b.fasterSince : index);
      b.suspectUntil = 0;
      b.alarmStat = s == Shift::Slower ? up + std::min(x - base - d.drift, d.clip)
                                       : down + std::min(base - x - d.drift, d.clip);
    }
  }
}

double CommPolicy::collShare(const Bucket& b) const {
  return totalColls_ > 0 ? static_cast<double>(b.colls) / static_cast<double>(totalColls_) : 1.0;
}

uint64_t CommPolicy::probeLength(const Bucket& b, uint64_t spacing) const {
  const double freq = collShare(b);
  uint64_t len = static_cast<uint64_t>(std::ceil(p_.minSamples / std::max(freq, 1e-6))) + 1;
  const uint64_t hi = std::max(spacing, p_.probeSpacing);
  len = std::clamp<uint64_t>(len, shortestProbe(), hi);
  return std::min(len << std::min(b.misses, kProbeRetries), hi << kProbeRetries);
}

uint64_t CommPolicy::shortestProbe() const {
  // probeSpacing bounds the interval in collectives, which is what fast traffic needs (a verdict's round
  // trip must fit in it). Slow traffic fits it in fewer, and every collective of a probe interval beyond
  // the minSamples its probed size needs is exploration spent on nothing: a communicator with one size of
  // 1 ms all-reduces paid 8 collectives per candidate where 4 measure it.
  const double unit = meanCollUs();
  if (!(unit > 0)) return p_.probeSpacing;
  const double fits = std::ceil(kShortProbeUs / unit);
  if (fits >= static_cast<double>(p_.probeSpacing)) return p_.probeSpacing;
  const uint64_t need = std::min<uint64_t>(static_cast<uint64_t>(std::max(p_.minSamples, 1)) + 1, p_.probeSpacing);
  return std::clamp<uint64_t>(static_cast<uint64_t>(fits), need, p_.probeSpacing);
}

double CommPolicy::busBw(const Bucket& b, double us) const {
  double bytes = b.colls > 0 ? b.bytesSum / static_cast<double>(b.colls) : 0;
  return round1(busBandwidthGBs(b.coll, static_cast<uint64_t>(bytes), static_cast<uint64_t>(us * 1e3),
                                static_cast<int>(nRanks_)));
}

std::vector<std::string> CommPolicy::linkNotes() const {
  std::vector<std::string> out;
  for (const auto& [name, l] : links_) {
    char buf[224];
    int n = std::snprintf(buf, sizeof buf, "%s %s, %.0f%% of its speed%s", name.c_str(),
                          l.state == 2 ? "down" : "degraded", l.capacityRatio * 100.0,
                          l.errorsPerSec > 0 ? ", errors climbing" : "");
    // Rails measure their own latency: a rise to twice the baseline or more is named, in the units a
    // reader thinks in (40 µs, 2.0 ms).
    if (l.baselineRttUs > 0 && l.rttUs >= 2 * l.baselineRttUs && n > 0 && static_cast<size_t>(n) < sizeof buf) {
      std::snprintf(buf + n, sizeof buf - static_cast<size_t>(n), ", network latency rose from %s to %s",
                    durationText(l.baselineRttUs).c_str(), durationText(l.rttUs).c_str());
    }
    out.push_back(buf);
  }
  return out;
}

logev::Adapt CommPolicy::adaptFor(const Bucket& b, logev::AdaptKind kind) const {
  TableRule r = ruleFor(b.coll, b.bucket, {});
  logev::Adapt ev;
  ev.kind = std::string(logev::adaptKindName(kind));
  ev.coll = std::string(collName(static_cast<CollType>(b.coll)));
  ev.minBytes = r.minBytes;
  ev.maxBytes = r.maxBytes;
  return ev;
}

logev::Detector CommPolicy::detectorOf(const Bucket& b) const {
  return {std::round(b.alarmStat * 1000) / 1000, b.det.params().threshold,
          b.shift == Shift::Slower ? "slower" : "faster"};
}

void CommPolicy::emit(logev::Adapt ev, uint64_t index, uint64_t boundary) const {
  if (!emit_) return;
  ev.comm = hexId(commId_);
  ev.index = index;
  ev.boundary = boundary;
  emit_(nlohmann::json(ev));
}

void CommPolicy::emit(logev::CoordinatorTable ev, uint64_t index, uint64_t boundary) const {
  if (!emit_) return;
  ev.comm = hexId(commId_);
  ev.index = index;
  ev.boundary = boundary;
  emit_(nlohmann::json(ev));
}

// Latency or bandwidth (cause.h) of `alarming`'s change: every bucket of its collective with a calibrated
// time and a fresh one. A watched bucket compares its detector's baseline with its latest observation. For
// another bucket than the alarming one, that observation counts only if all of it was made after the
// alarming bucket's first evidence of the change (changeAt), and within kCauseFresh verdicts: one made
// before, or across, the change's start reads as less changed than it is, and would call a latency rise a
// bandwidth loss. A bucket in a re-probe episode compares the time before its alarm with its incumbent's
// estimate since.
std::optional<logev::Cause> CommPolicy::causeOf(const Bucket& alarming, uint64_t index) const {
  constexpr uint64_t kCauseFresh = 2;
  std::vector<BucketDelta> deltas;
  for (const auto& [key, b] : buckets_) {
    if (b.coll != alarming.coll || b.colls == 0 || !b.calibrated || !b.ran) continue;
    const double bytes = b.bytesSum / static_cast<double>(b.colls);
    const bool afterChange =
        &b == &alarming || (b.lastObsFrom > alarming.changeAt && b.lastObsAt + kCauseFresh >= index);
    if (b.phase == Phase::Steady && b.det.calibrated() && afterChange) {
      deltas.push_back({bytes, std::exp(b.det.baseline()), std::exp(b.lastObsLog)});
    } else if (b.phase == Phase::Exploring && b.startRan) {
      auto it = b.est.find(*b.startRan);
      if (it != b.est.end() && it->second.epoch == b.epoch && it->second.n > 0)
        deltas.push_back({bytes, std::exp(b.beforeLog), std::exp(it->second.logUs)});
    }
  }
  const Cause c = inferCause(deltas);
  if (c.kind == CauseKind::None) return std::nullopt;
  logev::Cause out;
  out.kind = std::string(causeName(c.kind));
  out.latencyUs = round1(c.latencyUs);
  out.sizes = c.sizes;
  out.text = explainCause(c, collName(static_cast<CollType>(alarming.coll)));
  return out;
}

void CommPolicy::startEpisode(Bucket& b, uint64_t index, uint64_t boundary) {
  const std::optional<logev::Cause> cause = causeOf(b, index);  // before this bucket leaves Steady
  const Choice inc = *b.ran;
  const double now = b.lastObsLog;
  beginEpisode(b, b.det.baseline(), now);  // the estimate itself has already followed the change
  // A state seen before: the incumbent measured within kSameState of what it measured in an earlier
  // episode (a flapping link, a fault that ended). That episode's winner is re-measured alone instead of
  // searching again (its runner-up when the winner is the incumbent); if it does not win, the incumbent
  // stays. The re-measured choice is also the state's second witness (checkWitness).
  Choice winner = inc;
  for (auto m = b.memory.rbegin(); m != b.memory.rend(); ++m) {
    auto it = m->times.find(inc);
    if (it == m->times.end() || std::fabs(it->second - now) > std::log(kSameState)) continue;
    b.quick = true;
    b.quickKnown = m->times.size() > 1;
    b.confirmed = true;
    b.matchedIndex = m->index;
    // The runner-up is the best of another (algo, proto): a channel count next to the winner would
    // feel what it feels. One that confirmed this state lately is not asked again: a link that flaps
    // faster than the loop would otherwise cost a probe at every turn.
    const bool fresh = m->confirmedAt > 0 && index < m->confirmedAt + kFruitlessMemory;
    std::optional<std::pair<Choice, double>> check;
    if (m->best != inc) {
      if (auto w = m->times.find(m->best); w != m->times.end()) check = *w;
    } else if (!fresh) {
      for (const auto& [c, l] : m->times)
        if ((c.algo != inc.algo || c.proto != inc.proto) && (!check || l < check->second)) check = {c, l};
    }
    if (check) {
      b.queue.push_back(toDecision(check->first));
      b.witness = check;
      b.witnessIncLog = it->second;
    }
    winner = m->best;
    break;
  }
  if (!b.quick) queueReprobes(b, inc, now);
  logev::Adapt ev = adaptFor(b, logev::AdaptKind::Alarm);
  double pct = (std::exp(now - b.beforeLog) - 1) * 100;
  ev.from = ev.to = decisionName(b.incumbent);
  ev.beforeUs = round1(std::exp(b.beforeLog));
  ev.afterUs = round1(std::exp(now));
  ev.beforeBusBwGBs = busBw(b, std::exp(b.beforeLog));
  ev.afterBusBwGBs = busBw(b, std::exp(now));
  ev.detector = detectorOf(b);
  ev.probes = b.queue.size();
  ev.links = linkNotes();
  ev.suspected = b.suspected;
  ev.reason = percentText(pct) + (pct >= 0 ? " slower" : " faster") + " than its baseline" +
              (b.suspected ? " while a link turned unhealthy" : "") + "; " + (cause ? cause->text + "; " : "") +
              (b.quick ? "the same state as at verdict " + std::to_string(b.matchedIndex) +
                             (!b.witness                  ? "; nothing to re-measure"
                              : b.witness->first == winner ? "; re-measuring its winner only"
                                                           : "; re-measuring its runner-up to confirm it")
                       : "re-measuring " + std::to_string(b.queue.size()) + " candidates predicted within " +
                             percentText((p_.closeFactor - 1) * 100) + " of it");
  ev.cause = cause;
  emit(std::move(ev), index, boundary);
  b.suspected = false;
}

// What every episode starts with: a new epoch, in which the incumbent measures `now` (log µs) against
// `before`, its baseline.
void CommPolicy::beginEpisode(Bucket& b, double before, double now) {
  const Choice inc = *b.ran;
  b.beforeLog = before;
  b.alarmShift = now - before;
  ++b.epoch;
  b.est[inc] = {now, p_.minSamples, b.epoch};
  // The incumbent's latest slow-channel evidence is that of the alarming observations: the new state's.
  if (auto it = b.chans.find(inc); it != b.chans.end()) it->second.epoch = b.epoch;
  b.rankedBy.reset();
  b.stage = Stage::Pairs;
  b.phase = Phase::Exploring;
  b.refineProbes = 0;
  b.triedChannels.clear();
  b.retried.clear();
  b.costly = 0;
  b.quick = false;
  b.confirmed = false;
  b.healing = false;
  b.resumed = false;
  b.cut.reset();
  b.witness.reset();
  b.notState = 0;
  b.spentUs = 0;
  b.startDecision = b.incumbent;
  b.startRan = inc;
}

// A slowdown's workaround stays in force after the slowdown ends when it does not feel the end: fewer
// channels that leave a contended NIC out run as fast after the contention as during it, so no alarm
// ever says so (corpus: gen-248 ran 95% slower than NCCL's default for the rest of its run, gen-49 and
// gen-279 about 30%). So the choice the workaround replaced is re-measured now and then, on its own, at
// intervals that double while it keeps losing.
bool CommPolicy::healDue(const Bucket& b, uint64_t index) const {
  return b.heal && b.ran && index >= b.heal->at && *b.ran != b.heal->from && b.queue.empty() && b.pending.empty();
}

void CommPolicy::startHealCheck(Bucket& b, uint64_t index) {
  const double now = b.det.calibrated() ? b.det.baseline() : b.lastObsLog;
  beginEpisode(b, now, now);
  b.changeAt = index;  // no change seen: other sizes' older observations say nothing about this one
  b.quick = true;
  b.quickKnown = false;
  b.confirmed = true;
  b.healing = true;
  b.queue.push_back(toDecision(b.heal->from));
}

// An episode that the budget cut (decide) goes on where it stopped while its epoch's measurements still
// hold: no alarm since (an alarm starts a new epoch) and not long ago. A slow fault makes probes costly and
// the budget short just when the search matters most: in corpus gen-109 a NIC at a tenth of its speed
// slowed a 90 MiB all-reduce ninefold, the budget ran out after the pairs stage, and ring/simple/8 was kept
// for the whole fault where ring/simple/5, found once the search went on, ran 21% faster.
bool CommPolicy::resumeDue(const Bucket& b, uint64_t index) const {
  if (!b.cut || b.cut->epoch != b.epoch || index >= b.cut->until || !b.ran || !b.queue.empty() || !b.pending.empty())
    return false;
  // A search that has found nothing better than the choice before the change goes on once at most: it
  // is most likely a change that does not reorder the choices (a flapping link; in the NVLink-flap example
  // such searches went on and on across the flap's phases and chose on measurements taken in different
  // ones). One that has found better goes on until it ends.
  if (*b.ran == b.cut->from && b.cut->resumes >= 1) return false;
  // The detector restarts at the episode's end and needs a few observations to alarm: until then the
  // incumbent's own latest observation must match what it measured in the episode (a link that flaps
  // would otherwise mix measurements of two states in one search).
  if (b.memory.empty() || b.memory.back().epoch != b.epoch || b.lastObsAt <= b.memory.back().index) return false;
  auto it = b.memory.back().times.find(*b.ran);
  return it != b.memory.back().times.end() && std::fabs(b.lastObsLog - it->second) <= std::log(kSameState);
}

// False, and the cut forgotten, when nothing is left to measure: the pairs it had queued, else the channel
// stage's next counts (the same proposals as in advance's loop).
bool CommPolicy::resumeEpisode(Bucket& b) {
  b.queue = std::move(b.cut->queue);
  b.cut->queue.clear();
  b.stage = b.queue.empty() ? Stage::Channels : Stage::Pairs;
  if (b.queue.empty() && b.refineProbes < kMaxRefine)
    for (const auto& [a, p] : topPairs(b, std::log(1.10)))
      if (queueChannels(b, a, p)) break;
  dropCostly(b);
  if (b.queue.empty()) {
    b.cut.reset();
    return false;
  }
  b.phase = Phase::Exploring;
  b.startDecision = b.incumbent;
  b.startRan = b.ran;
  b.confirmed = false;
  b.witness.reset();
  b.spentUs = 0;
  b.resumed = true;
  ++b.cut->resumes;
  return true;
}

// Pairs stage: one channel count per other (algo, proto) predicted close to the incumbent's time `now`
// (log µs), with the choice in force before and NCCL's own; the channel stage then searches the best pair.
// After a large change (the incumbent 2x slower or faster), an incumbent on fewer channels than its
// algorithm runs has its own pair measured at the full count too, last: fewer channels were best for the
// old state (a slow NIC left out, or simply the healthy optimum), and a new one (contention, which more
// channels share better, or a fault's end) may reverse that, while the channel stage searches only the
// best-measured pair (the demo scenario at seed 2 kept tree/simple/11 through 80 steps of contention where
// tree/simple/16 ran 20% faster, while the budget went to NCCL's NVLS tree at 12-15 channels). Not after a
// smaller change: a link flapping by 25-40% would have it measured in another phase than the incumbent, and
// a 1.6x slowdown that another pair answers would wait one more probe for its switch.
void CommPolicy::queueReprobes(Bucket& b, Choice inc, double now) {
  std::optional<Choice> nccl = b.incumbent.keepsNccl() ? std::nullopt : b.nccl;
  std::set<std::pair<int, int>> pairs{{inc.algo, inc.proto}};
  for (Choice c : reprobeCandidates(b.est, inc, b.beforeLog, now, b.former, nccl, p_.closeFactor, 64)) {
    bool special = (b.former && c == *b.former) || (nccl && c == *nccl);
    if (!special && !pairs.insert({c.algo, c.proto}).second) continue;
    if (static_cast<int>(b.queue.size()) >= p_.maxReprobes) break;
    if (measuredInEpoch(b, c)) continue;
    b.queue.push_back(toDecision(c));
  }
  const Choice full{inc.algo, inc.proto, static_cast<uint8_t>(pairMaxChannels(inc.algo))};
  if (full.nChannels > inc.nChannels && std::fabs(b.alarmShift) >= std::log(kNewState) && !measuredInEpoch(b, full) &&
      std::find(b.queue.begin(), b.queue.end(), toDecision(full)) == b.queue.end())
    b.queue.push_back(toDecision(full));
}

bool CommPolicy::measuredInEpoch(const Bucket& b, Choice c) const {
  auto it = b.est.find(c);
  return it != b.est.end() && it->second.epoch == b.epoch && it->second.n > 0;
}

// A remembered state is recognised by the incumbent's time alone, which a change that the incumbent barely
// feels cannot tell apart (contention under a latency-bound LL choice: in one corpus scenario LL was
// chosen while a NIC was contended and kept "in the same state" after the contention ended, 12% slower than
// NCCL's default for the rest of the run). The re-measured choice is the second witness: when it gained on
// the incumbent by more than kSameRanking since then, the state is a new one and the episode searches in
// full (it may lose ground without that: it is not chosen then, and a flap measured in another phase would
// turn every quick episode into a search).
void CommPolicy::checkWitness(Bucket& b, uint64_t index) {
  if (!b.quick || !b.witness) return;
  auto it = b.est.find(b.witness->first);
  if (it == b.est.end() || it->second.epoch != b.epoch || it->second.n <= 0) return;
  // Relative to the incumbent: a change every choice feels alike leaves the ranking as it was.
  auto inc = b.startRan ? b.est.find(*b.startRan) : b.est.end();
  if (inc == b.est.end() || inc->second.epoch != b.epoch) return;
  const double ratioNow = it->second.logUs - inc->second.logUs, ratioThen = b.witness->second - b.witnessIncLog;
  const bool same = ratioNow >= ratioThen - std::log(kSameRanking);
  b.witness.reset();
  if (same) {
    for (Memory& m : b.memory)
      if (m.index == b.matchedIndex) m.confirmedAt = index;
    return;
  }
  b.quick = false;
  b.confirmed = false;
  b.notState = b.matchedIndex;
  queueReprobes(b, *b.startRan, b.beforeLog + b.alarmShift);
}

// During an episode: a probe that beats the incumbent by far is adopted at once (the search goes on
// around it), so a big slowdown is not paid for during the whole search.
void CommPolicy::provisionalSwitch(Bucket& b, uint64_t index, uint64_t boundary) {
  if (!b.calibrated || !b.ran) return;
  auto best = bestInEpoch(b.est, b.epoch);
  auto inc = b.est.find(*b.ran);
  if (!best || best->first == *b.ran || inc == b.est.end() || inc->second.epoch != b.epoch) return;
  if (best->second.logUs > inc->second.logUs + std::log(kClearWin)) return;
  Decision next = (b.nccl && best->first == *b.nccl) ? Decision{} : toDecision(best->first);
  logev::Adapt ev = adaptFor(b, logev::AdaptKind::Commit);
  ev.provisional = true;
  ev.from = decisionName(b.incumbent);
  ev.to = decisionName(next);
  ev.beforeUs = round1(std::exp(inc->second.logUs));
  ev.afterUs = round1(std::exp(best->second.logUs));
  ev.beforeBusBwGBs = busBw(b, std::exp(inc->second.logUs));
  ev.afterBusBwGBs = busBw(b, std::exp(best->second.logUs));
  ev.links = linkNotes();
  ev.reason = choiceName(best->first) + " measured " +
              percentText((1 - std::exp(best->second.logUs - inc->second.logUs)) * 100) +
              " faster: adopted now, still measuring";
  emit(std::move(ev), index, boundary);
  b.incumbent = next;
  b.ran = best->first;
  b.switchedAt = index;
}

bool CommPolicy::needsConfirmation(Bucket& b) {
  // The best of several short, noisy probes is biased low (the winner's curse): before a switch, the
  // winner is measured once more and judged on both measurements together.
  auto best = bestInEpoch(b.est, b.epoch);
  if (!best || !b.ran || best->first == *b.ran || b.confirmed) return false;
  auto inc = b.est.find(*b.ran);
  const double incLog = inc != b.est.end() && inc->second.epoch == b.epoch ? inc->second.logUs : b.beforeLog;
  if (best->second.logUs >= incLog + std::log(1 - p_.switchGain)) return false;
  b.confirmed = true;
  if (best->second.n >= 2 * p_.minSamples + 2) return false;
  b.queue.push_back(toDecision(best->first));
  return true;
}

void CommPolicy::finishEpisode(Bucket& b, uint64_t index, uint64_t boundary) {
  // After a re-probe episode, the inference again on settled times: the alarm's may straddle the change.
  const std::optional<logev::Cause> cause = b.calibrated ? causeOf(b, index) : std::nullopt;
  b.phase = Phase::Steady;
  b.queue.clear();
  b.pending.clear();
  b.confirmed = false;
  b.accLog = 0, b.accN = 0;
  auto best = bestInEpoch(b.est, b.epoch);
  if (!best || !b.ran) return;
  auto inc = b.est.find(*b.ran);
  const bool incMeasured = inc != b.est.end() && inc->second.epoch == b.epoch;
  const double incLog = incMeasured ? inc->second.logUs : b.beforeLog;
  const bool episode = b.calibrated;
  // Judged against the incumbent now in force (a provisional switch may have replaced the one the
  // episode started with), but named against the one it started with: that is what changed for the job.
  if (best->first != *b.ran && best->second.logUs < incLog + std::log(1 - p_.switchGain)) {
    b.incumbent = (b.nccl && best->first == *b.nccl) ? Decision{} : toDecision(best->first);
    b.ran = best->first;
    b.switchedAt = index;
  }
  const Decision from = b.startDecision;
  const Choice startRan = b.startRan ? *b.startRan : *b.ran;
  using logev::AdaptKind;
  AdaptKind kind = episode ? AdaptKind::Hold : AdaptKind::Calibrated;
  if (episode && *b.ran != startRan) {
    kind = (b.former && *b.ran == *b.former) ? AdaptKind::Recover
           : b.incumbent.keepsNccl()         ? AdaptKind::Revert
                                             : AdaptKind::Commit;
    if (!b.resumed) b.former = startRan;  // a cut episode's going on keeps the choice before the change
  }
  // The heal check (healDue): armed by a slowdown's switch, backed off by a check that kept the workaround,
  // ended by any other switch.
  std::optional<Heal> healBefore = b.heal;
  if (b.healing && kind == AdaptKind::Hold && b.heal) {
    b.heal->gap = std::min(b.heal->gap * 2, kHealMaxGap);
    b.heal->at = index + b.heal->gap;
  } else if (episode && *b.ran != startRan && !b.resumed) {
    if (b.alarmShift > 0 && !b.healing)
      b.heal = Heal{startRan, index + kHealFirstGap, kHealFirstGap, index};
    else
      b.heal.reset();
  }
  // Only an episode that measured other candidates shows it, or one that recognised a state where others
  // were measured: one that measured the incumbent alone (out of budget, every candidate too costly) does not.
  const bool measuredOthers = (b.quick && b.quickKnown) || std::count_if(b.est.begin(), b.est.end(), [&](const auto& e) {
                                return e.second.epoch == b.epoch && e.second.n > 0;
                              }) > 1;
  if (kind == AdaptKind::Hold && measuredOthers && b.alarmShift > 0) {
    b.fruitlessShift = std::max(b.fruitlessShift, b.alarmShift);
    b.fruitlessAt = index;
  } else if (kind != AdaptKind::Hold) {
    b.fruitlessShift = 0;  // a change that mattered: every alarm counts again
  }
  auto startEst = b.est.find(startRan);
  const double startLog = startEst != b.est.end() && startEst->second.epoch == b.epoch ? startEst->second.logUs : incLog;
  double beforeLog = episode ? b.beforeLog : startLog;
  const double afterLog = b.est[*b.ran].logUs;
  if (!b.quick) {
    Memory m{{}, *b.ran, index, 0, b.epoch};
    for (const auto& [c, s] : b.est)
      if (s.epoch == b.epoch && s.n > 0) m.times[c] = s.logUs;
    if (!b.memory.empty() && b.memory.back().epoch == b.epoch) b.memory.pop_back();  // a cut episode, gone on
    b.memory.push_back(std::move(m));
    if (b.memory.size() > kMemory) b.memory.erase(b.memory.begin());
  }
  // The new baseline comes from the next intervals' own observations, not from the probes: a baseline
  // taken from the selected (hence luckiest) probe would make ordinary noise look like a slowdown.
  // A heal check that kept the workaround changed nothing: the detector keeps its baseline, or it would be
  // blind for the few intervals a new one takes, just when the slowdown may end.
  if (!(b.healing && kind == AdaptKind::Hold)) {
    b.det.reset();
    b.chosenLog = afterLog;
  }
  b.calibrated = true;

  std::vector<logev::Candidate> cands;
  std::vector<std::pair<double, Choice>> sorted;
  for (const auto& [c, s] : b.est)
    if (s.epoch == b.epoch && s.n > 0) sorted.push_back({s.logUs, c});
  std::sort(sorted.begin(), sorted.end());
  for (const auto& [l, c] : sorted) cands.push_back({choiceName(c), round1(std::exp(l))});
  logev::Adapt ev = adaptFor(b, kind);
  std::string fromName = decisionName(from);
  const std::string toName = decisionName(b.incumbent);
  std::string reason;
  double gain = (1 - std::exp(afterLog - startLog)) * 100;
  if (kind == AdaptKind::Calibrated)
    reason = from == b.incumbent ? "calibration measured " + std::to_string(sorted.size()) +
                                       " candidates; NCCL's own choice is best"
                                 : "calibration measured " + std::to_string(sorted.size()) + " candidates; " +
                                       choiceName(*b.ran) + " is " + percentText(gain) + " faster than NCCL's " +
                                       (b.nccl ? choiceName(*b.nccl) : std::string("choice"));
  else if (kind == AdaptKind::Hold && b.healing && healBefore)
    reason = "re-measured " + choiceName(healBefore->from) + ", in force before the slowdown of verdict " +
             std::to_string(healBefore->since) + ": still slower, kept; next look in " +
             std::to_string(b.heal->gap) + " verdicts";
  else if (kind == AdaptKind::Hold && b.quick)
    reason = "the same state as at verdict " + std::to_string(b.matchedIndex) + ", where " + choiceName(*b.ran) +
             (sorted.size() > 1 ? " won; re-measured, it still does: kept" : " won: kept without probing");
  else if (kind == AdaptKind::Hold)
    reason = "re-measured " + std::to_string(sorted.size()) + " candidates; none beats the incumbent by " +
             percentText(p_.switchGain * 100) + ": kept";
  else
    reason = choiceName(*b.ran) + " measured " + percentText(gain) + " faster than " + fromName + " after the change";
  // Why this channel count: the slow channels that ranked the channel probes.
  if (b.rankedBy && *b.ran != startRan && b.ran->nChannels != b.rankedBy->channels &&
      b.ran->nChannels <= b.rankedBy->channels)
    reason += "; " + explainChannels(*b.rankedBy, b.ran->nChannels);
  if (b.costly > 0) {
    char cap[16];
    std::snprintf(cap, sizeof cap, "%.1fx", kMaxProbeCost);
    reason += "; " + std::to_string(b.costly) + (b.costly == 1 ? " candidate" : " candidates") +
              " predicted over " + cap + " the incumbent's time left unmeasured";
  }
  if (b.healing && kind != AdaptKind::Hold && healBefore)
    reason += "; the slowdown of verdict " + std::to_string(healBefore->since) + " has ended";
  b.healing = false;
  b.resumed = false;
  if (b.notState > 0)
    reason += "; not the state of verdict " + std::to_string(b.notState) + " after all: its re-measured choice disagreed";
  if (cause) reason += "; " + cause->text;
  b.rankedBy.reset();
  ev.from = fromName;
  ev.to = toName;
  ev.beforeUs = round1(std::exp(beforeLog));
  ev.afterUs = round1(std::exp(afterLog));
  ev.beforeBusBwGBs = busBw(b, std::exp(beforeLog));
  ev.afterBusBwGBs = busBw(b, std::exp(afterLog));
  ev.candidates = std::move(cands);
  ev.exploredUs = round1(b.spentUs);
  ev.links = linkNotes();
  ev.reason = reason;
  if (b.nccl) ev.fromNccl = choiceName(*b.nccl);
  ev.cause = cause;
  if (episode) ev.detector = detectorOf(b);
  b.shift = Shift::None;
  b.spentUs = 0;
  emit(std::move(ev), index, boundary);
}

// State transitions for verdict `index`; true when the bucket has a probe to run now.
bool CommPolicy::advance(Bucket& b, uint64_t index, uint64_t boundary) {
  switch (b.phase) {
    case Phase::Ignored:
      return false;
    case Phase::Waiting: {
      ++b.waitedIntervals;
      if (!b.sight || !b.nccl || totalUs_ <= 0) return false;
      double share = b.timeUs / totalUs_;
      if (share < kMinShare) {
        if (b.waitedIntervals >= 4) b.phase = Phase::Ignored;
        return false;
      }
      for (const Decision& d : pairCandidates(*b.sight, p_.pruneFactor, *b.nccl)) b.queue.push_back(d);
      b.ran = b.nccl;
      b.startDecision = b.incumbent;
      b.startRan = b.nccl;
      b.rankedBy.reset();
      b.costly = 0;
      b.stage = Stage::Pairs;
      b.phase = Phase::Exploring;
      break;
    }
    case Phase::Steady:
      if (b.shift == Shift::None) {
        if (resumeDue(b, index)) {
          // Twice a probe's cost at the incumbent's time: a search that goes on for one probe only would
          // be cut again at once.
          if (!budgetAllows(2 * probeCostUs(b, b.incumbent, probeLength(b, 0))) || !resumeEpisode(b)) return false;
          break;
        }
        if (!healDue(b, index) || !budgetAllows(probeCostUs(b, toDecision(b.heal->from), probeLength(b, 0))))
          return false;
        startHealCheck(b, index);
        break;
      }
      b.cut.reset();  // a new state: what the cut episode measured no longer holds
      // Token bucket: episodes earn exploration time at exploreShare of the measured time, with a credit of
      // one episode's worth so that an early fault is not left alone (calibration draws on the same budget).
      // Deferred when the budget cannot pay for even one probe at the incumbent's time on the shortest
      // probe interval: an episode started then could measure nothing.
      if (!budgetAllows(probeCostUs(b, b.incumbent, probeLength(b, 0)))) {
        // Over budget: keep the incumbent; the detector keeps watching. Said once per budget shortage.
        if (!b.deferred) {
          b.deferred = true;
          logev::Adapt ev = adaptFor(b, logev::AdaptKind::Deferred);
          ev.from = ev.to = decisionName(b.incumbent);
          ev.beforeUs = round1(std::exp(b.det.baseline()));
          ev.afterUs = round1(std::exp(b.lastObsLog));
          ev.links = linkNotes();
          ev.reason = "a change was detected but the exploration budget is spent (" +
                      std::to_string(static_cast<long long>(exploredUs_)) + " µs explored, " +
                      percentText(p_.exploreShare * 100) + " of the comm's time allowed); kept";
          emit(std::move(ev), index, boundary);
        }
        b.shift = Shift::None;
        return false;
      }
      b.deferred = false;
      startEpisode(b, index, boundary);
      break;
    case Phase::Exploring:
      break;
  }
  // Probes that never came back (the bucket had no collective in their interval): retry once.
  for (auto it = b.pending.begin(); it != b.pending.end();) {
    if (index < it->issuedAt + kProbeTimeout) {
      ++it;
      continue;
    }
    // A bounded number of times: a probe whose intervals keep holding none of its collectives (a size that
    // comes a few times per second, or not at all any more) would otherwise be issued for ever and the
    // episode never end.
    ++b.misses;
    if (std::count(b.retried.begin(), b.retried.end(), it->d) < kProbeRetries) {
      b.retried.push_back(it->d);
      b.queue.push_front(it->d);
    }
    reservedUs_ = std::max(0.0, reservedUs_ - it->reservedUs);
    it = b.pending.erase(it);
  }
  checkWitness(b, index);
  provisionalSwitch(b, index, boundary);
  dropCostly(b);
  // Nothing queued or in flight: the channel stage, then confirmation, then the end of the episode. Counts
  // left out as too costly count as tried, so each round proposes others; a few rounds at most.
  for (int round = 0; b.queue.empty() && b.pending.empty(); ++round) {
    auto best = bestInEpoch(b.est, b.epoch);
    if (round < kCostlyRounds && best && !b.quick && b.refineProbes < kMaxRefine) {
      b.stage = Stage::Channels;
      // The best pair's channel counts, then the runner-up pair's if it is within 10% (its best channel
      // count may not have been measured yet: a pair is first measured at one count only).
      bool queued = false;
      for (const auto& [a, p] : topPairs(b, std::log(1.10)))
        if ((queued = queueChannels(b, a, p))) break;
      dropCostly(b);
      if (queued) continue;
    }
    if (needsConfirmation(b)) {
      dropCostly(b);
      if (!b.queue.empty()) break;
    }
    finishEpisode(b, index, boundary);
    return false;
  }
  return !b.queue.empty() && affordable(b, b.queue.front()) && static_cast<int>(b.pending.size()) < kMaxOutstanding;
}

// The channel stage for one pair; true when it queued probes. With slow-channel evidence for the pair in
// this epoch (at the comm's channel count), the counts the topology-aware model predicts to beat the best
// measurement come first, and the grid/bracket search that follows skips counts predicted worse than
// closeFactor x the best. Without evidence (real NCCL's KernelCh times may be coarse) it is the
// grid/bracket search alone.
bool CommPolicy::queueChannels(Bucket& b, int8_t algo, int8_t proto) {
  std::set<int>& tried = b.triedChannels[{algo, proto}];
  const int maxChannels = pairMaxChannels(algo);
  double evLog = 0;
  const ChannelEvidence* ev = channelEvidence(b, algo, proto, maxChannels, &evLog);
  auto best = bestInEpoch(b.est, b.epoch);
  if (ev == nullptr || !best) {
    for (int c : channelCandidates(b.est, b.epoch, algo, proto, maxChannels, tried))
      b.queue.push_back({algo, proto, static_cast<int8_t>(c)});
    return !b.queue.empty();
  }
  std::set<int> known = tried;
  for (const auto& [c, s] : b.est)
    if (c.algo == algo && c.proto == proto && s.epoch == b.epoch && s.n > 0) known.insert(c.nChannels);
  for (int c : rankChannelCounts(*ev, evLog, best->second.logUs + std::log(1 - p_.switchGain), maxChannels, known,
                                 kMaxOutstanding))
    b.queue.push_back({algo, proto, static_cast<int8_t>(c)});
  if (!b.queue.empty()) {
    b.rankedBy = *ev;
    return true;
  }
  const double limit = best->second.logUs + std::log(p_.closeFactor);
  for (;;) {
    std::vector<int> next = channelCandidates(b.est, b.epoch, algo, proto, maxChannels, known);
    if (next.empty()) return false;
    for (int c : next) {
      known.insert(c);
      if (c > ev->channels || evLog + std::log(predictChannelFactor(*ev, c)) <= limit)
        b.queue.push_back({algo, proto, static_cast<int8_t>(c)});
    }
    if (!b.queue.empty()) return true;
  }
}

// NCCL clamps a count above what the algorithm can run (NVLS runs at most its NVLS channels, fewer than
// the ring's): a probe above it would run, and be measured as, the clamped count. The most NCCL itself ran
// the algorithm with is the channel search's ceiling.
int CommPolicy::pairMaxChannels(int8_t algo) const {
  return algo >= 0 && algo < kNumAlgos && algoChannels_[algo] > 0 ? algoChannels_[algo] : maxChannels_;
}

// Only evidence measured at the comm's full channel count: that is where a slow NIC shows against its
// healthy peers. At other counts an uneven spread of channels over the NICs (5 channels on 4 NICs put two
// on NIC 0) shows too, and is already what the measured times say.
const ChannelEvidence* CommPolicy::channelEvidence(const Bucket& b, int8_t algo, int8_t proto, int maxChannels,
                                                   double* measuredLog) const {
  const ChannelEvidence* ev = nullptr;
  for (const auto& [c, e] : b.chans) {
    auto est = b.est.find(c);
    if (c.algo != algo || c.proto != proto || e.epoch != b.epoch || e.channels != maxChannels ||
        est == b.est.end() || est->second.epoch != b.epoch || est->second.n == 0)
      continue;
    ev = &e, *measuredLog = est->second.logUs;
  }
  return ev;
}

std::vector<std::pair<int8_t, int8_t>> CommPolicy::topPairs(const Bucket& b, double within) const {
  std::map<std::pair<int8_t, int8_t>, double> best;
  for (const auto& [c, s] : b.est) {
    if (s.epoch != b.epoch || s.n == 0) continue;
    auto [it, fresh] = best.try_emplace({c.algo, c.proto}, s.logUs);
    if (!fresh) it->second = std::min(it->second, s.logUs);
  }
  std::vector<std::pair<double, std::pair<int8_t, int8_t>>> v;
  for (const auto& [k, l] : best) v.push_back({l, k});
  std::sort(v.begin(), v.end());
  std::vector<std::pair<int8_t, int8_t>> out;
  for (size_t i = 0; i < v.size() && i < 2; ++i)
    if (i == 0 || v[i].first <= v[0].first + within) out.push_back(v[i].second);
  return out;
}

double CommPolicy::meanCollUs() const {
  return totalColls_ > 0 ? totalUs_ / static_cast<double>(totalColls_) : 0;
}

double CommPolicy::allowanceUs() const {
  // The credit's unit is the comm's mean collective time: what one collective of its traffic costs.
  return p_.exploreShare * totalUs_ + kBurstCollectives * meanCollUs();
}

bool CommPolicy::budgetAllows(double moreUs) const {
  return exploredUs_ + reservedUs_ + moreUs <= allowanceUs();
}

std::map<int, double> CommPolicy::pairTimes(const Bucket& b, const Decision& d) const {
  std::map<int, double> pts;
  if (!b.ran) return pts;
  const int8_t algo = d.algo == kAny ? b.ran->algo : d.algo, proto = d.proto == kAny ? b.ran->proto : d.proto;
  for (const auto& [c, e] : b.est)
    if (c.algo == algo && c.proto == proto && e.epoch == b.epoch && e.n > 0) pts[c.nChannels] = std::exp(e.logUs);
  return pts;
}

double CommPolicy::incumbentUs(const Bucket& b) const {
  if (b.ran)
    if (auto it = b.est.find(*b.ran); it != b.est.end() && it->second.epoch == b.epoch && it->second.n > 0)
      return std::exp(it->second.logUs);
  if (b.det.calibrated()) return std::exp(b.det.baseline());
  return b.colls > 0 ? b.timeUs / static_cast<double>(b.colls) : 0;
}

// A candidate's time per collective, from what is known, best first: its own measurement in this epoch;
// else its pair's measurements at other channel counts, moved along time = a + b/channels (fitted on two
// counts; on one, all bandwidth: the pessimistic side); else the incumbent's time scaled by NCCL's own cost
// ratio between the two pairs (NCCL's model is the only prior for a pair never measured here).
double CommPolicy::predictUs(const Bucket& b, const Decision& d) const {
  const double inc = incumbentUs(b);
  if (!b.ran || inc <= 0) return inc;
  const Choice ran = *b.ran;
  const int8_t algo = d.algo == kAny ? ran.algo : d.algo, proto = d.proto == kAny ? ran.proto : d.proto;
  std::map<int, double> pts = pairTimes(b, d);
  const int want = d.nChannels > 0 ? d.nChannels : (pts.empty() ? ran.nChannels : pts.rbegin()->first);
  if (auto it = pts.find(want); it != pts.end()) return it->second;
  // Fewer channels than a measurement that named slow ones: the topology-aware model, which knows that
  // leaving a slow NIC's channels out can make fewer channels faster (a + b/c cannot).
  double evLog = 0;
  if (const ChannelEvidence* ev = channelEvidence(b, algo, proto, pairMaxChannels(algo), &evLog);
      ev != nullptr && want < ev->channels)
    return std::exp(evLog) * predictChannelFactor(*ev, want);
  if (pts.empty()) {
    double ratio = 1.0;
    if (b.sight && (algo != ran.algo || proto != ran.proto)) {
      const float to = b.sight->cost[algo][proto], from = b.sight->cost[ran.algo][ran.proto];
      if (to > 0 && from > 0 && to < CostTableView::kExcluded && from < CostTableView::kExcluded) ratio = to / from;
    }
    pts[ran.nChannels] = inc * ratio;
  }
  if (want <= 0) return pts.rbegin()->second;
  // The two measured counts around `want`, or the two nearest it on one side (or the one there is).
  auto hi = pts.lower_bound(want);
  if (hi == pts.begin() && pts.size() > 1) ++hi;
  if (hi == pts.end()) --hi;
  auto lo = hi == pts.begin() ? hi : std::prev(hi);
  const double c0 = std::max(1, lo->first), t0 = lo->second;
  if (lo == hi) return want < c0 ? t0 * c0 / want : t0;  // more channels: no faster assumed, and no slower
  const double c1 = std::max(1, hi->first), t1 = hi->second;
  const double slope = (t0 - t1) / (1 / c0 - 1 / c1);  // b in a + b/c; <= 0: channels do not help
  if (!(slope > 0)) return std::max(t0, t1);
  const double a = t1 - slope / c1;
  return std::max(a + slope / want, 0.0);
}

double CommPolicy::probeCostUs(const Bucket& b, const Decision& d, uint64_t len) const {
  return std::max(1.0, collShare(b) * static_cast<double>(len)) * predictUs(b, d);
}

bool CommPolicy::affordable(const Bucket& b, const Decision& d) const {
  const double inc = incumbentUs(b);
  if (inc <= 0 || !b.ran) return true;
  // A pair never measured in this epoch has only NCCL's model behind its prediction, and NCCL's model is
  // what the search is there to correct (a pair it predicts 1.6x slower may be 25% faster): those are
  // bounded by the prune factor instead, at calibration and by the common-mode prediction at an episode.
  return pairTimes(b, d).empty() || predictUs(b, d) <= kMaxProbeCost * inc;
}

void CommPolicy::dropCostly(Bucket& b) {
  // Candidates predicted too slow wait behind the others until those are measured (a count that looks
  // costly from one point may not from two); once nothing else is queued or in flight, those still too
  // slow go.
  std::stable_partition(b.queue.begin(), b.queue.end(), [&](const Decision& d) { return affordable(b, d); });
  if (!b.pending.empty() || (!b.queue.empty() && affordable(b, b.queue.front()))) return;
  for (auto it = b.queue.begin(); it != b.queue.end();) {
    if (affordable(b, *it)) {
      ++it;
      continue;
    }
    if (b.stage == Stage::Channels) b.triedChannels[{it->algo, it->proto}].insert(it->nChannels);
    ++b.costly;
    it = b.queue.erase(it);
  }
}

Decision CommPolicy::issueProbe(Bucket& b, uint64_t index, uint64_t len) {
  Decision d = b.queue.front();
  b.queue.pop_front();
  const double cost = probeCostUs(b, d, len);
  reservedUs_ += cost;
  b.pending.push_back({d, index, cost});
  if (b.stage == Stage::Channels) {
    b.triedChannels[{d.algo, d.proto}].insert(d.nChannels);
    ++b.refineProbes;
  }
  return d;
}

PolicyStep CommPolicy::decide(uint64_t index, uint64_t boundary, uint64_t spacing,
                              std::span<const MemberEvidence> evidence) {
  ingest(evidence, index);
  PolicyStep out;
  uint64_t normal = p_.spacing > 0 ? p_.spacing : spacing;
  // Which buckets probe in this interval: the one with the largest share of time that wants to, and every
  // other that needs no longer an interval. A rare size needs a long interval to be seen at all; mixing it
  // with a frequent size would turn all of the frequent size's collectives in that interval into probes.
  std::vector<Bucket*> want;
  for (auto& [key, b] : buckets_)
    if (advance(b, index, boundary)) want.push_back(&b);
  std::stable_sort(want.begin(), want.end(), [](const Bucket* x, const Bucket* y) { return x->timeUs > y->timeUs; });
  uint64_t probeLen = want.empty() ? 0 : probeLength(*want.front(), normal);
  std::set<const Bucket*> probing;
  for (Bucket* b : want) {
    if (probeLength(*b, normal) > probeLen) continue;
    // Every probe is checked against the budget at its predicted cost on this interval. Out of budget, a
    // calibration waits for the budget to grow (NCCL's choice runs meanwhile: it costs nothing to wait), and
    // an episode decides on what it has measured (a fault does not wait) and goes on later (resumeDue).
    if (budgetAllows(probeCostUs(*b, b->queue.front(), probeLen))) {
      probing.insert(b);
      continue;
    }
    if (!b->calibrated) continue;
    if (!b->quick && !b->healing && b->startRan) {
      if (!b->cut || b->cut->epoch != b->epoch) b->cut = Cut{b->epoch, index + kResumeWithin, *b->startRan, {}, 0};
      b->cut->queue = std::move(b->queue);
    }
    b->queue.clear();
    if (b->pending.empty()) finishEpisode(*b, index, boundary);
  }
  for (auto& [key, b] : buckets_) {
    Decision d = b.incumbent;
    if (probing.count(&b)) {
      d = issueProbe(b, index, probeLen);
      out.probes.push_back({ruleFor(b.coll, b.bucket, d)});
    }
    if (!d.keepsNccl()) out.rules.push_back(ruleFor(b.coll, b.bucket, d));
  }
  out.spacing = out.probes.empty() ? normal : probeLen;
  out.reason = out.probes.empty() ? "adaptive" : "adaptive: " + std::to_string(out.probes.size()) + " probe(s)";
  if (out.rules != lastRules_ || !out.probes.empty()) {
    auto table = DecisionTable::build(out.rules, out.reason);
    char digest[24];
    std::snprintf(digest, sizeof digest, "%016" PRIx64, table->digest());
    logev::CoordinatorTable ev;
    for (const ProbeRange& p : out.probes) ev.probes.push_back(logRange(p.rule));
    ev.next = boundary + out.spacing;
    ev.probe = !out.probes.empty();
    ev.reason = out.reason;
    ev.digest = digest;
    ev.exploredUs = round1(exploredUs_);
    ev.measuredUs = round1(totalUs_);
    ev.ranges = logRanges(table->ranges());
    emit(std::move(ev), index, boundary);
    lastRules_ = out.rules;
  }
  return out;
}

std::vector<CommPolicy::BucketView> CommPolicy::buckets() const {
  std::vector<BucketView> out;
  for (const auto& [k, b] : buckets_)
    out.push_back({b.coll, b.bucket, b.incumbent, b.phase == Phase::Exploring, b.calibrated, b.epoch});
  return out;
}

}  // namespace wirewise::adapt
