#include "control/control_plane.h"

#include <fcntl.h>

#include "control/adaptive_policy.h"

#include <boost/asio/post.hpp>
#include <future>

namespace wirewise::control {

namespace asio = boost::asio;
using asio::ip::tcp;

namespace {
std::unique_ptr<Policy> makePolicy(const ControlOptions& o) {
  switch (o.policy) {
    case PolicyKind::RandomTest: return makeRandomTablePolicy(o.policySeed);
    case PolicyKind::Adaptive: return makeAdaptivePolicy(o.adaptive, o.policyEvent);
    case PolicyKind::Static: break;
  }
  return makeKeepStaticPolicy(o.staticRules);
}
}  // namespace

ControlPlane::ControlPlane(ControlOptions opts) : opts_(std::move(opts)) {
  address_ = opts_.host + ":" + std::to_string(opts_.port);
  if (opts_.mayHost) {
    // The rendezvous host may be a name (torchrun's MASTER_ADDR, a SLURM node list): bind each of its
    // addresses in turn. Only a local one binds, so the coordinator starts on the host the name stands for.
    std::vector<asio::ip::address> addrs;
    boost::system::error_code rec;
    if (auto addr = asio::ip::make_address(opts_.host, rec); !rec) {
      addrs.push_back(addr);
    } else {
      tcp::resolver res(io_);
      for (const auto& e : res.resolve(opts_.host, "", rec)) addrs.push_back(e.endpoint().address());
    }
    for (const asio::ip::address& addr : addrs) {
      if (coordinator_) break;
      boost::system::error_code ec;
      tcp::acceptor acc(io_);
      tcp::endpoint ep(addr, opts_.port);
      acc.open(ep.protocol(), ec);
      if (!ec) acc.set_option(tcp::acceptor::reuse_address(true), ec);
      if (!ec) acc.bind(ep, ec);
      if (!ec) acc.listen(asio::socket_base::max_listen_connections, ec);
      if (!ec && opts_.port == 0) {  // a coordinator of this process's own: the port the kernel picked
        opts_.port = acc.local_endpoint(ec).port();
        address_ = opts_.host + ":" + std::to_string(opts_.port);
      }
      if (!ec) ::fcntl(acc.native_handle(), F_SETFD, FD_CLOEXEC);  // a started program must not hold the port
      if (!ec) {
        coordinator_ = std::make_unique<Coordinator>(io_, std::move(acc), opts_.jobKey, opts_.params, makePolicy(opts_),
                                                     opts_.staticRules, opts_.log);
        coordinator_->start();
        if (opts_.log) opts_.log(false, "control plane: hosting the coordinator on " + address_);
      }
    }
  }
  client_ = std::make_unique<Client>(io_, opts_.host, opts_.port, opts_.jobKey, opts_.log, opts_.onVerdict,
                                     opts_.fillReport);
  client_->start();
  thread_ = std::thread([this] {
    for (;;) {
      try {
        io_.run();
        return;
      } catch (const std::exception& e) {
        // A handler threw (memory?): log and keep serving; members wait rather than diverge.
        if (opts_.log) opts_.log(true, std::string("control plane: ") + e.what());
      }
    }
  });
}

ControlPlane::~ControlPlane() {
  std::promise<void> done;
  asio::post(io_, [&] {
    client_->stop();
    if (coordinator_) coordinator_->stop();
    done.set_value();
  });
  done.get_future().wait();
  io_.stop();
  if (thread_.joinable()) thread_.join();
}

void ControlPlane::addMember(std::shared_ptr<Member> m) {
  asio::post(io_, [this, m] { client_->add(m); });
}

void ControlPlane::removeMember(std::shared_ptr<Member> m) {
  asio::post(io_, [this, m] { client_->remove(m); });
}

void ControlPlane::cutConnection() {
  asio::post(io_, [this] { client_->cut(); });
}

CoordinatorStats ControlPlane::coordinatorStats() {
  std::promise<CoordinatorStats> p;
  asio::post(io_, [&] { p.set_value(coordinator_ ? coordinator_->stats() : CoordinatorStats{}); });
  return p.get_future().get();
}

}  // namespace wirewise::control
