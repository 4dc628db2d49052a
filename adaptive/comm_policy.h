// The adaptive policy for one communicator (docs/policy.md): from the members' evidence at each boundary,
// the table of the next verdict. Runs in the coordinator only, so every rank follows its one decision.
// Pure and deterministic: no clock, no I/O; log events go to an injected function.
//
// Per (collective, size bucket) worth tuning:
//   Waiting   -> until NCCL's cost table (a Sight) and NCCL's own choice (a sample) are known;
//   Exploring -> calibration (first time) or a re-probe episode (after a detected change): pairs stage,
//                then channel stage, each probe on a short interval of its own; then commit or hold;
//   Steady    -> the incumbent is watched by a CUSUM detector; an alarm starts an episode, within the
//                exploration budget.
#pragma once

#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <optional>
#include <set>
#include <span>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "adaptive/cause.h"
#include "adaptive/decision_table.h"
#include "adaptive/detector.h"
#include "adaptive/evidence.h"
#include "adaptive/planner.h"
#include "adaptive/policy_params.h"
#include "common/log_events.h"

namespace wirewise::adapt {

using EventFn = std::function<void(nlohmann::json)>;

struct ProbeRange {
  TableRule rule;  // the probed bucket and the candidate it runs
};

struct PolicyStep {
  std::vector<TableRule> rules;
  std::vector<ProbeRange> probes;
  uint64_t spacing = 0;
  std::string reason;
};

class CommPolicy {
 public:
  CommPolicy(uint64_t commId, uint32_t nRanks, uint32_t nNodes, PolicyParams params, EventFn emit = nullptr);

  // Verdict `index`, starting at collective `boundary`; `spacing` is what the agreement would use.
  // `evidence`: the members' reports at the previous boundary.
  PolicyStep decide(uint64_t index, uint64_t boundary, uint64_t spacing, std::span<const MemberEvidence> evidence);

  // Figures for tests, the log and the docs.
  double exploredUs() const { return exploredUs_; }
  double measuredUs() const { return totalUs_; }
  uint64_t mixedChoices() const { return mixed_; }
  struct BucketView {
    int coll, bucket;
    Decision incumbent;
    bool exploring, calibrated;
    uint64_t epoch;
  };
  std::vector<BucketView> buckets() const;

