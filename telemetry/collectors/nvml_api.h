// Our own declarations of the few NVML entry points and types the collector uses (no nvml.h is needed
// to build; the library is opened with dlopen at run time, never linked). Values from nvml.h, NVML API
// 12/13; see shared research telemetry.md §2.
#pragma once

#include <cstdint>

namespace wirewise::collectors::nvml {

using Return = int;  // nvmlReturn_t
constexpr Return kSuccess = 0;
constexpr Return kErrorUninitialized = 1;
constexpr Return kErrorInvalidArgument = 2;
constexpr Return kErrorNotSupported = 3;
constexpr Return kErrorNotFound = 6;

struct DeviceSt;
using Device = DeviceSt*;  // nvmlDevice_t
using EnableState = int;   // nvmlEnableState_t: 0 disabled, 1 enabled
constexpr int kPcieUtilTxBytes = 0, kPcieUtilRxBytes = 1;  // nvmlPcieUtilCounter_t

union Value {  // nvmlValue_t
  double dVal;
  int siVal;
  unsigned int uiVal;
  unsigned long ulVal;
  unsigned long long ullVal;
  long long sllVal;
  unsigned short usVal;
};
enum ValueType : int { kDouble = 0, kUInt = 1, kULong = 2, kULongLong = 3, kSLongLong = 4, kSInt = 5, kUShort = 6 };

struct FieldValue {  // nvmlFieldValue_t
  unsigned int fieldId;
  unsigned int scopeId;   // NVLink id for per-link fields
  long long timestamp;    // µs since 1970 (CPU clock), when the value was read
  long long latencyUsec;
  int valueType;          // ValueType
  Return nvmlReturn;      // per entry; value undefined unless kSuccess
  Value value;
};
static_assert(sizeof(FieldValue) == 40, "nvmlFieldValue_t layout");

// Field ids (nvml.h NVML_FI_DEV_*).
constexpr unsigned kFiNvlinkLinkCount = 91;
constexpr unsigned kFiNvlinkThroughputDataTx = 138;  // KiB, cumulative
constexpr unsigned kFiNvlinkThroughputDataRx = 139;
constexpr unsigned kFiNvlinkErrorDlReplay = 161;
constexpr unsigned kFiNvlinkErrorDlRecovery = 162;
constexpr unsigned kFiNvlinkErrorDlCrc = 163;
constexpr unsigned kFiNvlinkGetSpeed = 164;           // MBps
constexpr unsigned kFiPcieCountTxBytes = 197;         // bytes, may wrap
constexpr unsigned kFiPcieCountRxBytes = 198;
constexpr unsigned kMaxNvlinks = 36;  // NVML_NVLINK_MAX_LINKS today; the real count comes from field 91

using InitFn = Return (*)();
using ShutdownFn = Return (*)();
using GetCountFn = Return (*)(unsigned int*);
using GetHandleByIndexFn = Return (*)(unsigned int, Device*);
using GetNvLinkStateFn = Return (*)(Device, unsigned int, EnableState*);
using GetFieldValuesFn = Return (*)(Device, int, FieldValue*);
using GetPcieThroughputFn = Return (*)(Device, int, unsigned int*);
using GetPcieReplayCounterFn = Return (*)(Device, unsigned int*);

// The value of a field as an unsigned 64-bit number (negative or double values are clamped).
inline uint64_t asU64(const FieldValue& f) {
  switch (f.valueType) {
    case kDouble: return f.value.dVal > 0 ? static_cast<uint64_t>(f.value.dVal) : 0;
    case kUInt: return f.value.uiVal;
    case kULong: return f.value.ulVal;
    case kULongLong: return f.value.ullVal;
    case kSLongLong: return f.value.sllVal > 0 ? static_cast<uint64_t>(f.value.sllVal) : 0;
    case kSInt: return f.value.siVal > 0 ? static_cast<uint64_t>(f.value.siVal) : 0;
    case kUShort: return f.value.usVal;
    default: return 0;
  }
}

}  // namespace wirewise::collectors::nvml
