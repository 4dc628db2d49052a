#include "net/rail_registry.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>

#include <algorithm>
#include <cstring>
#include <map>
#include <mutex>

#include "net/comm.h"
#include "net/wire.h"
#include "runtime/runtime.h"

namespace wirewise::net {
namespace {

struct Entry {
  void* comm = nullptr;
  std::string peer;
  std::vector<std::string> labels;
};

// Never destroyed: NCCL's proxy thread may close comms while the process exits.
struct Registry {
  std::mutex mu;
  uint64_t nextId = 1;
  std::map<uint64_t, Entry> entries;
};

Registry& registry() {
  static Registry* r = new Registry;
  return *r;
}

std::string peerOf(const NetHandle& h) {
  char buf[INET6_ADDRSTRLEN] = "?";
  if (h.nRails > 0) inet_ntop(h.rails[0].family, h.rails[0].addr, buf, sizeof buf);
  return buf;
}

// Under the registry lock: the comm and its fds cannot close meanwhile. Streams reopened after a rail came
// back count too: the comm publishes them once whole.
void readTcpInfo(const SendComm& sc, CommTelemetry* t) {
  for (size_t i = 0; i < sc.publishedStreams(); ++i) {
    const StreamFd s = sc.publishedStream(i);
    if (s.rail < 0 || s.rail >= t->rails) continue;
    tcp_info info{};
    socklen_t len = sizeof info;
    if (getsockopt(s.fd, IPPROTO_TCP, TCP_INFO, &info, &len) != 0) continue;
    RailTelemetry& r = t->rail[s.rail];
    r.retransmits += info.tcpi_total_retrans;
    // The smallest RTT over live streams: a latency rise on the link shows on all of them, while one
    // dead or stalled stream's backed-off RTT says nothing about the link.
    if (info.tcpi_state == TCP_ESTABLISHED && info.tcpi_rtt > 0)
      r.rttUs = r.rttUs == 0 ? info.tcpi_rtt : std::min(r.rttUs, info.tcpi_rtt);
  }
}

}  // namespace

std::vector<std::string> railLabels(const Device& local, int nRails) {
  std::vector<std::string> out;
  for (int r = 0; r < nRails; ++r) {
    if (r >= static_cast<int>(local.rails.size())) {
      out.push_back("rail" + std::to_string(r));
      continue;
    }
    const std::string& name = local.rails[r].ifname;
    const bool repeated = std::count_if(local.rails.begin(), local.rails.end(),
                                        [&](const Rail& x) { return x.ifname == name; }) > 1;
    out.push_back(repeated ? name + "#" + std::to_string(r) : name);
  }
  return out;
}

void registerSendComm(void* sendComm, const Device& local, const void* handle) {
  auto* sc = static_cast<SendComm*>(sendComm);
  NetHandle h;
  if (sc == nullptr || handle == nullptr || !parseHandle(handle, &h)) return;
  Entry e;
  e.comm = sendComm;
  e.peer = peerOf(h);
  e.labels = railLabels(local, sc->scheduler().rails());
  static std::once_flag installed;
  std::call_once(installed, [] { Runtime::setRailSource(&railReadings); });
  Registry& r = registry();
  std::lock_guard<std::mutex> lock(r.mu);
  r.entries.emplace(r.nextId++, std::move(e));
}

void unregisterSendComm(void* sendComm, std::string* peer, std::vector<std::string>* labels) {
  if (sendComm == nullptr) return;
  Registry& r = registry();
  std::lock_guard<std::mutex> lock(r.mu);
  for (auto it = r.entries.begin(); it != r.entries.end(); ++it)
    if (it->second.comm == sendComm) {
      if (peer != nullptr) *peer = std::move(it->second.peer);
      if (labels != nullptr) *labels = std::move(it->second.labels);
      r.entries.erase(it);
      return;
    }
}

size_t registeredSendComms() {
  Registry& r = registry();
  std::lock_guard<std::mutex> lock(r.mu);
  return r.entries.size();
}

uint64_t sendCommId(void* sendComm) {
  Registry& r = registry();
  std::lock_guard<std::mutex> lock(r.mu);
  for (const auto& [id, e] : r.entries)
    if (e.comm == sendComm) return id;
  return 0;
}

std::vector<OpenSendComm> openSendComms() {
  std::vector<OpenSendComm> out;
  Registry& r = registry();
  uint64_t next = 0;
  for (;;) {
    OpenSendComm c;
    {
      std::lock_guard<std::mutex> lock(r.mu);
      auto it = r.entries.lower_bound(next);
      if (it == r.entries.end()) break;
      next = it->first + 1;
      if (!sendTelemetry(it->second.comm, &c.telemetry)) continue;
      readTcpInfo(*static_cast<const SendComm*>(it->second.comm), &c.telemetry);
      c.id = it->first;
      c.peer = it->second.peer;
      c.labels = it->second.labels;
    }
    out.push_back(std::move(c));
  }
  return out;
}

std::vector<collectors::RailReading> railReadings() {
  std::vector<collectors::RailReading> out;
  for (const OpenSendComm& c : openSendComms()) {
    for (int i = 0; i < c.telemetry.rails && i < kMaxRails; ++i) {
      const RailTelemetry& t = c.telemetry.rail[i];
      collectors::RailReading r;
      r.conn = c.id;
      r.peer = c.peer;
      r.label = i < static_cast<int>(c.labels.size()) ? c.labels[i] : "rail" + std::to_string(i);
      r.rail = i;
      r.up = t.up;
      r.share = t.share;
      r.rateBps = t.rateBytesPerS;
      r.bytesDelivered = t.bytesDelivered;
      r.rttUs = t.rttUs;
      r.retransmits = t.retransmits;
      r.resentChunks = c.telemetry.resentChunks;
      out.push_back(std::move(r));
    }
  }
  return out;
}

}  // namespace wirewise::net
