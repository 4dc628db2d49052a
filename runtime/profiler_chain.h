// Profiler chaining (WIREWISE_PROFILER_CHAIN, issue #20): NCCL loads one profiler plugin (NVIDIA/nccl #1981),
// so wirewise opens a second one as NCCL would and forwards every init, event, state and finalize to it with
// its own context and handles: a team keeps NCCL Inspector beside wirewise (docs/telemetry.md "Chaining a
// second profiler").
//
// A chained communicator's context, as NCCL holds it, is its ChainComm's address with bit 0 set: the
// version shims test that bit (one predictable branch when chaining is off) and send chained events through
// plugin/profiler_chain_shim.h. An event the chained plugin tracks gets a ChainSlot from the comm's
// preallocated pool, and NCCL gets the slot's handle; stopEvent and recordEventState, which carry no
// context, find the slot from its head (type kChainSlotType) as they find every sink's slots
// (telemetry/slot_tag.h), and the slot names both plugins' handles. An event only wirewise tracks gets
// wirewise's own handle, exactly as without chaining.
//
// Slots are claimed in turn around the pool (O(1), at most kProbe looks, no lock) and, once stopped, keep
// their two handles until the pool comes round again: NCCL stops a Coll before its KernelCh children and
// ProxyOps start, and those still name it as their parent. A seqlock on the slot's generation tells a late
// child whether the handles it reads are still that parent's. The pool is two rings, one per lane: the
// launch side's events (Group, Coll, P2p, the API events, KernelLaunch, CeColl), whose children may start
// after their stop, and the proxy side's (ProxyOp, ProxyStep, ProxyCtrl, KernelCh, NetPlugin, the CE
// children), which come by the thousand per collective. A parent's slot is thus reused only after a ring's
// worth of launch-side events, however busy the proxy thread is.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

#include "common/nccl/profiler.h"
#include "runtime/profiler_core.h"
#include "telemetry/slot_tag.h"

namespace wirewise::chain {

// A chain slot's head type: no NCCL event bit (those end at 1 << 14), so no sink's head can carry it. Below
// bit 31, so that the routing test of every stop and record (profiler_core.cc) stays one instruction with
// an immediate operand.
inline constexpr uint64_t kChainSlotType = uint64_t{1} << 30;

// The bit that marks a chained comm's context (contexts are heap objects, at least 8-byte aligned).
inline constexpr uintptr_t kChainedBit = 1;
inline bool isChained(void* context) { return (reinterpret_cast<uintptr_t>(context) & kChainedBit) != 0; }
inline void* untagContext(void* context) {
  return reinterpret_cast<void*>(reinterpret_cast<uintptr_t>(context) & ~kChainedBit);
}

// The chained plugin's face for the one ABI version NCCL speaks to us; its stop, record and finalize have
// the same C type in v4, v5 and v6.
struct ChainedFace {
  int version = 0;
  const void* table = nullptr;  // its ncclProfiler_v<version>_t
  const char* name = "";        // its name member, for logs
  int* mask = nullptr;          // the process-global int it was given as its eActivationMask
  ncclResult_t (*stop)(void*) = nullptr;
  ncclResult_t (*record)(void*, ncclProfilerEventState_t, ncclProfilerEventStateArgs_v5_t*) = nullptr;
  ncclResult_t (*finalize)(void*) = nullptr;
  uint64_t maskNow() const noexcept { return static_cast<uint32_t>(__atomic_load_n(mask, __ATOMIC_RELAXED)); }
};

struct alignas(kSlotAlign) ChainSlot {
  SlotHead head;                  // type kChainSlotType, owner the ChainComm
  std::atomic<uint32_t> gen{0};   // odd: live; even: free, still holding its last life's handles
  std::atomic<void*> ours{nullptr};
  std::atomic<void*> theirs{nullptr};
};

class ChainComm {
 public:
  // Slots each look at from where the cursor points before the event goes unforwarded.
  static constexpr uint32_t kProbe = 4;

  ChainComm(const ChainedFace* face, void* ownContext, uint64_t ourMask, size_t poolSize);
  ChainComm(const ChainComm&) = delete;
  ChainComm& operator=(const ChainComm&) = delete;