 private:
  enum class Phase : uint8_t { Waiting, Exploring, Steady, Ignored };
  enum class Stage : uint8_t { Pairs, Channels };
  struct Pending {
    Decision d;
    uint64_t issuedAt = 0;
    double reservedUs = 0;  // its predicted cost, held against the budget until its measurement comes back
  };
  // A finished episode: what every candidate measured, and what won.
  struct Memory {
    std::map<Choice, double> times;
    Choice best;
    uint64_t index = 0;
    uint64_t confirmedAt = 0;  // the verdict a second witness last confirmed this state at (0: never)
    uint64_t epoch = 0;
  };
  // The choice a slowdown's switch replaced, re-measured from verdict `at` on (healDue); `since`: the
  // episode that switched.
  struct Heal {
    Choice from;
    uint64_t at = 0, gap = 0, since = 0;
  };
  // An episode the budget ended before its search did (its winner so far is in force): it goes on, in
  // the same epoch, once the budget has grown back, unless the state changes first or `until` passes.
  struct Cut {
    uint64_t epoch = 0, until = 0;
    Choice from;                 // what ran when the episode began
    std::deque<Decision> queue;  // its candidates left unmeasured
    int resumes = 0;             // times it went on
  };
  struct Bucket {
    int coll = -1, bucket = 0;
    std::optional<Sight> sight;
    std::optional<Choice> nccl;  // what NCCL runs when the table keeps its choice
    Decision incumbent;          // in the table; keepsNccl(): NCCL's own
    std::optional<Choice> ran;   // what the incumbent runs
    Phase phase = Phase::Waiting;
    Stage stage = Stage::Pairs;
    std::deque<Decision> queue;
    std::vector<Pending> pending;
    std::vector<Decision> retried;  // probes of this episode re-issued, once per retry (kProbeRetries at most)
    int misses = 0;                 // probes in a row whose interval held none of the bucket's collectives
    std::map<std::pair<int, int>, std::set<int>> triedChannels;  // per (algo, proto), this episode
    int refineProbes = 0;
    int costly = 0;  // candidates of this episode left out as predicted too slow to probe
    uint64_t epoch = 0;
    Estimates est;
    // Per choice, the slow-channel evidence of its latest interval with enough collectives; the channel
    // stage ranks channel counts with it (planner.h: rankChannelCounts).
    std::map<Choice, ChannelEvidence> chans;
    std::optional<ChannelEvidence> rankedBy;  // the evidence that ranked this episode's channel probes
    ChangeDetector det;
    // What the winner measured when an episode (or calibration) chose it (log µs). The detector's baseline
    // comes from the incumbent's own observations that follow; the first of them is also held against this,
    // so that a change that came between the measurement and the switch is not taken as normal.
    std::optional<double> chosenLog;
    std::optional<Choice> former;
    double accLog = 0;
    int accN = 0;
    double lastObsLog = 0;  // the latest detector observation (log µs): the incumbent's time at an alarm
    uint64_t accFrom = 0;    // the verdict the collectives behind accLog began at
    uint64_t lastObsAt = 0;  // the verdict the latest observation was made at (cause.h: only fresh ones compare)
    uint64_t lastObsFrom = 0;  // and the verdict its first collective came at
    // The observation at which the detector's current evidence for a slowdown (a speed-up) began, and the
    // pending alarm's: where its change began, as far as the detector can tell (causeOf compares only
    // other sizes' observations made after it).
    uint64_t slowerSince = 0, fasterSince = 0, changeAt = 0;
    bool calibrated = false;
    uint64_t suspectUntil = 0;  // a new unhealthy link: alarm on any clear deviation before this verdict
    bool suspected = false;     // the pending alarm came from that suspicion
    bool deferred = false;   // an alarm was not acted on for lack of exploration budget
    bool confirmed = false;  // the episode's winner was measured a second time
    bool quick = false;      // this episode re-measures a remembered winner only
    bool quickKnown = false; // and that remembered episode measured other candidates too
    uint64_t matchedIndex = 0;
    // In a quick episode: the remembered choice re-measured and its remembered time (log µs), the second
    // witness of the state (checkWitness); notState: the verdict whose state it turned out not to be.
    std::optional<std::pair<Choice, double>> witness;
    double witnessIncLog = 0;  // and what the incumbent measured in that episode
    uint64_t notState = 0;
    std::optional<Heal> heal;
    bool healing = false;  // this episode is a heal check
    std::optional<Cut> cut;
    bool resumed = false;  // this episode is a cut one going on
    Decision startDecision;            // the incumbent when the episode (or calibration) began
    std::optional<Choice> startRan;    // and what it ran
    std::vector<Memory> memory;       // finished episodes, newest last
    double timeUs = 0, bytesSum = 0;
    double spentUs = 0;       // probe time of the current calibration or episode
    uint64_t switchedAt = 0;  // verdict from which the incumbent is in force
    uint64_t colls = 0;
    int waitedIntervals = 0;
    double beforeLog = 0;  // incumbent's time before the episode
    double alarmShift = 0;  // log(now / before) of the incumbent at the episode's alarm
    // The largest slowdown (log) whose episode measured other candidates and found none better than the
    // incumbent, and the verdict it was last relevant at. A slowdown of that size has been shown not to
    // change the best choice (a link that flaps faster than the loop), so slowdowns no larger are not acted
    // on again for a while. Speed-ups always are: they are how a choice made in a degraded state is undone.
    double fruitlessShift = 0;
    uint64_t fruitlessAt = 0;
    Shift shift = Shift::None;
    double alarmStat = 0;
  };

