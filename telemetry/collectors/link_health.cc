#include "telemetry/collectors/link_health.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <iterator>

#include "common/units.h"

namespace wirewise::collectors {

const char* linkKindName(LinkKind k) {
  switch (k) {
    case LinkKind::kInfiniBand: return "ib";
    case LinkKind::kRoce: return "roce";
    case LinkKind::kNetdev: return "netdev";
    case LinkKind::kTcp: return "tcp";
    case LinkKind::kNvlink: return "nvlink";
    case LinkKind::kPcie: return "pcie";
    case LinkKind::kRail: return "rail";
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
  if (l.kind == LinkKind::kRail && !l.reason.empty()) return LinkState::kDegraded;
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

logev::LinkEntry logEntry(const LinkHealth& l) {
  logev::LinkEntry e;
  e.kind = linkKindName(l.kind);
  e.id = l.id;
  e.state = linkStateName(l.state);
  e.present = l.present;
  e.up = l.up;
  e.nominalGbps = l.nominalBps / 1e9;
  e.errorsPerSec = l.errorsPerSec;
  e.lastChangeNs = l.lastChangeNs;
  e.counterAnomalies = l.counterAnomalies;
  // Unknown rates are omitted rather than written as 0, so readers cannot mistake "no data" for idle.
  if (l.rateValid) {
    e.txGbps = l.txBps / 1e9;
    e.rxGbps = l.rxBps / 1e9;
  }
  if (l.congestionUnit[0] != '\0') {
    e.congestion = l.congestionPerSec;
    e.congestionUnit = l.congestionUnit;
    e.congested = l.congested;
  }
  if (l.kind == LinkKind::kRoce || l.kind == LinkKind::kInfiniBand || l.kind == LinkKind::kTcp) {
    e.lossPerSec = l.lossPerSec;
  }
  if (l.kind == LinkKind::kTcp) {
    e.rttUs = l.rttUs;
    e.rttVarUs = l.rttVarUs;
    e.minRttUs = l.minRttUs;
    e.deliveryGbps = l.deliveryBps / 1e9;
  }
  if (l.kind == LinkKind::kRail) {
    e.rateGbps = l.deliveryBps / 1e9;  // the scheduler's measured rate, summed over connections
    e.share = l.share;
    e.rateRatio = l.rateRatio;
    e.rttUs = l.rttUs;
    e.baselineRttUs = l.baselineRttUs;
    e.connections = l.connections;
    if (!l.reason.empty()) e.reason = l.reason;
  }
  return e;
}

logev::LinkHealth logEvent(const LinkHealthSnapshot& s) {
  logev::LinkHealth ev;
  ev.timeNs = s.timeNs;
  ev.passes = s.passes;
  for (const LinkHealth& l : s.links) ev.links.push_back(logEntry(l));
  for (const SourceStatus& src : s.sources) ev.sources.push_back({src.name, src.reason, src.available});
  return ev;
}

nlohmann::json toJson(const LinkHealthSnapshot& s) { return logEvent(s); }
nlohmann::json toJson(const LinkHealth& l) { return logEntry(l); }

// ---- rails ----

namespace {

constexpr double kSegmentBytes = 1448;  // Ethernet MSS: delivered bytes -> segments, for the retransmission share

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  const size_t n = v.size();
  return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

void append(std::string* s, const std::string& part) { *s += (s->empty() ? "" : "; ") + part; }

}  // namespace

std::vector<LinkHealth> RailTracker::update(const std::vector<RailReading>& in, int64_t nowNs) {
  const double dt = lastNs_ > 0 && nowNs > lastNs_ ? static_cast<double>(nowNs - lastNs_) / 1e9 : 0;
  lastNs_ = nowNs;
  std::map<uint64_t, std::vector<const RailReading*>> byConn;
  for (const RailReading& r : in)
    if (r.rail >= 0 && r.rail < 64) byConn[r.conn].push_back(&r);

  struct Acc {
    int conns = 0, upConns = 0;
    double shareSum = 0, rateSum = 0, minRtt = 0, minRatio = 1;
    uint64_t bytesDelta = 0, retransDelta = 0;
  };
  std::map<std::string, Acc> acc;  // by label
  std::vector<uint64_t> shifted;
  for (auto& [id, rails] : byConn) {
    auto [it, fresh] = conns_.try_emplace(id);
    Conn& c = it->second;
    if (fresh && !rails.empty()) c.lastResent = rails.front()->resentChunks;
    // The peer rule compares rails of one comm: they share the same traffic, so their measured rates
    // are comparable. Only up rails that delivered something have a measured rate.
    std::vector<const RailReading*> measured;
    for (const RailReading* r : rails)
      if (r->up && r->bytesDelivered > 0 && r->rateBps > 0) measured.push_back(r);
    bool shift = false;
    for (const RailReading* r : rails) {
      if (static_cast<size_t>(r->rail) >= c.rails.size()) c.rails.resize(static_cast<size_t>(r->rail) + 1);
      RailMemo& m = c.rails[static_cast<size_t>(r->rail)];
      const bool known = !fresh && !m.label.empty();
      Acc& a = acc[r->label];
      ++a.conns;
      a.upConns += r->up ? 1 : 0;
      a.shareSum += r->share;
      a.rateSum += r->up ? r->rateBps : 0;
      if (known) {
        const uint64_t db = r->bytesDelivered >= m.bytes ? r->bytesDelivered - m.bytes : 0;
        const uint64_t dr = r->retransmits >= m.retransmits ? r->retransmits - m.retransmits : 0;
        a.bytesDelta += db;
        a.retransDelta += dr;
        // RTT only from passes in which the rail carried data: an idle stream's RTT is stale.
        if (db > 0 && r->rttUs > 0) a.minRtt = a.minRtt > 0 ? std::min<double>(a.minRtt, r->rttUs) : r->rttUs;
        if (std::fabs(r->share - m.loggedShare) >= rules_.shiftPoints - 1e-9 || r->up != m.loggedUp) shift = true;
      } else {
        m.loggedShare = r->share;
        m.loggedUp = r->up;
      }
      m.label = r->label;
      m.bytes = r->bytesDelivered;
      m.retransmits = r->retransmits;
      if (r->up && r->bytesDelivered > 0 && r->rateBps > 0 && measured.size() >= 2) {
        std::vector<double> peers;
        for (const RailReading* o : measured)
          if (o != r) peers.push_back(o->rateBps);
        const double med = median(peers);
        if (med > 0) a.minRatio = std::min(a.minRatio, r->rateBps / med);
      }
    }
    if (shift) shifted.push_back(id);
  }
  for (auto it = conns_.begin(); it != conns_.end();) it = byConn.count(it->first) ? std::next(it) : conns_.erase(it);

  std::vector<LinkHealth> out;
  for (auto& [label, a] : acc) {
    Label& L = labels_[label];
    LinkHealth& l = L.link;
    l.kind = LinkKind::kRail;
    l.id = "rail:" + label;
    l.present = true;
    l.up = a.upConns > 0;
    l.connections = a.conns;
    l.share = a.shareSum / a.conns;
    l.deliveryBps = a.rateSum;
    l.rateValid = dt > 0;
    l.txBps = dt > 0 ? static_cast<double>(a.bytesDelta) / dt : 0;
    l.rateRatio = std::min(1.0, a.minRatio);
    if (a.minRtt > 0) {
      L.busyRtts.push_back(a.minRtt);
      while (L.busyRtts.size() > std::max<size_t>(1, rules_.baselineWindow)) L.busyRtts.pop_front();
      L.lastRttUs = a.minRtt;
    }
    l.rttUs = L.lastRttUs;
    l.baselineRttUs = L.busyRtts.size() >= rules_.baselineMinSamples
                          ? *std::min_element(L.busyRtts.begin(), L.busyRtts.end())
                          : 0;
    l.congestionUnit = "retrans_segs/s";
    l.congestionPerSec = dt > 0 ? static_cast<double>(a.retransDelta) / dt : 0;
    const double segments = std::max(1.0, static_cast<double>(a.bytesDelta) / kSegmentBytes);
    const double retransShare = static_cast<double>(a.retransDelta) / segments;
    l.congested = a.retransDelta >= rules_.retransMinSegments && retransShare >= rules_.retransFraction;
    l.reason.clear();
    if (!l.up) {
      append(&l.reason, a.conns == 1 ? "down" : "down in all " + std::to_string(a.conns) + " connections");
    } else {
      if (a.upConns < a.conns)
        append(&l.reason, "down in " + std::to_string(a.conns - a.upConns) + " of " + std::to_string(a.conns) +
                              " connections");
      if (a.minRatio < rules_.slowRatio)
        append(&l.reason, "measured rate " + percentText(100 * a.minRatio) + " of its peer rails' median");
      if (l.baselineRttUs > 0 && l.rttUs >= rules_.rttFactor * l.baselineRttUs &&
          l.rttUs - l.baselineRttUs >= rules_.rttMinRiseUs) {
        char buf[96];
        std::snprintf(buf, sizeof buf, "network latency rose from %s to %s (%.0fx)",
                      durationText(l.baselineRttUs).c_str(), durationText(l.rttUs).c_str(), l.rttUs / l.baselineRttUs);
        append(&l.reason, buf);
      }
      if (l.congested)
        append(&l.reason, std::to_string(a.retransDelta) + " segments retransmitted (" +
                              percentText(100 * retransShare) + " of those delivered)");
    }
    refreshState(l, nowNs);
    out.push_back(l);
  }

  for (uint64_t id : shifted) {
    Conn& c = conns_.at(id);
    const std::vector<const RailReading*>& rails = byConn.at(id);
    logev::RailShift ev;
    std::string& reason = ev.reason;
    uint64_t resent = 0;
    for (const RailReading* r : rails) {
      RailMemo& m = c.rails[static_cast<size_t>(r->rail)];
      const Label& L = labels_.at(r->label);
      logev::RailEntry e;
      e.rail = r->rail;
      e.label = r->label;
      e.before = std::round(m.loggedShare * 1000) / 1000;
      e.after = std::round(r->share * 1000) / 1000;
      e.wasUp = m.loggedUp;
      e.up = r->up;
      e.rateGbps = r->rateBps / 1e9;
      e.rttUs = r->rttUs;
      e.baselineRttUs = L.link.baselineRttUs;
      e.retransmits = r->retransmits;
      e.state = linkStateName(L.link.state);
      ev.rails.push_back(std::move(e));
      if (m.loggedUp != r->up) {
        append(&reason, r->label + (r->up ? " came back" : " died"));
      } else if (std::fabs(r->share - m.loggedShare) >= rules_.shiftPoints - 1e-9) {
        append(&reason, r->label + " " + percentText(100 * m.loggedShare) + " -> " + percentText(100 * r->share));
      }
      if (!L.link.reason.empty() && L.link.state == LinkState::kDegraded) reason += " (" + L.link.reason + ")";
      m.loggedShare = r->share;
      m.loggedUp = r->up;
      resent = r->resentChunks;
      ev.peer = r->peer;
    }
    ev.conn = id;
    ev.timeNs = nowNs;
    ev.resentChunks = resent;
    ev.resentSinceLast = resent >= c.lastResent ? resent - c.lastResent : 0;
    shifts_.push_back(nlohmann::json(ev));
    c.lastResent = resent;
  }
  return out;
}

}  // namespace wirewise::collectors