  const ChainedFace* face() const { return face_; }
  void* ownContext() const { return ownContext_; }
  void* theirContext() const { return theirContext_; }
  void setTheirContext(void* c) { theirContext_ = c; }
  uint64_t ourMask() const { return ourMask_; }
  uint32_t poolSize() const { return nSlots_; }
  const ChainSlot* slot(uint32_t i) const { return &slots_[i]; }

  // Which ring an event type's slot comes from (see the top of this file).
  static constexpr uint64_t kLaunchSide = ncclProfileGroup | ncclProfileColl | ncclProfileP2p |
                                          ncclProfileGroupApi | ncclProfileCollApi | ncclProfileP2pApi |
                                          ncclProfileKernelLaunch | ncclProfileCeColl;
  static constexpr int laneOf(uint64_t type) { return (type & kLaunchSide) != 0 ? 0 : 1; }

  // A free slot of the event type's ring, made live, or null (counted) when kProbe slots in turn are all
  // live.
  ChainSlot* claim(uint64_t type) noexcept;
  // Fills a claimed slot and returns its handle; with theirs null the slot is freed and ours returned.
  void* publish(ChainSlot* s, void* ours, void* theirs) noexcept;

  void countStaleParent() noexcept { staleParents_.fetch_add(1, std::memory_order_relaxed); }
  uint64_t poolFull() const noexcept { return poolFull_.load(std::memory_order_relaxed); }
  uint64_t staleParents() const noexcept { return staleParents_.load(std::memory_order_relaxed); }

 private:
  const ChainedFace* face_;
  void* ownContext_;
  void* theirContext_ = nullptr;
  uint64_t ourMask_;
  uint32_t nSlots_;  // a power of two, at least 2: two rings of nSlots_ / 2
  std::unique_ptr<ChainSlot[]> slots_;
  std::atomic<uint64_t> cursor_[2] = {0, 0};  // per lane
  std::atomic<uint64_t> poolFull_{0}, staleParents_{0};
};

// The slot a handle names, or null when it is no chain slot (null, a sink's handle). Only for handles of
// this process: a PXN ProxyOp's parent belongs to another process and must never reach here.
inline ChainSlot* slotOf(void* handle) noexcept {
  if (handle == nullptr || slot_tag::subOf(handle) != 0) return nullptr;
  const SlotHead* h = slot_tag::headOf(handle);
  return h->type == kChainSlotType ? reinterpret_cast<ChainSlot*>(const_cast<SlotHead*>(h)) : nullptr;
}

// Both handles of the slot a parent handle names, live or stopped (its children may start after its
// stop), unless the slot has been claimed again since: then false.
bool readParent(ChainSlot* s, void* handle, void** ours, void** theirs) noexcept;

// A chained comm's ChainComm (bit 0 cleared).
inline ChainComm* commOf(void* context) noexcept { return static_cast<ChainComm*>(untagContext(context)); }

// This process's id, cached at the first chained init: the PXN test of every chained ProxyOp.
int processId() noexcept;
// Events that no chained comm could be found for: a PXN ProxyOp (another process's context and parent),
// a ProxyStep or NetPlugin event whose parent the chained plugin does not track. Counted process-wide.
void countUnforwarded() noexcept;

// Opens WIREWISE_PROFILER_CHAIN (value: a name, a library file name or a path) once per process and value,
// finds its face for args.abiVersion and calls its init for this comm with its own activation mask. Null
// when chaining is off or fails (one WARN per library and reason; wirewise goes on alone). *extraMask gets
// the event types the chained plugin asks for (0 without one), to add to NCCL's mask.
std::unique_ptr<ChainComm> openChain(const std::string& value, const ProfilerInitArgs& args, void* ownContext,
                                     uint64_t ourMask, size_t poolSize, uint64_t* extraMask) noexcept;

// The context NCCL gets for a chained comm; the ChainComm is owned by it until finalizeChain.
void* contextOf(std::unique_ptr<ChainComm> comm) noexcept;
// Forwards finalize to the chained plugin, reports the comm's unforwarded events, frees the ChainComm and
// returns wirewise's own context for its own finalize.
void* finalizeChain(void* context) noexcept;

// The stop and record of a chain slot's handle: the chained plugin's first, then wirewise's own (through
// profilerStopEvent/profilerRecordState). A handle whose slot was stopped already is ignored.
void stopChained(void* handle) noexcept;
void recordChained(void* handle, int state, uint64_t arg, void* rawArgs) noexcept;

}  // namespace wirewise::chain
