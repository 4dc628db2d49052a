// The member side of the control plane: one connection per process to the coordinator, shared by all of
// the process's communicator contexts (members). It joins every member, reports each boundary a member
// passes (polled from the member's atomics, so getCollInfo never has to wake anyone), routes verdicts to
// the members of their communicator, and reconnects and resyncs after a lost connection.
#pragma once

#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/steady_timer.hpp>
#include <chrono>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "control/coordinator.h"
#include "control/member.h"
#include "control/session.h"

namespace wirewise::control {

using VerdictFn = std::function<void(const Member&, const Verdict&)>;
// Adds the member's evidence (samples, sights) to a report about to be sent; I/O thread.
using ReportFillFn = std::function<void(Member&, Report*)>;

class Client {
 public:
  Client(boost::asio::io_context& io, std::string host, uint16_t port, std::vector<uint8_t> jobKey, LogFn log,
         VerdictFn onVerdict, ReportFillFn fill = nullptr);
  void start();
  void stop();
  // I/O thread only.
  void add(std::shared_ptr<Member> m);
  void remove(const std::shared_ptr<Member>& m);
  // For tests: drop the connection now (it reconnects and resyncs).
  void cut();
  uint64_t connects() const { return connects_; }

 private:
  void connect();
  void onFrame(const Frame& f);
  void join(Member& m);
  void tick();
  void retryLater(const std::string& why);
  void armTick(std::chrono::microseconds period);

  boost::asio::io_context& io_;
  std::string host_;
  uint16_t port_;
  std::vector<uint8_t> jobKey_;
  LogFn log_;
  VerdictFn onVerdict_;
  ReportFillFn fill_;
  boost::asio::steady_timer tick_, retry_, hello_;
  std::shared_ptr<Session> session_;
  bool connecting_ = false, stopped_ = false, warned_ = false;
  bool idle_ = true;      // the report poll runs at its idle period (no member past verdict 0)
  uint64_t tickGen_ = 0;  // the poll armed last; an older one's handler does nothing
  uint64_t connects_ = 0;
  std::vector<std::shared_ptr<Member>> members_;
  // The newest table built per communicator: most verdicts repeat the table in force (the policy changes
  // it rarely), and an identical verdict reuses the built table instead of building it again.
  struct LastTable {
    std::vector<TableRule> rules;
    std::string reason;
    std::shared_ptr<const DecisionTable> table;
  };
  std::map<uint64_t, LastTable> lastTables_;
};

}  // namespace wirewise::control
