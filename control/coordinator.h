// The coordinator: accepts members' connections on the control plane's I/O thread, runs one
// CommAgreement per communicator, and sends every verdict to every connection that has a member of
// that communicator. Verdicts are kept, so a member that reconnects re-requests the ones it lacks.
// A connection that sends a bad frame is dropped and logged; communicators never notice.
#pragma once

#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/steady_timer.hpp>
#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "control/boundary.h"
#include "control/policy.h"
#include "control/session.h"

namespace wirewise::control {

using LogFn = std::function<void(bool warn, const std::string& line)>;

struct CoordinatorStats {
  uint64_t accepted = 0, rejected = 0, joins = 0, reports = 0, verdicts = 0, proposals = 0, answers = 0;
};

class Coordinator {
 public:
  // The acceptor is already bound and listening.
  Coordinator(boost::asio::io_context& io, boost::asio::ip::tcp::acceptor acceptor, std::vector<uint8_t> jobKey,
              AgreementParams params, std::unique_ptr<Policy> policy, StaticRulesFn staticRules, LogFn log);
  void start();
  void stop();  // I/O thread only
  uint16_t port() const { return port_; }
  CoordinatorStats stats() const { return stats_; }

 private:
  struct Comm {
    std::unique_ptr<CommAgreement> agreement;
    std::map<Session*, std::weak_ptr<Session>> subscribers;
    uint64_t staticDigest = 0;
  };
  void accept();
  void onFrame(const std::shared_ptr<Session>& s, const Frame& f);
  void flush(uint64_t commId, Comm& c);
  void broadcast(Comm& c, MsgType type, const std::vector<uint8_t>& payload);
  void tick();
  void armTick(std::chrono::milliseconds after);
  int64_t nowMs() const;

  boost::asio::io_context& io_;
  boost::asio::ip::tcp::acceptor acceptor_;
  boost::asio::steady_timer timer_;
  std::vector<uint8_t> jobKey_;
  AgreementParams params_;
  std::unique_ptr<Policy> policy_;
  StaticRulesFn staticRules_;
  LogFn log_;
  uint16_t port_ = 0;
  bool stopped_ = false;
  bool idle_ = false;     // the timer runs at its idle period (no deadline to watch)
  uint64_t tickGen_ = 0;  // the tick armed last; an older one's handler does nothing
  std::map<uint64_t, Comm> comms_;
  std::set<std::shared_ptr<Session>> sessions_;
  CoordinatorStats stats_;
  std::vector<Report> batch_;  // the reports of the frame being handled
  std::chrono::steady_clock::time_point t0_ = std::chrono::steady_clock::now();
};

}  // namespace wirewise::control
