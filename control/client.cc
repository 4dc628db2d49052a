#include "control/client.h"

#include <algorithm>
#include <boost/asio/connect.hpp>

#include "common/settings.h"

namespace wirewise::control {

namespace asio = boost::asio;
using asio::ip::tcp;

namespace {
constexpr auto kPoll = std::chrono::microseconds(500);
constexpr auto kIdlePoll = std::chrono::microseconds(20000);
constexpr auto kRetry = std::chrono::milliseconds(100);
constexpr auto kHelloTimeout = std::chrono::milliseconds(2000);
}  // namespace

Client::Client(asio::io_context& io, std::string host, uint16_t port, std::vector<uint8_t> jobKey, LogFn log,
               VerdictFn onVerdict, ReportFillFn fill)
    : io_(io),
      host_(std::move(host)),
      port_(port),
      jobKey_(std::move(jobKey)),
      log_(std::move(log)),
      onVerdict_(std::move(onVerdict)),
      fill_(std::move(fill)),
      tick_(io),
      retry_(io),
      hello_(io) {}

void Client::start() {
  connect();
  tick();
}

void Client::stop() {
  stopped_ = true;
  tick_.cancel();
  retry_.cancel();
  hello_.cancel();
  if (session_) session_->close("stopping");
  session_.reset();
}

void Client::add(std::shared_ptr<Member> m) {
  members_.push_back(m);
  if (session_ && session_->open()) join(*m);
}

void Client::remove(const std::shared_ptr<Member>& m) {
  std::erase(members_, m);
  if (std::none_of(members_.begin(), members_.end(), [&](const auto& o) { return o->commId() == m->commId(); }))
    lastTables_.erase(m->commId());
  if (session_ && session_->open()) session_->send(MsgType::Leave, encode(Leave{m->commId(), m->memberId()}));
}

void Client::cut() {
  if (session_) session_->close("cut by test");
}

void Client::join(Member& m) {
  Join j{m.commId(), m.memberId(), m.nRanks(), m.nNodes(), m.configDigest(), m.delivered()};
  session_->send(MsgType::Join, encode(j));
  m.joinSent.store(true, std::memory_order_release);
  // Re-send the newest report after a reconnect: the coordinator ignores one it already has.
  uint64_t p = m.passed.load(std::memory_order_acquire);
  m.reported = p > 0 ? p - 1 : 0;
}

void Client::connect() {
  if (stopped_ || connecting_) return;
  connecting_ = true;
  auto sock = std::make_shared<tcp::socket>(io_);
  boost::system::error_code ec;
  auto addr = asio::ip::make_address(host_, ec);
  std::vector<tcp::endpoint> eps;
  if (!ec) {
    eps.emplace_back(addr, port_);
  } else {
    tcp::resolver res(io_);
    for (const auto& e : res.resolve(host_, std::to_string(port_), ec)) eps.push_back(e.endpoint());
    if (ec || eps.empty()) {
      connecting_ = false;
      return retryLater("cannot resolve " + host_ + ": " + ec.message());
    }
  }
  // A coordinator that never answers (SYNs dropped by a firewall, a host that is gone, a listener that
  // accepts and never speaks) is as unreachable as a closed port: connecting and the handshake together
  // get kHelloTimeout, then it is said once (retryLater) and tried again.
  auto timedOut = std::make_shared<bool>(false);
  hello_.expires_after(kHelloTimeout);
  hello_.async_wait([this, sock, timedOut](boost::system::error_code hec) {
    if (hec || stopped_) return;
    const std::string why = "no answer within " + std::to_string(kHelloTimeout.count()) + " ms";
    if (connecting_) {
      *timedOut = true;
      boost::system::error_code ignored;
      sock->close(ignored);  // the connect's handler runs with an error and retries
    } else if (session_ && !session_->keyed()) {
      session_->close(why);
    }
  });
  asio::async_connect(*sock, eps, [this, sock, timedOut](boost::system::error_code cec, const tcp::endpoint&) {
    connecting_ = false;
    if (stopped_) return;
    if (cec) {
      hello_.cancel();
      return retryLater(*timedOut ? "no answer within " + std::to_string(kHelloTimeout.count()) + " ms"
                                  : cec.message());
    }
    ++connects_;
    session_ = std::make_shared<Session>(std::move(*sock), jobKey_, false);
    std::weak_ptr<Session> weak = session_;
    session_->start([this](const Frame& f) { onFrame(f); },
                    [this, weak](const std::string& why) {
                      if (stopped_) return;
                      auto sp = weak.lock();
                      if (sp && sp == session_) session_.reset();
                      retryLater("connection lost: " + why);
                    });
    for (auto& m : members_) join(*m);
  });
}

void Client::retryLater(const std::string& why) {
  if (stopped_) return;
  if (!warned_ && log_)
    log_(true, "control plane: coordinator " + host_ + ":" + std::to_string(port_) + " unreachable (" + why +
                   "); retrying. Communicators keep their table meanwhile and nobody waits for this process (one "
                   "that has already agreed on a boundary waits there for its verdict). Fix: give every rank an "
                   "address they can all reach in " + settingName(&Settings::coordinator) +
                   "=host:port (or the launcher's MASTER_ADDR), open that port between the nodes, or set " +
                   settingName(&Settings::sync) + "=off");
  // A lost connection is retried at once (the coordinator is probably still there); then every kRetry.
  retry_.expires_after(warned_ ? kRetry : std::chrono::milliseconds(0));
  warned_ = true;
  retry_.async_wait([this](boost::system::error_code ec) {
    if (!ec) connect();
  });
}

void Client::onFrame(const Frame& f) {
  // An authenticated frame: this is the job's coordinator (a connection alone is not proof: another job's
  // coordinator accepts, then refuses the key). Only now is the trouble over.
  if (warned_) {
    warned_ = false;
    if (log_) log_(false, "control plane: reconnected to coordinator " + host_ + ":" + std::to_string(port_));
  }
  if (f.type == MsgType::Propose) {
    Propose p;
    if (!decode(f.payload, &p)) {
      if (session_) session_->close("rejected: malformed proposal");
      return;
    }
    for (auto& m : members_)
      if (m->commId() == p.commId)
        if (std::optional<Answer> a = m->answer(p); a && session_) session_->send(MsgType::Answer, encode(*a));
    return;
  }
  if (f.type != MsgType::Verdict) {
    if (session_) session_->close("rejected: unexpected message type from the coordinator");
    return;
  }
  Verdict v;
  if (!decode(f.payload, &v)) {
    if (session_) session_->close("rejected: malformed verdict");
    return;
  }
  std::shared_ptr<const DecisionTable> table;  // built once, on first need, for all members of the comm
  for (auto& m : members_) {
    if (m->commId() != v.commId || m->delivered() != v.index) continue;
    if (!table && !v.observeOnly) {
      LastTable& last = lastTables_[v.commId];
      if (!last.table || last.rules != v.rules || last.reason != v.reason)
        last = {v.rules, v.reason, DecisionTable::build(v.rules, v.reason)};
      table = last.table;
    }
    if (m->deliver(v, table) != nullptr && onVerdict_) onVerdict_(*m, v);
  }
  if (idle_) armTick(kPoll);  // a schedule has started: its first report is due at B0
}

void Client::tick() {
  if (stopped_) return;
  if (session_ && session_->open()) {
    // Members that passed a boundary since the last poll report together: one frame (one MAC, one write)
    // for as many reports as fit.
    ReportBatcher batch;
    const int64_t nowUs =
        std::chrono::duration_cast<std::chrono::microseconds>(std::chrono::steady_clock::now().time_since_epoch())
            .count();
    for (auto& m : members_) {
      m->markRate(nowUs);  // the steady clock, as the getCollInfo thread's passedAtUs
      uint64_t p = m->passed.load(std::memory_order_acquire);
      if (p <= m->reported) continue;
      m->reported = p;
      Report r{m->commId(), m->memberId(), p - 1, m->passedSeq.load(std::memory_order_relaxed),
               m->lastIntervalUs(),
               {},
               {},
               {}};
      // Evidence is optional: a report without it still lets the boundary move on.
      if (fill_) {
        try {
          fill_(*m, &r);
        } catch (const std::exception&) {
          r.samples.clear(), r.sights.clear(), r.links.clear();
        }
      }
      batch.add(r);
    }
    auto payloads = batch.finish();
    for (const std::vector<uint8_t>& p : payloads) session_->send(MsgType::Reports, p);
  }
  // Fixed-rate polls on the steady clock's grid, not a period after the last one: every Client of an
  // io_context (the benchmark runs many processes' clients on one thread) wakes in the same pass instead
  // of once each, and a slow tick does not push later ones back. Only members past verdict 0 pass
  // boundaries to report: until one is, poll rarely (a process of a job whose schedule has not started
  // costs the machine next to nothing), and poll at once when verdict 0 comes (onFrame).
  const bool active = std::any_of(members_.begin(), members_.end(), [](const auto& m) { return m->delivered() > 0; });
  armTick(active ? kPoll : kIdlePoll);
}

void Client::armTick(std::chrono::microseconds period) {
  idle_ = period != kPoll;
  const uint64_t gen = ++tickGen_;  // a tick armed again replaces this one, even if its handler is queued
  auto now = std::chrono::steady_clock::now().time_since_epoch();
  tick_.expires_at(std::chrono::steady_clock::time_point((now / period + 1) * period));
  tick_.async_wait([this, gen](boost::system::error_code ec) {
    if (!ec && gen == tickGen_) tick();
  });
}

}  // namespace wirewise::control
