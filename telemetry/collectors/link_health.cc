#include "telemetry/collectors/link_health.h"

#include <algorithm>

namespace wirewise::collectors {

const char* linkKindName(LinkKind k) {
  switch (k) {
    case LinkKind::kInfiniBand: return "ib";
    case LinkKind::kRoce: return "roce";
    case LinkKind::kNetdev: return "netdev";
    case LinkKind::kTcp: return "tcp";
    case LinkKind::kNvlink: return "nvlink";
    case LinkKind::kPcie: return "pcie";
  }
  return "unknown";
}

const char* linkStateName(LinkState s) {
  switch (s) {
    case LinkState::kUp: return "up";
    case LinkState::kDegraded: return "degraded";
    case LinkState::kDown: return "down";
  }
  return "unknown";
}

LinkState classify(const LinkHealth& l) {
  if (!l.present || !l.up) return LinkState::kDown;
  if (l.errorsPerSec > 0 || l.lossPerSec > 0 || l.congested) return LinkState::kDegraded;
  if (l.nominalBps > 0 && l.bestNominalBps > 0 && l.nominalBps < 0.99 * l.bestNominalBps) return LinkState::kDegraded;
  return LinkState::kUp;
}

void refreshState(LinkHealth& l, int64_t nowNs) {
  l.bestNominalBps = std::max(l.bestNominalBps, l.nominalBps);
  LinkState s = classify(l);
  if (s != l.state || l.lastChangeNs == 0) {
    l.state = s;
    l.lastChangeNs = nowNs;
  }
}

LinkHealthSummary summarize(const LinkHealthSnapshot& s) {
  LinkHealthSummary out;
  out.timeNs = s.timeNs;
  for (const LinkHealth& l : s.links) {
    ++out.links;
    if (l.state == LinkState::kUp) ++out.up;
    if (l.state == LinkState::kDegraded) ++out.degraded;
    if (l.state == LinkState::kDown) ++out.down;
    if (l.nominalBps > 0 && l.rateValid) {
      out.worstUtilization =
          std::max(out.worstUtilization, static_cast<float>(std::max(l.txBps, l.rxBps) / l.nominalBps));
    }
    if (l.present && l.bestNominalBps > 0) {
      out.minCapacityRatio = std::min(out.minCapacityRatio, static_cast<float>(l.nominalBps / l.bestNominalBps));
    }
    out.errorsPerSec += static_cast<float>(l.errorsPerSec);
    out.lossPerSec += static_cast<float>(l.lossPerSec);
    if (l.congested) ++out.congestedLinks;
    out.lastChangeNs = std::max(out.lastChangeNs, l.lastChangeNs);
  }
  return out;
}

nlohmann::json toJson(const LinkHealth& l) {
  nlohmann::json j = {
      {"kind", linkKindName(l.kind)},
      {"id", l.id},
      {"state", linkStateName(l.state)},
      {"present", l.present},
      {"up", l.up},
      {"nominal_gbps", l.nominalBps / 1e9},
      {"errors_per_s", l.errorsPerSec},
      {"last_change_ns", l.lastChangeNs},
      {"counter_anomalies", l.counterAnomalies},
  };
  // Unknown rates are omitted rather than written as 0, so readers cannot mistake "no data" for idle.
  if (l.rateValid) {
    j["tx_gbps"] = l.txBps / 1e9;
    j["rx_gbps"] = l.rxBps / 1e9;
  }
  if (l.congestionUnit[0] != '\0') {
    j["congestion"] = l.congestionPerSec;
    j["congestion_unit"] = l.congestionUnit;
    j["congested"] = l.congested;
  }
  if (l.kind == LinkKind::kRoce || l.kind == LinkKind::kInfiniBand || l.kind == LinkKind::kTcp) {
    j["loss_per_s"] = l.lossPerSec;
  }
  if (l.kind == LinkKind::kTcp) {
    j["rtt_us"] = l.rttUs;
    j["rttvar_us"] = l.rttVarUs;
    j["min_rtt_us"] = l.minRttUs;
    j["delivery_gbps"] = l.deliveryBps / 1e9;
  }
  return j;
}

nlohmann::json toJson(const LinkHealthSnapshot& s) {
  nlohmann::json links = nlohmann::json::array();
  for (const LinkHealth& l : s.links) links.push_back(toJson(l));
  nlohmann::json sources = nlohmann::json::array();
  for (const SourceStatus& src : s.sources) {
    sources.push_back({{"name", src.name}, {"available", src.available}, {"reason", src.reason}});
  }
  return {{"event", "link_health"}, {"time_ns", s.timeNs}, {"passes", s.passes}, {"links", links},
          {"sources", sources}};
}

}  // namespace wirewise::collectors
