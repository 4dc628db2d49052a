// The link health model: one record per link, merged from every collector, plus a compact fixed-size
// summary for the coordinator's boundary reports and a JSON form for the adaptation log (`link_health`
// event, schema in docs/telemetry.md). Units: bytes/s for bandwidths, microseconds for RTTs, events/s
// for error and congestion rates; times are steady-clock nanoseconds (the clock the sampler injects).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace wirewise::collectors {

enum class LinkKind : uint8_t { kInfiniBand, kRoce, kNetdev, kTcp, kNvlink, kPcie };
const char* linkKindName(LinkKind k);  // "ib", "roce", "netdev", "tcp", "nvlink", "pcie"

enum class LinkState : uint8_t { kUp, kDegraded, kDown };
const char* linkStateName(LinkState s);  // "up", "degraded", "down"

struct LinkHealth {
  LinkKind kind = LinkKind::kNetdev;
  std::string id;             // "mlx5_0:1", "eth0", "tcp:<label>", "gpu0:nvlink3", "gpu0:pcie"
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

// {"event":"link_health","time_ns":..,"passes":..,"links":[..],"sources":[..]}; see docs/telemetry.md.
nlohmann::json toJson(const LinkHealthSnapshot& s);
nlohmann::json toJson(const LinkHealth& l);

// Derives state from the measured fields: down if !present or !up; degraded if errors or loss were
// seen in the last interval, or the collector flagged congestion, or the nominal capacity fell below the best seen.
LinkState classify(const LinkHealth& l);
// Collectors call this at the end of each pass for each link: tracks bestNominalBps, re-classifies,
// and stamps lastChangeNs when the state changed.
void refreshState(LinkHealth& l, int64_t nowNs);

}  // namespace wirewise::collectors
