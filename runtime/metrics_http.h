// The HTTP output of the Prometheus metrics (docs/prometheus.md): `GET /metrics` on one port, served by
// one thread of its own with Boost.Beast (header-only, like the control plane's Asio), so a scrape never
// touches NCCL's threads or the runtime's others. Anything but /metrics is 404; a connection closes after
// its response, and one that sends no complete request within a few seconds is closed, as is any beyond
// a small number open at once (a scraper needs one).
//
// Nothing here throws to its caller: start() reports a port it cannot bind as a sentence for the WARN,
// and the thread's top catches whatever a handler let through.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>

#include "common/settings.h"

namespace wirewise {

class MetricsHttp {
 public:
  using RenderFn = std::function<std::string()>;

  explicit MetricsHttp(RenderFn render);
  ~MetricsHttp();  // stop()
  MetricsHttp(const MetricsHttp&) = delete;
  MetricsHttp& operator=(const MetricsHttp&) = delete;

  // Listens on address:port (every IPv4 address by default: the scraper is on another host) and starts
  // the thread. False, with *problem naming the port and why, when it cannot listen. Port 0 takes a free
  // one (tests); port() says which.
  bool start(uint16_t port, std::string* problem, const std::string& address = "0.0.0.0");
  void stop();  // closes the listener and every connection, joins the thread; idempotent
  uint16_t port() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

// The launcher's local rank of this process (LOCAL_RANK, SLURM_LOCALID, OMPI_COMM_WORLD_LOCAL_RANK, the
// first set): each process of a node serves on the base port plus it. nullopt when none is set or the value
// is not a number in 0..65535.
std::optional<int> launcherLocalRank(const EnvSource& env);

}  // namespace wirewise