  Bucket& bucketOf(int coll, int bucket);
  void ingest(std::span<const MemberEvidence> evidence, uint64_t index);
  bool advance(Bucket& b, uint64_t index, uint64_t boundary);
  Decision issueProbe(Bucket& b, uint64_t index, uint64_t len);
  void startEpisode(Bucket& b, uint64_t index, uint64_t boundary);
  void beginEpisode(Bucket& b, double before, double now);
  bool healDue(const Bucket& b, uint64_t index) const;
  void startHealCheck(Bucket& b, uint64_t index);
  bool resumeDue(const Bucket& b, uint64_t index) const;
  bool resumeEpisode(Bucket& b);
  void queueReprobes(Bucket& b, Choice inc, double now);
  bool measuredInEpoch(const Bucket& b, Choice c) const;
  void checkWitness(Bucket& b, uint64_t index);
  void finishEpisode(Bucket& b, uint64_t index, uint64_t boundary);
  bool needsConfirmation(Bucket& b);
  void provisionalSwitch(Bucket& b, uint64_t index, uint64_t boundary);
  // The budget (docs/policy.md §3): measured probe time plus what the probes in flight are predicted to
  // cost, never above exploreShare of the comm's measured time plus a small credit.
  bool budgetAllows(double moreUs) const;
  double meanCollUs() const;  // the comm's mean collective time so far (0 before any)
  double allowanceUs() const;
  // The incumbent's time per collective (µs), and a candidate's predicted time per collective.
  double incumbentUs(const Bucket& b) const;
  // Channel count -> µs measured in this epoch for d's (algo, proto) (kAny: the incumbent's).
  std::map<int, double> pairTimes(const Bucket& b, const Decision& d) const;
  // The bucket's share of the comm's collectives (1 before any is counted).
  double collShare(const Bucket& b) const;
  double predictUs(const Bucket& b, const Decision& d) const;
  // The slow-channel evidence of (algo, proto) in this epoch at maxChannels (the most NCCL ran the algorithm
  // with), with the log time it was measured at; null without any.
  const ChannelEvidence* channelEvidence(const Bucket& b, int8_t algo, int8_t proto, int maxChannels,
                                         double* measuredLog) const;
  int pairMaxChannels(int8_t algo) const;
  // Predicted cost of a probe of d on an interval of `len` collectives of the comm.
  double probeCostUs(const Bucket& b, const Decision& d, uint64_t len) const;
  // Probes predicted to run more than kMaxProbeCost x the incumbent's time wait until nothing is in flight,
  // then are left out.
  bool affordable(const Bucket& b, const Decision& d) const;
  void dropCostly(Bucket& b);
  std::vector<std::pair<int8_t, int8_t>> topPairs(const Bucket& b, double within) const;
  bool queueChannels(Bucket& b, int8_t algo, int8_t proto);
  bool matchesPending(const Bucket& b, Choice c) const;
  uint64_t probeLength(const Bucket& b, uint64_t spacing) const;
  // The shortest probe interval: probeSpacing, or fewer collectives when they are slow (kShortProbeUs).
  uint64_t shortestProbe() const;
  // Events are built as typed structs (common/log_events.h); they become JSON only here, on their way out.
  void emit(logev::Adapt ev, uint64_t index, uint64_t boundary) const;
  void emit(logev::CoordinatorTable ev, uint64_t index, uint64_t boundary) const;
  logev::Adapt adaptFor(const Bucket& b, logev::AdaptKind kind) const;  // the bucket's range and the kind
  logev::Detector detectorOf(const Bucket& b) const;
  std::vector<std::string> linkNotes() const;
  // The latency-or-bandwidth inference (cause.h) over the buckets of `alarming`'s collective, at its alarm or
  // the end of its episode; none without attribution.
  std::optional<logev::Cause> causeOf(const Bucket& alarming, uint64_t index) const;
  double busBw(const Bucket& b, double us) const;

  uint64_t commId_;
  uint32_t nRanks_, nNodes_;
  PolicyParams p_;
  EventFn emit_;
  std::map<std::pair<int, int>, Bucket> buckets_;
  double totalUs_ = 0, exploredUs_ = 0, reservedUs_ = 0;
  uint64_t totalColls_ = 0, mixed_ = 0;
  int maxChannels_ = 0;
  int algoChannels_[kNumAlgos] = {};  // per algorithm, the most channels it has run with (NCCL's own count)
  std::vector<TableRule> lastRules_;
  std::map<std::string, LinkNote> links_;  // unhealthy links in the latest reports
};

}  // namespace wirewise::adapt
