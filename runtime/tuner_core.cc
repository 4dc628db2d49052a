#include "runtime/tuner_core.h"

#include <atomic>
#include <memory>
#include <new>

#include "adaptive/decision_table.h"
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
  std::atomic<uint64_t> calls{0}, applied{0}, kept{0};
};

nlohmann::json rangesJson(const DecisionTable& t) {
  nlohmann::json out = nlohmann::json::array();
  for (const auto& r : t.ranges()) {
    out.push_back({{"coll", r.coll >= 0 ? std::string(collName(static_cast<CollType>(r.coll))) : "any"},
                   {"min_bytes", r.minBytes},
                   {"max_bytes", r.maxBytes},
                   {"algo", std::string(algoName(r.decision.algo))},
                   {"proto", std::string(protoName(r.decision.proto))},
                   {"channels", r.decision.nChannels}});
  }
  return out;
}

void publish(Runtime& rt, TunerComm& c, std::shared_ptr<const DecisionTable> t, const std::string& source) {
  c.owned.push_back(t);
  c.table.store(t.get(), std::memory_order_release);
  char digest[24];
  std::snprintf(digest, sizeof digest, "%016llx", static_cast<unsigned long long>(t->digest()));
  rt.event({{"event", "table"},
            {"comm", Runtime::hexId(c.commId)},
            {"seq", c.calls.load(std::memory_order_relaxed)},
            {"reason", t->reason()},
            {"source", source},
            {"digest", digest},
            {"ranges", rangesJson(*t)}});
}

}  // namespace

ncclResult_t tunerInit(const TunerInitArgs& args, void** context) noexcept {
  if (context == nullptr) return ncclSuccess;
  *context = nullptr;
  log::setLogger(args.logger);
  Runtime* rt = nullptr;
  try {
    rt = Runtime::acquire();
    auto c = std::make_unique<TunerComm>();
    c->commId = args.hasCommId ? args.commId : ((1ull << 63) | gLocalCommIds.fetch_add(1));
    c->nRanks = args.nRanks;
    c->nNodes = args.nNodes;
    c->abi = args.abiVersion;
    c->mode = rt->settings().mode;
    rt->event({{"event", "comm_init"},
               {"comm", Runtime::hexId(c->commId)},
               {"face", "tuner"},
               {"abi", "tuner_v" + std::to_string(args.abiVersion)},
               {"nranks", args.nRanks},
               {"nnodes", args.nNodes}});

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
    WW_INFO(NCCL_INIT | NCCL_TUNING, "tuner_v%d comm %s: %zu ranks, %zu nodes, table from %s (%zu ranges)",
            args.abiVersion, Runtime::hexId(c->commId).c_str(), args.nRanks, args.nNodes, source.c_str(),
            table->ranges().size());
    *context = c.release();
  } catch (const std::exception& e) {
    WW_WARN(NCCL_INIT | NCCL_TUNING, "tuner init failed (%s); NCCL's own choices stand for this communicator",
            e.what());
    if (rt != nullptr) Runtime::release();
  } catch (...) {
    WW_WARN(NCCL_INIT | NCCL_TUNING, "tuner init failed; NCCL's own choices stand for this communicator");
    if (rt != nullptr) Runtime::release();
  }
  // A tuner init error fails communicator creation in NCCL 2.28: never return one.
  return ncclSuccess;
}

ncclResult_t tunerGetCollInfo(void* context, const CollRequest& req, CostTableView table, int* nChannels) noexcept {
  auto* c = static_cast<TunerComm*>(context);
  if (c == nullptr || nChannels == nullptr) return ncclSuccess;
  c->calls.fetch_add(1, std::memory_order_relaxed);  // seq: names the same collective on every rank
  if (c->mode != Mode::Apply) return ncclSuccess;
  const DecisionTable* t = c->table.load(std::memory_order_acquire);
  if (t == nullptr || t->isNeutral() || !table.valid()) return ncclSuccess;
  Decision d = t->lookup(req.collType, req.nBytes);
  if (d.keepsNccl()) return ncclSuccess;
  if (!req.costsKnown && (d.algo == kAny) != (d.proto == kAny)) return ncclSuccess;
  if (applyDecision(d, table, nChannels))
    c->applied.fetch_add(1, std::memory_order_relaxed);
  else
    c->kept.fetch_add(1, std::memory_order_relaxed);
  return ncclSuccess;
}

ncclResult_t tunerFinalize(void* context) noexcept {
  auto* c = static_cast<TunerComm*>(context);
  if (c == nullptr) return ncclSuccess;
  try {
    Runtime* rt = Runtime::acquire();
    rt->event({{"event", "comm_finalize"},
               {"comm", Runtime::hexId(c->commId)},
               {"face", "tuner"},
               {"collectives", c->calls.load()},
               {"applied", c->applied.load()},
               {"kept", c->kept.load()}});
    Runtime::release();
  } catch (...) {
  }
  delete c;
  Runtime::release();  // the reference taken at init
  return ncclSuccess;
}

}  // namespace wirewise
