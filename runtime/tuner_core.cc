#include "runtime/tuner_core.h"

#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cinttypes>
#include <memory>
#include <new>
#include <thread>

#include "adaptive/decision_table.h"
#include "adaptive/table_json.h"
#include "common/log_events.h"
#include "common/units.h"
#include "control/boundary.h"
#include "control/control_plane.h"
#include "control/member.h"
#include "control/sha256.h"
#include "runtime/face_notices.h"
#include "runtime/log.h"
#include "runtime/runtime.h"

namespace wirewise {
namespace {

// v2..v4 give no commId; these ids stand in for it in logs (high bit set so they cannot clash).
std::atomic<uint64_t> gLocalCommIds{0};

struct TunerComm {
  uint64_t commId = 0;
  size_t nRanks = 0, nNodes = 0;
  int abi = 5;
  Mode mode = Mode::Apply;
  // The table in force, read lock-free by getCollInfo. Every table ever published for this comm is
  // kept alive in `owned` until finalize, so a reader can never see a freed table.
  std::atomic<const DecisionTable*> table{nullptr};
  std::vector<std::shared_ptr<const DecisionTable>> owned;
  std::atomic<uint64_t> applied{0}, kept{0};

  // Agreement (docs/control-plane.md). gate->calls counts getCollInfo calls (seq names the same collective
  // on every rank) and gate->nextBoundary is where the comm next stops to take a verdict. Without a member
  // (sync off, observe mode, tuner v2..v4 with no commId) the gate is the comm's own, nextBoundary stays
  // kNoBoundary and the static table holds for the comm's life. With one, the gate is the member's:
  // deterministic mode stops at kB0; production mode stops nowhere until its I/O thread accepts a proposal
  // of B0 (control::Member::answer), so that nobody waits for a member that has not joined. After verdict
  // 0 only this comm's getCollInfo thread writes nextBoundary (NCCL issues a comm's collectives from one
  // thread at a time).
  control::Gate ownGate;
  control::Gate* gate = &ownGate;
  bool proposals = false;  // production mode: B0 is proposed and answered
  uint64_t nextIndex = 0;
  std::shared_ptr<control::Member> member;
  adapt::SightTable* sights = nullptr;  // member->sights: NCCL's cost tables for the policy
  // Cells (collBucket) this comm's getCollInfo has already been through once, sights or not: a byte the
  // hot path tests instead of a sight slot's state. Atomic (relaxed: a plain load on x86) because nothing
  // stops a caller from calling one comm's getCollInfo from two threads at once; NCCL does not.
  std::atomic<uint8_t> looked[kNumCollTypes * SizeBuckets::kCount] = {};
  std::string coordinator;
  int64_t syncTimeoutMs = 30000, joinTimeoutMs = 10000, giveUpMs = 0;
  // Time this comm's getCollInfo spent waiting for verdicts (and for its own I/O thread's answer), µs.
  uint64_t waitedUs = 0;
  // Set when this comm gave up waiting (WIREWISE_SYNC_GIVE_UP_MS): every later call returns an error.
  bool gaveUp = false;
};

int64_t steadyUs() {
  return std::chrono::duration_cast<std::chrono::microseconds>(std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

// How a wait at a boundary ended.
enum class WaitEnd {
  Verdict,   // the verdict arrived
  Released,  // production, before verdict 0: the proposal this comm stopped at was refused or replaced
  Static,    // the join never left the process: nobody can have counted this member, it keeps its table
  GaveUp     // WIREWISE_SYNC_GIVE_UP_MS passed: the collective fails
};

// Bounded, explained wait for verdict `nextIndex` at boundary `seq`. It keeps waiting, warning every
// syncTimeoutMs (a hang that explains itself beats a silent divergence), until the verdict comes, the
// wait is released (production before verdict 0: a proposal this member did not, or no longer, promise
// to stop at), the join turns out never to have left the process (deterministic mode), or giveUpMs passes
// (then c.gaveUp is set and the caller fails the collective).
WaitEnd waitForVerdict(TunerComm& c, uint64_t seq, const control::VerdictNode** out) {
  const auto start = std::chrono::steady_clock::now();
  auto pause = std::chrono::microseconds(1);
  int warned = 0;
  auto end = [&](WaitEnd e) {
    c.waitedUs += static_cast<uint64_t>(
        std::chrono::duration_cast<std::chrono::microseconds>(std::chrono::steady_clock::now() - start).count());
    return e;
  };
  for (;;) {
    if (const control::VerdictNode* n = c.member->tryTake(c.nextIndex, seq)) {
      if (warned > 0)
        WW_WARN(NCCL_TUNING, "comm %s: verdict for boundary %" PRIu64 " arrived after %lld ms",
                hexId(c.commId).c_str(), seq,
                static_cast<long long>(std::chrono::duration_cast<std::chrono::milliseconds>(
                                           std::chrono::steady_clock::now() - start)
                                           .count()));
      *out = n;
      return end(WaitEnd::Verdict);
    }
    if (c.proposals && c.nextIndex == 0) {
      // Not promised (refused, or replaced by a later proposal): go on with the table in force. Deciding:
      // this process's own I/O thread is between two stores (Member::answer); ask again at once.
      if (c.gate->nextBoundary.load() != seq || c.gate->proposal.load() == control::Gate::kRefused)
        return end(WaitEnd::Released);
      if (c.gate->proposal.load() == control::Gate::kDeciding) {
        std::this_thread::yield();
        continue;
      }
    }
    auto waitedMs =
        std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() - start).count();
    if (!c.proposals && !c.member->joinSent.load(std::memory_order_acquire) && waitedMs >= c.joinTimeoutMs) {
      WW_WARN(NCCL_TUNING, "comm %s: could not reach the coordinator at %s within %lld ms; observe-only",
              hexId(c.commId).c_str(), c.coordinator.c_str(), static_cast<long long>(waitedMs));
      return end(WaitEnd::Static);
    }
    if (c.giveUpMs > 0 && waitedMs >= c.giveUpMs) {
      WW_WARN(NCCL_TUNING,
              "comm %s: gave up after %lld ms at boundary %" PRIu64 " (collective %" PRIu64
              ") waiting for the verdict of coordinator %s (WIREWISE_SYNC_GIVE_UP_MS=%lld); this and every later "
              "collective of the communicator fails with ncclInternalError instead of risking ranks that choose "
              "differently; restart the job (or set WIREWISE_SYNC_GIVE_UP_MS=0 to wait for ever)",
              hexId(c.commId).c_str(), static_cast<long long>(waitedMs), c.nextIndex, seq,
              c.coordinator.c_str(), static_cast<long long>(c.giveUpMs));
      c.gaveUp = true;
      return end(WaitEnd::GaveUp);
    }
    if (waitedMs >= (warned + 1) * c.syncTimeoutMs) {
      ++warned;
      WW_WARN(NCCL_TUNING,
              "comm %s: waiting %lld ms at boundary %" PRIu64 " (collective %" PRIu64
              ") for the verdict of coordinator %s; every rank must switch tables at the same collective, so "
              "this rank waits",
              hexId(c.commId).c_str(), static_cast<long long>(waitedMs), c.nextIndex, seq,
              c.coordinator.c_str());
    }
    std::this_thread::sleep_for(pause);
    pause = std::min(pause * 2, std::chrono::microseconds(1000));
  }
}

// The rare path of getCollInfo: collective `seq` reached gate->nextBoundary. Out of line so that the hot
// path stays one compare. False: the comm gave up waiting (nextBoundary stays 0 so that every later call
// comes here and fails too).
__attribute__((noinline, cold)) bool crossBoundary(TunerComm& c, uint64_t seq) noexcept {
  if (c.gaveUp) return false;
  if (!c.member) {
    c.gate->nextBoundary.store(control::kNoBoundary);
    return true;
  }
  const control::VerdictNode* n = c.member->tryTake(c.nextIndex, seq);
  if (n == nullptr) {
    switch (waitForVerdict(c, seq, &n)) {
      case WaitEnd::Verdict:
        break;
      case WaitEnd::Released:  // the I/O thread moved the boundary (or took it back): nothing to do here
        return true;
      case WaitEnd::Static:
        c.gate->nextBoundary.store(control::kNoBoundary);
        return true;
      case WaitEnd::GaveUp:
        c.gate->nextBoundary.store(0);
        return false;
    }
  }
  if (n->observeOnly) {
    c.gate->nextBoundary.store(control::kNoBoundary);
    return true;
  }
  c.table.store(n->table.get(), std::memory_order_release);
  c.gate->nextBoundary.store(n->next);
  ++c.nextIndex;
  control::Member& m = *c.member;
  m.prevPassedAtUs.store(m.passedAtUs.load(std::memory_order_relaxed), std::memory_order_relaxed);
  m.passedAtUs.store(steadyUs(), std::memory_order_relaxed);
  m.passedSeq.store(seq, std::memory_order_relaxed);
  m.passed.store(n->index + 1, std::memory_order_release);
  return true;
}

// NCCL's untouched cost table, the first time a (collective, bucket) is seen: the policy's prior.
void recordSight(adapt::SightSlot& s, uint64_t nBytes, CostTableView table) noexcept {
  if (!table.valid()) return;
  // Taken by exactly one writer, even if two threads of one comm get here at once.
  uint8_t empty = adapt::SightTable::kEmpty;
  if (!s.state.compare_exchange_strong(empty, adapt::SightTable::kWriting, std::memory_order_relaxed)) return;
  s.bytes = nBytes;
  for (int a = 0; a < kNumAlgos; ++a)
    for (int p = 0; p < kNumProtos; ++p) s.cost[a][p] = table.inRange(a, p) ? table.get(a, p) : -1.0f;
  s.state.store(adapt::SightTable::kReady, std::memory_order_release);
}

uint64_t memberIdOf(const std::string& host, const void* context) {
  std::string who = host + "/" + std::to_string(getpid()) + "/" + std::to_string(reinterpret_cast<uintptr_t>(context));
  control::Digest d = control::sha256({reinterpret_cast<const uint8_t*>(who.data()), who.size()});
  uint64_t id = 0;
  for (int i = 0; i < 8; ++i) id = (id << 8) | d[static_cast<size_t>(i)];
  return id;
}


void publish(Runtime& rt, TunerComm& c, std::shared_ptr<const DecisionTable> t, const std::string& source) {
  c.owned.push_back(t);
  c.table.store(t.get(), std::memory_order_release);
  char digest[24];
  std::snprintf(digest, sizeof digest, "%016llx", static_cast<unsigned long long>(t->digest()));
  logev::RankTable ev;
  ev.comm = hexId(c.commId);
  ev.reason = t->reason();
  ev.source = source;
  ev.digest = digest;
  ev.ranges = logRanges(t->ranges());
  ev.seq = c.gate->calls.load(std::memory_order_relaxed);
  rt.event(ev);
}

}  // namespace

ncclResult_t tunerInit(const TunerInitArgs& args, void** context) noexcept {
  if (context == nullptr) return ncclSuccess;
  *context = nullptr;
  log::setLogger(args.logger);
  try {
    // Released on the way out unless the comm keeps it.
    RuntimeRef rt = RuntimeRef::acquire(processEnv(), logev::Face::Tuner);
    auto c = std::make_unique<TunerComm>();
    c->commId = args.hasCommId ? args.commId : ((1ull << 63) | gLocalCommIds.fetch_add(1));
    c->nRanks = args.nRanks;
    c->nNodes = args.nNodes;
    c->abi = args.abiVersion;
    c->mode = rt->settings().mode;
    rt->event(logev::CommInit{.comm = hexId(c->commId),
                              .face = std::string(logev::faceName(logev::Face::Tuner)),
                              .abi = "tuner_v" + std::to_string(args.abiVersion),
                              .nRanks = static_cast<int64_t>(args.nRanks),
                              .nNodes = static_cast<int64_t>(args.nNodes),
                              .rank = std::nullopt,
                              .commName = std::nullopt});
    noticeTunerFaces(*rt, args.abiVersion, processEnv());  // no profiler face, or a tuner older than v5

    // The static table depends only on the shared config file and the comm's shape (nRanks, nNodes),
    // so every rank that reads the same file builds the same table.
    std::shared_ptr<const DecisionTable> table = DecisionTable::neutral();
    std::string source = "builtin";
    if (c->mode == Mode::Apply && !rt->config().rules.empty()) {
      auto rules = rulesForComm(rt->config(), args.nRanks, args.nNodes);
      if (!rules.empty()) {
        table = DecisionTable::build(rules, "init");
        source = rt->settings().config;
      }
    }
    publish(*rt, *c, table, source);
    // Agreement needs the commId that only tuner v5 gives: v2..v4 comms keep their static table.
    if (args.hasCommId && c->mode == Mode::Apply && args.nRanks > 0) {
      if (control::ControlPlane* cp = rt->controlPlane()) {
        c->member = std::make_shared<control::Member>(c->commId, memberIdOf(rt->host(), c.get()),
                                                      static_cast<uint32_t>(args.nRanks),
                                                      static_cast<uint32_t>(args.nNodes), table->digest());
        c->member->sights = std::make_unique<adapt::SightTable>();
        c->sights = c->member->sights.get();
        c->coordinator = cp->address();
        c->syncTimeoutMs = rt->settings().syncTimeoutMs;
        c->joinTimeoutMs = rt->settings().joinTimeoutMs;
        c->giveUpMs = rt->settings().syncGiveUpMs;
        c->proposals = rt->settings().sync != SyncMode::Deterministic;
        c->gate = &c->member->gate;
        // Deterministic members stop at kB0 whoever has joined (reproducible runs); production members
        // stop nowhere until they accept a proposal (Member::answer).
        if (!c->proposals) c->gate->nextBoundary.store(control::kB0);
        cp->addMember(c->member);
      }
    }
    WW_INFO(NCCL_INIT | NCCL_TUNING, "tuner_v%d comm %s: %zu ranks, %zu nodes, table from %s (%zu ranges)",
            args.abiVersion, hexId(c->commId).c_str(), args.nRanks, args.nNodes, source.c_str(),
            table->ranges().size());
    *context = c.release();
    rt.keep();  // the comm's reference, given back at finalize
  } catch (const std::exception& e) {
    WW_WARN(NCCL_INIT | NCCL_TUNING, "tuner init failed (%s); NCCL's own choices stand for this communicator",
            e.what());
  } catch (...) {
    WW_WARN(NCCL_INIT | NCCL_TUNING, "tuner init failed; NCCL's own choices stand for this communicator");
  }
  // A tuner init error fails communicator creation in NCCL 2.28: never return one.
  return ncclSuccess;
}

namespace {

// getCollInfo in three parts, so that the common call is one straight line that keeps nothing live across a
// call (no registers to save): the gate, the checks that find the cell, and the table applied. The two rare
// events, a boundary and a cell's first sight, go out of line and finish the call themselves.

// The table in force applied to NCCL's cost table; cell == collBucket(req.collType, bucket of req.nBytes).
inline ncclResult_t applyTable(TunerComm& c, const CollRequest& req, int cell, CostTableView table,
                               int* nChannels) noexcept {
  // Every table, the neutral one included, answers kKeep where it has nothing to say, and observe mode
  // only ever has the neutral one.
  const DecisionTable* t = c.table.load(std::memory_order_acquire);
  if (t == nullptr) return ncclSuccess;
  const CostAction a = t->action(cell, req.nBytes);
  if (a.kind == CostAction::kKeep) return ncclSuccess;
  // Tuner v2's cost table is the shim's invention: "the cheapest of ..." would read nothing of NCCL's.
  if (!req.costsKnown && (a.kind == CostAction::kAlgoRow || a.kind == CostAction::kProtoColumn)) return ncclSuccess;
  if (applyAction(a, table, nChannels))
    c.applied.fetch_add(1, std::memory_order_relaxed);
  else
    c.kept.fetch_add(1, std::memory_order_relaxed);
  return ncclSuccess;
}

// The first call of a comm in a cell. The request travels by value (two registers): a reference would
// make every call build it in memory.
__attribute__((noinline, cold)) ncclResult_t firstLook(TunerComm& c, CollRequest req, int cell, CostTableView table,
                                                       int* nChannels) noexcept {
  c.looked[cell].store(1, std::memory_order_relaxed);
  if (c.sights != nullptr && req.costsKnown) recordSight(c.sights->slots[cell], req.nBytes, table);
  return applyTable(c, req, cell, table, nChannels);
}

inline ncclResult_t afterGate(TunerComm& c, const CollRequest& req, CostTableView table, int* nChannels) noexcept {
  if (static_cast<unsigned>(req.collType) >= static_cast<unsigned>(kNumCollTypes)) return ncclSuccess;
  const int cell = collBucket(req.collType, SizeBuckets::index(req.nBytes));
  if (c.looked[cell].load(std::memory_order_relaxed) == 0) [[unlikely]]
    return firstLook(c, req, cell, table, nChannels);
  return applyTable(c, req, cell, table, nChannels);
}

__attribute__((noinline, cold)) ncclResult_t atBoundary(TunerComm& c, uint64_t seq, CollRequest req,
                                                        CostTableView table, int* nChannels) noexcept {
  if (!crossBoundary(c, seq)) return ncclInternalError;  // after WIREWISE_SYNC_GIVE_UP_MS at one boundary
  return afterGate(c, req, table, nChannels);
}

}  // namespace

ncclResult_t tunerGetCollInfo(void* context, const CollRequest& req, CostTableView table, int* nChannels) noexcept {
  auto* c = static_cast<TunerComm*>(context);
  if (c == nullptr) return ncclSuccess;  // (a null nChannels is never written: applyAction checks it)
  // seq names the same collective on every rank; the hot path's only agreement work is this compare.
  // Both accesses are sequentially consistent (a locked add and a plain load on x86): a proposal's answer
  // depends on their order against the I/O thread's (control::Member::answer).
  control::Gate& g = *c->gate;
  const uint64_t seq = g.calls.fetch_add(1);
  if (seq >= g.nextBoundary.load()) [[unlikely]]
    return atBoundary(*c, seq, req, table, nChannels);
  return afterGate(*c, req, table, nChannels);
}

ncclResult_t tunerGetChunkSize(void* context, const ChunkRequest& req, size_t* chunkSize) noexcept {
  auto* c = static_cast<TunerComm*>(context);
  if (c == nullptr || chunkSize == nullptr || c->mode != Mode::Apply) return ncclSuccess;
  if (req.collType < 0 || req.collType >= kNumCollTypes) return ncclSuccess;
  // The table getCollInfo last switched to: tables change only inside getCollInfo, at boundaries of the
  // comm's collective sequence, so every rank reads the same one here.
  const DecisionTable* t = c->table.load(std::memory_order_acquire);
  if (t == nullptr || t->isNeutral()) return ncclSuccess;
  const Decision d = t->lookup(req.collType, req.nBytes);
  if (d.chunkBytes == 0) return ncclSuccess;
  if ((d.algo != kAny && d.algo != req.algo) || (d.proto != kAny && d.proto != req.proto)) return ncclSuccess;
  const uint32_t grain = protoGrainBytes(req.proto);
  if (grain == 0 || d.chunkBytes < grain) return ncclSuccess;
  *chunkSize = d.chunkBytes / grain * grain;
  return ncclSuccess;
}

ncclResult_t tunerFinalize(void* context) noexcept {
  auto* c = static_cast<TunerComm*>(context);
  if (c == nullptr) return ncclSuccess;
  RuntimeRef atInit = RuntimeRef::adopt();  // the reference taken at init: released last, after the comm goes
  try {
    RuntimeRef rt = RuntimeRef::acquire();
    if (c->member)
      if (control::ControlPlane* cp = rt->controlPlane()) cp->removeMember(c->member);
    logev::CommFinalize ev;
    ev.comm = hexId(c->commId);
    ev.face = logev::faceName(logev::Face::Tuner);
    ev.collectives = c->gate->calls.load();
    ev.applied = c->applied.load();
    ev.kept = c->kept.load();
    ev.boundaries = c->nextIndex;
    if (c->member) ev.waitedUs = c->waitedUs;
    rt->event(ev);
  } catch (...) {
  }
  delete c;
  return ncclSuccess;
}

}  // namespace wirewise
