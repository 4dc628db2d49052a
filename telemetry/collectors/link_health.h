// The link health model: one record per link, merged from every collector, plus a compact fixed-size
// summary for the coordinator's boundary reports and a JSON form for the adaptation log (`link_health`
// event, schema in docs/telemetry.md). Units: bytes/s for bandwidths, microseconds for RTTs, events/s
// for error and congestion rates; times are steady-clock nanoseconds (the clock the sampler injects).
#pragma once

#include <cstdint>
#include <deque>
#include <map>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "common/log_events.h"

namespace wirewise::collectors {

enum class LinkKind : uint8_t { kInfiniBand, kRoce, kNetdev, kTcp, kNvlink, kPcie, kRail };
const char* linkKindName(LinkKind k);  // "ib", "roce", "netdev", "tcp", "nvlink", "pcie", "rail"

enum class LinkState : uint8_t { kUp, kDegraded, kDown };
const char* linkStateName(LinkState s);  // "up", "degraded", "down"

struct LinkHealth {
  LinkKind kind = LinkKind::kNetdev;
  std::string id;             // "mlx5_0:1", "eth0", "tcp:<label>", "gpu0:nvlink3", "gpu0:pcie", "rail:eth1"
  bool present = true;        // false once the device vanished (kept so the log shows the loss)
  bool up = false;            // port/link state says active
  double nominalBps = 0;      // from rate/speed/NVLink speed; 0 = unknown
  double bestNominalBps = 0;  // highest nominalBps seen for this link (a drop means a downtrained link)
  double txBps = 0, rxBps = 0;  // measured throughput, smoothed; valid only if rateValid
  bool rateValid = false;
  double errorsPerSec = 0;      // link/physical errors (IB error counters, netdev errors, NVLink CRC/replay/recovery)
  double congestionPerSec = 0;  // congestion evidence in congestionUnit (0 when none seen)
  const char* congestionUnit = "";  // "xmit_wait_ticks/s", "cnp/s", "drops/s", "retrans_segs/s", ""
  bool congested = false;       // the collector judged the congestion evidence significant (see docs)
  double lossPerSec = 0;        // transport-level loss/retry evidence (RoCE retransmission counters)
  // TCP only (0 elsewhere): smoothed RTT, its variance and windowed minimum, and the kernel's most
  // recent non-app-limited delivery rate.
  double rttUs = 0, rttVarUs = 0, minRttUs = 0, deliveryBps = 0;
  uint32_t counterAnomalies = 0;  // counter wraps + resets + vanished reads seen so far
  // Rails of the net plugin only (RailTracker): the RTT baseline (rttUs is the latest busy pass's RTT,
  // deliveryBps the summed measured rates), the mean share of new chunks over the open connections, the
  // rate over the peers' median (1 when not slower), the connections that use it, and why it is not up.
  double baselineRttUs = 0, share = 0, rateRatio = 1;
  int connections = 0;
  std::string reason;
  LinkState state = LinkState::kDown;
  int64_t lastChangeNs = 0;       // sampler time when state last changed (a capacity drop is "degraded")
};

struct SourceStatus {
  std::string name;    // "ib", "netdev", "tcp", "nvml", "cupti"
  bool available = false;
  std::string reason;  // why not available, or a short description when it is
};

struct LinkHealthSnapshot {
  int64_t timeNs = 0;  // sampler time of the pass that produced it
  uint64_t passes = 0;
  std::vector<LinkHealth> links;
  std::vector<SourceStatus> sources;
};

// Fixed-size digest that fits in a boundary report (no strings, no allocation to copy).
struct LinkHealthSummary {
  int64_t timeNs = 0;
  uint16_t links = 0, up = 0, degraded = 0, down = 0;
  float worstUtilization = 0;     // max over links with known nominal capacity of max(tx,rx)/nominal
  float minCapacityRatio = 1;     // min over links of nominal / best nominal seen for that link (1 = full)
  float errorsPerSec = 0;         // summed over links
  uint16_t congestedLinks = 0;    // links judged congested in the last interval
  float lossPerSec = 0;
  int64_t lastChangeNs = 0;       // latest lastChangeNs over links
};

LinkHealthSummary summarize(const LinkHealthSnapshot& s);

// The `link_health` event (docs/telemetry.md) and one link of it; toJson is the same as JSON.
logev::LinkHealth logEvent(const LinkHealthSnapshot& s);
logev::LinkEntry logEntry(const LinkHealth& l);
nlohmann::json toJson(const LinkHealthSnapshot& s);
nlohmann::json toJson(const LinkHealth& l);

// Derives state from the measured fields: down if !present or !up; degraded if errors or loss were
// seen in the last interval, or the collector flagged congestion, or the nominal capacity fell below the best
// seen, or (rails) the rail model gave a reason.
LinkState classify(const LinkHealth& l);
// Collectors call this at the end of each pass for each link: tracks bestNominalBps, re-classifies,
// and stamps lastChangeNs when the state changed.
void refreshState(LinkHealth& l, int64_t nowNs);

// ---- Rails of the net plugin (docs/telemetry.md, "Rails") ----

// One rail of one open send comm, as net/rail_registry.h reads it (CommTelemetry plus TCP_INFO).
struct RailReading {
  uint64_t conn = 0;        // the send comm's registry id: stable while it is open, never reused
  std::string peer;         // the peer's address, for the log
  std::string label;        // the interface ("eth1"); "lo#2" when the device repeats an interface
  int rail = 0;             // index in the comm
  bool up = true;
  double share = 0;         // of new chunks, 0..1
  double rateBps = 0;       // the scheduler's measured delivery rate
  uint64_t bytesDelivered = 0;
  uint32_t rttUs = 0;       // smoothed RTT of the rail's streams (TCP_INFO); 0 = unknown
  uint64_t retransmits = 0; // segments retransmitted over the rail's streams (a counter)
  uint64_t resentChunks = 0;  // of the whole comm
};

// The rules that judge a rail (thresholds documented in docs/telemetry.md).
struct RailRules {
  double slowRatio = 0.25;        // degraded: measured rate below this fraction of the comm's other up rails' median
  double rttFactor = 4.0;         // degraded: RTT at least this multiple of its baseline ...
  double rttMinRiseUs = 250;      // ... and at least this much above it (LAN jitter is no news)
  size_t baselineWindow = 300;    // baseline: minimum RTT over the last this many busy passes
  size_t baselineMinSamples = 3;  // no RTT verdict before this many busy passes
  double retransFraction = 0.01;  // degraded: retransmitted / delivered segments in one pass at least this ...
  uint64_t retransMinSegments = 10;  // ... and at least this many retransmitted segments
  double shiftPoints = 0.10;      // rail_shift: a share moved this much since the last logged one
};

// Merges the open send comms' rails into the link-health model, one link per rail label ("rail:eth1"),
// and finds rail_shift events. Driven by one thread (the runtime's sampler); pure logic, time injected.
class RailTracker {
 public:
  explicit RailTracker(RailRules rules = {}) : rules_(rules) {}
  // One pass over every open comm's rails. Returns the rails of open comms only (a rail whose comms all
  // closed is not a lost link); their state is set with refreshState.
  std::vector<LinkHealth> update(const std::vector<RailReading>& in, int64_t nowNs);
  // The rail_shift events the last update found (docs/adaptation-log.md), oldest first.
  std::vector<nlohmann::json> takeShifts() { return std::move(shifts_); }

 private:
  struct Label {
    std::deque<double> busyRtts;  // per busy pass: the smallest RTT over the comms (the baseline window)
    double lastRttUs = 0;         // of the latest busy pass
    LinkHealth link;
  };
  struct RailMemo {
    uint64_t bytes = 0, retransmits = 0;
    double loggedShare = 0;
    bool loggedUp = true;
    std::string label;
  };
  struct Conn {
    std::vector<RailMemo> rails;
    uint64_t lastResent = 0;
  };
  RailRules rules_;
  std::map<std::string, Label> labels_;
  std::map<uint64_t, Conn> conns_;
  std::vector<nlohmann::json> shifts_;
  int64_t lastNs_ = 0;
};

}  // namespace wirewise::collectors
