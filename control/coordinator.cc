#include "control/coordinator.h"

#include <cinttypes>
#include <cstdio>

#include "common/units.h"

namespace wirewise::control {

namespace asio = boost::asio;
using asio::ip::tcp;

namespace {
constexpr size_t kMaxSessions = 16384;
constexpr size_t kMaxQueuedBytes = size_t{64} << 20;  // a member that stops reading is dropped
constexpr auto kTick = std::chrono::milliseconds(2);
constexpr auto kIdleTick = std::chrono::milliseconds(50);

}  // namespace

Coordinator::Coordinator(asio::io_context& io, tcp::acceptor acceptor, std::vector<uint8_t> jobKey,
                         AgreementParams params, std::unique_ptr<Policy> policy, StaticRulesFn staticRules, LogFn log)
    : io_(io),
      acceptor_(std::move(acceptor)),
      timer_(io),
      jobKey_(std::move(jobKey)),
      params_(params),
      policy_(std::move(policy)),
      staticRules_(std::move(staticRules)),
      log_(std::move(log)) {
  // Calling an empty LogFn throws; from tick() that would end the timer for good (no join timeout or
  // production report wait would fire again, and the verdict just issued would not be sent).
  if (!log_) log_ = [](bool, const std::string&) {};
  boost::system::error_code ec;
  port_ = acceptor_.local_endpoint(ec).port();
}

int64_t Coordinator::nowMs() const {
  return std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() - t0_).count();
}

void Coordinator::start() {
  accept();
  tick();
}

void Coordinator::stop() {
  stopped_ = true;
  boost::system::error_code ec;
  acceptor_.close(ec);
  timer_.cancel();
  auto sessions = sessions_;
  for (auto& s : sessions) s->close("coordinator stopping");
  sessions_.clear();
}

void Coordinator::accept() {
  acceptor_.async_accept([this](boost::system::error_code ec, tcp::socket sock) {
    if (stopped_) return;
    if (!ec) {
      if (sessions_.size() >= kMaxSessions) {
        sock.close(ec);
      } else {
        ++stats_.accepted;
        auto s = std::make_shared<Session>(std::move(sock), jobKey_, true);
        sessions_.insert(s);
        std::weak_ptr<Session> weak = s;
        s->start(
            [this, weak](const Frame& f) {
              if (auto sp = weak.lock()) onFrame(sp, f);
            },
            [this, weak, peer = s->peer()](const std::string& why) {
              if (why.rfind("rejected", 0) == 0) {
                ++stats_.rejected;
                log_(true, "coordinator: dropped connection from " + peer + ": " + why);
              }
              if (auto sp = weak.lock()) sessions_.erase(sp);
            });
      }
    }
    accept();
  });
}

void Coordinator::onFrame(const std::shared_ptr<Session>& s, const Frame& f) {
  int64_t now = nowMs();
  if (idle_ && !stopped_) armTick(kTick);  // a join or a report may start a deadline
  if (f.type == MsgType::Join) {
    Join j;
    if (!decode(f.payload, &j)) return s->close("rejected: malformed join");
    ++stats_.joins;
    auto it = comms_.find(j.commId);
    if (it == comms_.end()) {
      Comm c;
      c.agreement = std::make_unique<CommAgreement>(j.commId, j.nRanks, j.nNodes, params_, policy_.get());
      if (staticRules_) c.staticDigest = DecisionTable::build(staticRules_(j.commId, j.nRanks, j.nNodes), "")->digest();
      it = comms_.emplace(j.commId, std::move(c)).first;
    }
    Comm& c = it->second;
    if (j.nRanks != c.agreement->nRanks()) {
      log_(true, "coordinator: member " + hexId(j.memberId) + " of comm " + hexId(j.commId) + " says " +
                     std::to_string(j.nRanks) + " ranks, others " + std::to_string(c.agreement->nRanks()) +
                     "; ignored (it keeps its own table, and without it the comm's schedule does not start)");
      return;
    }
    if (staticRules_ && j.configDigest != c.staticDigest)
      log_(true, "coordinator: member " + hexId(j.memberId) + " (" + s->peer() + ") of comm " + hexId(j.commId) +
                     " has a different static table (digest " + hexId(j.configDigest) + ", coordinator's " +
                     hexId(c.staticDigest) + "); the coordinator's is distributed");
    // Every verdict issued so far has been broadcast (flush follows every change): re-send the ones this
    // member lacks (a reconnect, or a second member of the comm on the same connection), then subscribe.
    const size_t before = c.agreement->verdicts().size();
    const std::optional<Propose> open = c.agreement->openProposal();
    c.agreement->join(j.memberId, now);
    for (uint64_t k = j.nextVerdict; k < before; ++k) s->send(MsgType::Verdict, encode(c.agreement->verdicts()[k]));
    // A proposal still open was sent before this connection subscribed (a reconnect): its answer is owed.
    if (open && before == 0) s->send(MsgType::Propose, encode(*open));
    c.subscribers[s.get()] = s;
    flush(j.commId, c);
    return;
  }
  if (f.type == MsgType::Answer) {
    Answer a;
    if (!decode(f.payload, &a)) return s->close("rejected: malformed answer");
    ++stats_.answers;
    auto it = comms_.find(a.commId);
    if (it == comms_.end()) return;
    it->second.agreement->answer(a, now);
    flush(a.commId, it->second);
    return;
  }
  if (f.type == MsgType::Report || f.type == MsgType::Reports) {
    batch_.clear();
    if (f.type == MsgType::Report) {
      batch_.emplace_back();
      if (!decode(f.payload, &batch_.back())) return s->close("rejected: malformed report");
    } else if (!decodeReports(f.payload, &batch_)) {
      return s->close("rejected: malformed reports");
    }
    for (const Report& r : batch_) {
      ++stats_.reports;
      auto it = comms_.find(r.commId);
      if (it == comms_.end()) continue;
      it->second.agreement->report(r, now);
      flush(r.commId, it->second);
    }
    return;
  }
  if (f.type == MsgType::Leave) {
    Leave l;
    if (!decode(f.payload, &l)) return s->close("rejected: malformed leave");
    return;
  }
  s->close("rejected: unexpected message type from a member");
}

