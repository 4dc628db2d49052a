#include "net/transport.h"

#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <string>
#include <vector>

#include "net/comm.h"
#include "net/engine.h"
#include "net/rail_registry.h"
#include "net/setup.h"
#include "common/settings.h"

namespace wirewise::net {

namespace {

// Library-wide state, touched only on the setup path. Never destroyed: NCCL may call into the plugin
// from its proxy threads while the process exits.
struct Global {
  std::mutex mu;
  bool haveDevices = false;
  std::vector<Device> devices;
  TransportConfig config;
  LogFn log = nullptr;
  LogFn info = nullptr;
};

Global& global() {
  static Global* g = new Global;
  return *g;
}

// The net settings come from the one settings table (common/settings.h). A bad value never fails
// anything: one WARN through NCCL's logger naming variable, value and range, and the default. Only the
// net face's own settings are reported here; the runtime reports the rest.
void readNetSettings(TransportConfig* c, IfSettings* rails, LogFn log) {
  std::vector<SettingProblem> problems;
  Settings s = readSettings(processEnv(), "", static_cast<long>(getpid()), &problems);
  for (const auto& p : problems) {
    if (log != nullptr && p.spec->group == SettingGroup::Net) log(("wirewise: " + p.message).c_str());
  }
  c->streamsPerRail = static_cast<int>(s.netStreams);
  c->chunkBytes = static_cast<size_t>(s.netChunkKb) << 10;
  c->railTimeoutMs = static_cast<uint64_t>(s.netRailTimeoutMs);
  c->queueTargetMs = static_cast<uint64_t>(s.netQueueMs);
  c->hedgeFactor = static_cast<double>(s.netHedge);
  engine::setEnabled(s.netEngine);  // comms attached from now on
  rails->wirewise = s.netIfnames;
  if (const char* v = processEnv()("NCCL_SOCKET_IFNAME")) rails->nccl = v;
}

bool lookupDevice(int dev, Device* out, TransportConfig* config) {
  Global& g = global();
  std::lock_guard<std::mutex> lock(g.mu);
  if (dev < 0 || dev >= static_cast<int>(g.devices.size())) return false;
  *out = g.devices[static_cast<size_t>(dev)];
  if (config != nullptr) *config = g.config;
  return true;
}

LogFn currentLog() {
  Global& g = global();
  std::lock_guard<std::mutex> lock(g.mu);
  return g.log;
}

void warn(const char* msg) {
  if (LogFn log = currentLog()) log(msg);
}

LogFn currentInfoLog() {
  Global& g = global();
  std::lock_guard<std::mutex> lock(g.mu);
  return g.info;
}

// What a send comm did over its life, for its INFO line at close: bytes per rail (chunk headers and resent
// copies included, as the scheduler assigned them), each rail's share of them, rails that ended down.
std::string closeSummary(const SendComm& sc, const std::string& peer, const std::vector<std::string>& labels) {
  const RailScheduler& s = sc.scheduler();
  uint64_t total = 0;
  for (int r = 0; r < s.rails(); ++r) total += s.assigned(r);
  char buf[160];
  std::snprintf(buf, sizeof buf, "wirewise net: connection to %s closed: %.1f MB sent:", peer.empty() ? "?" : peer.c_str(),
                static_cast<double>(total) / 1e6);
  std::string out = buf;
  for (int r = 0; r < s.rails(); ++r) {
    const std::string name = r < static_cast<int>(labels.size()) ? labels[static_cast<size_t>(r)] : "rail" + std::to_string(r);
    const double pct = total > 0 ? 100.0 * static_cast<double>(s.assigned(r)) / static_cast<double>(total) : 0.0;
    std::snprintf(buf, sizeof buf, "%s %s %.1f MB (%.0f%%%s)", r == 0 ? "" : ",", name.c_str(),
                  static_cast<double>(s.assigned(r)) / 1e6, pct, s.up(r) ? "" : ", down");
    out += buf;
  }
  std::snprintf(buf, sizeof buf, "; %llu chunks resent (%llu of them hedged), %llu streams reopened",
                static_cast<unsigned long long>(sc.resentChunks()), static_cast<unsigned long long>(sc.hedgedChunks()),
                static_cast<unsigned long long>(sc.reopenedStreams()));
  return out + buf;
}

}  // namespace

Status netInit(LogFn log) {
  Global& g = global();
  std::lock_guard<std::mutex> lock(g.mu);
  if (log != nullptr) g.log = log;
  if (!g.haveDevices) {
    TransportConfig& c = g.config;
    IfSettings rails;
    readNetSettings(&c, &rails, g.log);
    g.devices = discoverDevices(rails, g.log);
    g.haveDevices = true;
  }
  return g.devices.empty() ? Status::kSystemError : Status::kOk;
}

void setInfoLog(LogFn log) {
  Global& g = global();
  std::lock_guard<std::mutex> lock(g.mu);
  g.info = log;
}

void setDevices(std::vector<Device> devices) {
  Global& g = global();
  std::lock_guard<std::mutex> lock(g.mu);
  g.devices = std::move(devices);
  g.haveDevices = true;
}

void setConfig(const TransportConfig& config) {
  Global& g = global();
  std::lock_guard<std::mutex> lock(g.mu);
  g.config = config;
}

TransportConfig currentConfig() {
  Global& g = global();
  std::lock_guard<std::mutex> lock(g.mu);
  return g.config;
}

int deviceCount() {
  Global& g = global();
  std::lock_guard<std::mutex> lock(g.mu);
  return static_cast<int>(g.devices.size());
}

Status getProperties(int dev, DeviceProps* props) {
  Global& g = global();
  std::lock_guard<std::mutex> lock(g.mu);
  if (props == nullptr || dev < 0 || dev >= static_cast<int>(g.devices.size())) return Status::kInvalidArgument;
  const Device& d = g.devices[static_cast<size_t>(dev)];
  *props = DeviceProps{};
  props->name = d.name.c_str();  // the device list is only replaced by tests, before any comm exists
  props->guid = static_cast<uint64_t>(dev);
  props->speedMbps = d.speedMbps;
  props->latencyUs = 0.0f;  // as NCCL's socket transport: no measured figure yet
  props->maxComms = 65536;
  props->maxRecvs = kMaxRecvs;
  props->ptrSupport = kPtrHost;
  props->maxP2pBytes = kMaxMessageBytes;
  props->maxCollBytes = 512ull << 20;  // MAX_COLLNET_SIZE
  props->railId = d.rails.size() == 1 ? dev : -1;
  return Status::kOk;
}

Status listen(int dev, void* handle, void** listenComm) {
  if (handle == nullptr || listenComm == nullptr) return Status::kInternalError;
  *listenComm = nullptr;
  Device d;
  TransportConfig config;
  if (!lookupDevice(dev, &d, &config)) return Status::kInvalidArgument;
  std::memset(handle, 0, kHandleBytes);
  NetHandle h;
  ListenComm* lc = nullptr;
  if (Status s = openListen(d, config, &h, &lc); s != Status::kOk) {
    warn("wirewise net: listen failed");
    return s;
  }
  std::memcpy(handle, &h, sizeof h);
  *listenComm = lc;
  return Status::kOk;
}

Status connect(int dev, void* handle, void** sendComm) {
  if (handle == nullptr || sendComm == nullptr) return Status::kInternalError;
  *sendComm = nullptr;
  Device d;
  TransportConfig config;
  if (!lookupDevice(dev, &d, &config)) return Status::kInvalidArgument;
  SendComm* sc = nullptr;
  Status s = connectStep(d, config, handle, &sc);
  if (s != Status::kOk) warn("wirewise net: connect failed");
  if (sc != nullptr) {
    // Registered before the engine may drive it: registration reads the comm's streams.
    registerSendComm(sc, d, handle);  // for the runtime's rail telemetry
    if (!engine::attachSend(sc, currentLog())) {
      unregisterSendComm(sc);
      delete sc;
      sc = nullptr;
      s = Status::kSystemError;
      warn("wirewise net: connect failed (out of memory)");
    }
  }
  *sendComm = sc;
  return s;
}

Status accept(void* listenComm, void** recvComm) {
  auto* lc = static_cast<ListenComm*>(listenComm);
  if (lc == nullptr || recvComm == nullptr || lc->magic != kListenMagic) return Status::kInternalError;
  RecvComm* rc = nullptr;
  Status s = acceptStep(lc, &rc);
  if (s != Status::kOk) warn("wirewise net: accept failed");
  if (rc != nullptr && !engine::attachRecv(rc, currentLog())) {
    delete rc;
    rc = nullptr;
    s = Status::kSystemError;
    warn("wirewise net: accept failed (out of memory)");
  }
  *recvComm = rc;
  return s;
}

Status regMr(void* comm, void* /*data*/, size_t /*size*/, int type, void** mhandle) {
  if (comm == nullptr || mhandle == nullptr) return Status::kInternalError;
  *mhandle = nullptr;
  if (type != kPtrHost) return Status::kInternalError;  // we only advertise NCCL_PTR_HOST
  *mhandle = comm;  // sockets need no registration; any non-null token will do
  return Status::kOk;
}

Status deregMr(void* /*comm*/, void* /*mhandle*/) { return Status::kOk; }

Status isend(void* sendComm, void* data, size_t size, int tag, void** request) {
  if (sendComm == nullptr || request == nullptr || (data == nullptr && size > 0)) return Status::kInternalError;
  if (size > kMaxMessageBytes) return Status::kInvalidArgument;  // beyond what we advertised (and the chunk grid)
  return engine::isend(static_cast<SendComm*>(sendComm), data, size, tag, request);
}

Status irecv(void* recvComm, int n, void** data, const size_t* sizes, const int* tags, void** request) {
  if (recvComm == nullptr || request == nullptr || n < 1 || n > kMaxRecvs || data == nullptr || sizes == nullptr)
    return Status::kInternalError;
  for (int i = 0; i < n; ++i)
    if (data[i] == nullptr && sizes[i] > 0) return Status::kInternalError;
  return engine::irecv(static_cast<RecvComm*>(recvComm), n, data, sizes, tags, request);
}

Status iflush(void* /*recvComm*/, void** request) {
  if (request != nullptr) *request = nullptr;  // host memory: nothing to flush
  return Status::kOk;
}

Status test(void* request, int* done, int* sizes) {
  if (request == nullptr || done == nullptr) return Status::kInternalError;
  *done = 0;
  return engine::test(request, done, sizes);
}

Status closeSend(void* sendComm) {
  auto* sc = static_cast<SendComm*>(sendComm);
  std::string peer;
  std::vector<std::string> labels;
  unregisterSendComm(sendComm, &peer, &labels);  // first: no reader may touch the comm or its fds once they close
  if (sc != nullptr) engine::detachSend(sc);      // then the engine thread: from here this thread alone
  try {
    if (LogFn info = currentInfoLog(); sc != nullptr && info != nullptr) info(closeSummary(*sc, peer, labels).c_str());
  } catch (...) {  // a summary that cannot be formatted is not worth a leaked comm
  }
  delete sc;
  return Status::kOk;
}

Status closeRecv(void* recvComm) {
  if (recvComm != nullptr) engine::detachRecv(static_cast<RecvComm*>(recvComm));
  delete static_cast<RecvComm*>(recvComm);
  return Status::kOk;
}

Status closeListen(void* listenComm) {
  auto* lc = static_cast<ListenComm*>(listenComm);
  if (lc != nullptr && lc->magic != kListenMagic) return Status::kInternalError;
  delete lc;
  return Status::kOk;
}

std::vector<RailStats> sendRailStats(void* sendComm) {
  std::vector<RailStats> out;
  auto* sc = static_cast<SendComm*>(sendComm);
  if (sc == nullptr) return out;
  engine::BatonHold hold(sc);  // the scheduler's working state: the engine must not be inside
  const RailScheduler& s = sc->scheduler();
  for (int r = 0; r < s.rails(); ++r) {
    RailStats rs;
    rs.bytes = s.assigned(r);
    rs.chunks = s.chunks(r);
    rs.busyNs = s.busyNs(r);
    rs.weight = s.rate(r);
    rs.share = s.share(r);
    rs.up = s.up(r);
    sc->tcpInfo(r, &rs.rttUs, &rs.retransmits);
    out.push_back(rs);
  }
  return out;
}

static_assert(sizeof(CommTelemetry::rail) / sizeof(RailTelemetry) == kMaxRails);

bool sendTelemetry(void* sendComm, CommTelemetry* out) {
  auto* sc = static_cast<SendComm*>(sendComm);
  if (sc == nullptr || out == nullptr) return false;
  const RailScheduler& s = sc->scheduler();
  *out = CommTelemetry{};
  out->rails = s.rails();
  for (int r = 0; r < s.rails(); ++r) {
    out->rail[r].bytesDelivered = s.publishedDelivered(r);
    out->rail[r].share = s.publishedShare(r);
    out->rail[r].rateBytesPerS = s.publishedRate(r);
    out->rail[r].up = s.publishedUp(r);
  }
  out->lastShareChangeNs = s.publishedShiftNs();
  out->resentChunks = sc->resentChunks();
  out->hedgedChunks = sc->hedgedChunks();
  return true;
}

}  // namespace wirewise::net
