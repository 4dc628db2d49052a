// startEvent of a chained communicator (runtime/profiler_chain.h): the event goes to wirewise if it is of a
// type wirewise asked for, to the chained plugin if it is of a type that plugin asked for, each with its
// own context and parent handles. A template over the descriptor because the chained plugin is given the
// very version of the descriptor NCCL gave us, copied, with only its handles replaced.
#pragma once

#include <type_traits>

#include "common/nccl/profiler.h"
#include "runtime/profiler_chain.h"

namespace wirewise::shim {

template <typename Descr>
struct ProfilerTableOf;
template <>
struct ProfilerTableOf<ncclProfilerEventDescr_v4_t> {
  using Table = ncclProfiler_v4_t;
  static constexpr int kVersion = 4;
};
template <>
struct ProfilerTableOf<ncclProfilerEventDescr_v5_t> {
  using Table = ncclProfiler_v5_t;
  static constexpr int kVersion = 5;
};
template <>
struct ProfilerTableOf<ncclProfilerEventDescr_v6_t> {
  using Table = ncclProfiler_v6_t;
  static constexpr int kVersion = 6;
};

// The two plugins' handles for a handle NCCL passes as a parent: a chain slot names both; anything else is
// wirewise's own (or null), which the chained plugin never saw.
struct ParentPair {
  void* ours;
  void* theirs;
};
inline ParentPair splitParent(chain::ChainComm* comm, void* parent) noexcept {
  chain::ChainSlot* s = chain::slotOf(parent);
  if (s == nullptr) return {parent, nullptr};
  ParentPair p{nullptr, nullptr};
  if (!chain::readParent(s, parent, &p.ours, &p.theirs) && comm != nullptr) comm->countStaleParent();
  return p;
}

// Our own handling of an event, as without chaining (shim_util.h's dispatch).
template <typename Descr>
ncclResult_t startOwnEvent(void* context, void** eHandle, Descr* d);

template <typename Descr>
[[gnu::noinline]] ncclResult_t startChainedEvent(void* context, void** eHandle, Descr* d) {
  using Table = typename ProfilerTableOf<Descr>::Table;
  const uint64_t type = d->type;
  chain::ChainComm* comm = nullptr;
  if (type == ncclProfileProxyOp) {
    // Under PXN the context and parent are another process's: neither may be read, so the op is ours only
    // (our core reads neither for a foreign op), as are its steps, whose parent it is.
    if (d->proxyOp.pid != chain::processId()) {
      chain::countUnforwarded();
      return startOwnEvent(chain::untagContext(context), eHandle, d);
    }
    comm = chain::commOf(context);
  } else if (type == ncclProfileProxyStep || type == ncclProfileNetPlugin) {
    // The context may be another process's too (the steps of a PXN op): the comm is found from the parent.
    chain::ChainSlot* p = chain::slotOf(d->parentObj);
    if (p == nullptr) {
      chain::countUnforwarded();
      return startOwnEvent(chain::untagContext(context), eHandle, d);
    }
    comm = static_cast<chain::ChainComm*>(p->head.owner);
  } else {
    comm = chain::commOf(context);
  }
  const chain::ChainedFace* face = comm->face();
  const ParentPair parent = splitParent(comm, d->parentObj);
  const bool toTheirs = (face->maskNow() & type) != 0 && face->version == ProfilerTableOf<Descr>::kVersion;
  chain::ChainSlot* slot = toTheirs ? comm->claim(type) : nullptr;  // null when full: not forwarded (counted)
  void* ours = nullptr;
  if ((comm->ourMask() & type) != 0) {
    Descr own = *d;  // our core reads no parentGroup: parentObj is the one handle to give back

    own.parentObj = parent.ours;
    startOwnEvent(comm->ownContext(), &ours, &own);
  }
  if (slot == nullptr) {
    *eHandle = ours;
    return ncclSuccess;
  }
  Descr their = *d;
  their.parentObj = parent.theirs;
  if constexpr (requires { their.coll.parentGroup; }) {  // v5 and v6 name the Group beside the API parent
    if (type == ncclProfileColl) their.coll.parentGroup = splitParent(comm, d->coll.parentGroup).theirs;
    if (type == ncclProfileP2p) their.p2p.parentGroup = splitParent(comm, d->p2p.parentGroup).theirs;
  }
  void* theirs = nullptr;
  try {  // a C++ exception across the C ABI is undefined behaviour; caught all the same
    static_cast<const Table*>(face->table)->startEvent(comm->theirContext(), &theirs, &their);
  } catch (...) {
    theirs = nullptr;
  }
  *eHandle = comm->publish(slot, ours, theirs);
  return ncclSuccess;
}

}  // namespace wirewise::shim
