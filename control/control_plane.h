// The process's control plane: one Boost.Asio I/O thread that runs this process's client and, when this
// process is the first to bind the rendezvous address, the coordinator. Owned by the runtime, started at
// the first tuner v5 init that needs agreement, stopped (thread joined) when the runtime goes.
#pragma once

#include <boost/asio/io_context.hpp>
#include <memory>
#include <string>
#include <thread>

#include "common/settings.h"
#include "control/client.h"
#include "control/coordinator.h"
#include "control/member.h"
#include "control/policy.h"
#include "adaptive/comm_policy.h"
#include "adaptive/policy_params.h"

namespace wirewise::control {

struct ControlOptions {
  std::string host;
  uint16_t port = 0;
  std::vector<uint8_t> jobKey;
  AgreementParams params;
  PolicyKind policy = PolicyKind::Static;
  uint64_t policySeed = 1;
  StaticRulesFn staticRules;
  bool mayHost = true;  // try to bind host:port and host the coordinator
  LogFn log;
  VerdictFn onVerdict;  // called on the I/O thread for each verdict a member accepts
  ReportFillFn fillReport;  // adds telemetry to each report (I/O thread); may be null
  // Policy "adaptive": its parameters and where its log events go (the coordinator's thread).
  adapt::PolicyParams adaptive;
  adapt::EventFn policyEvent;
};

class ControlPlane {
 public:
  // Never throws for network reasons: a coordinator that cannot be bound is simply not hosted here.
  explicit ControlPlane(ControlOptions opts);
  ~ControlPlane();  // stops and joins the I/O thread
  ControlPlane(const ControlPlane&) = delete;
  ControlPlane& operator=(const ControlPlane&) = delete;

  void addMember(std::shared_ptr<Member> m);
  void removeMember(std::shared_ptr<Member> m);
  const std::string& address() const { return address_; }
  bool hosting() const { return coordinator_ != nullptr; }
  void cutConnection();  // tests: fault injection
  CoordinatorStats coordinatorStats();

 private:
  ControlOptions opts_;
  std::string address_;
  boost::asio::io_context io_;
  std::unique_ptr<Coordinator> coordinator_;
  std::unique_ptr<Client> client_;
  std::thread thread_;
};

}  // namespace wirewise::control