// Sends `payload` to every open subscriber of the comm, dropping the closed ones and those that stopped
// reading.
void Coordinator::broadcast(Comm& c, MsgType type, const std::vector<uint8_t>& payload) {
  for (auto it = c.subscribers.begin(); it != c.subscribers.end();) {
    auto sp = it->second.lock();
    if (!sp || !sp->open()) {
      it = c.subscribers.erase(it);
      continue;
    }
    if (sp->queuedBytes() > kMaxQueuedBytes) {
      sp->close("rejected: not reading its verdicts");
      it = c.subscribers.erase(it);
      continue;
    }
    sp->send(type, payload);
    ++it;
  }
}

void Coordinator::flush(uint64_t commId, Comm& c) {
  if (std::optional<Propose> p = c.agreement->takeNewProposal()) {
    ++stats_.proposals;
    broadcast(c, MsgType::Propose, encode(*p));
  }
  auto fresh = c.agreement->takeNew();
  if (fresh.empty()) return;
  // The guard's findings are made with the newest verdict: a WARN, since a rank-dependent default is the
  // NVIDIA/nccl #1136 hang that the pin prevents.
  for (const std::string& note : c.agreement->takeNotes())
    log_(true, "coordinator: comm " + hexId(commId) + ": " + note + "; from verdict " +
                   std::to_string(fresh.back().index) + " at collective " + std::to_string(fresh.back().boundary));
  stats_.verdicts += fresh.size();
  for (const auto& v : fresh) broadcast(c, MsgType::Verdict, encode(v));
}

void Coordinator::tick() {
  if (stopped_) return;
  int64_t now = nowMs();
  for (auto& [id, c] : comms_) {
    if (c.agreement->nextDeadlineMs(now) != 0) continue;
    const bool hadVerdict = !c.agreement->verdicts().empty();
    const bool wasParked = c.agreement->parked();
    c.agreement->tick(now);
    if (!wasParked && c.agreement->parked())
      log_(true, "coordinator: comm " + hexId(id) + ": " + std::to_string(c.agreement->parkedSilent()) + " of " +
                     std::to_string(c.agreement->nRanks()) + " members did not answer the proposal of its first "
                     "boundary within " + std::to_string(params_.answerTimeoutMs) +
                     " ms; the others go on with their tables, and the schedule is proposed again when one "
                     "of them answers (a hung or foreign process holds a member's place)");
    if (!hadVerdict && c.agreement->observeOnly())
      log_(true, "coordinator: comm " + hexId(id) + ": " + std::to_string(c.agreement->joined()) + " of " +
                     std::to_string(c.agreement->nRanks()) + " members joined in time; observe-only");
    flush(id, c);
  }
  // Every kTick while some comm has a deadline to watch (a production report wait, a deterministic join
  // timeout); otherwise rarely, and again every kTick as soon as a frame may have started one (onFrame).
  bool pending = false;
  for (auto& [id, c] : comms_) pending = pending || c.agreement->nextDeadlineMs(now) >= 0;
  armTick(pending ? kTick : kIdleTick);
}

void Coordinator::armTick(std::chrono::milliseconds after) {
  idle_ = after != kTick;
  const uint64_t gen = ++tickGen_;  // a tick armed again replaces this one, even if its handler is queued
  timer_.expires_after(after);
  timer_.async_wait([this, gen](boost::system::error_code ec) {
    if (!ec && gen == tickGen_) tick();
  });
}

}  // namespace wirewise::control
