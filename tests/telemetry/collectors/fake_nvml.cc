// A fake libnvidia-ml.so: the NVML entry points the collector calls, with scripted values, loaded by
// path through the real dynamic loader. Built twice: complete, and without nvmlDeviceGetFieldValues
// (FAKE_NVML_OMIT_FIELD_VALUES) to test a library that lacks a symbol.
#include "telemetry/collectors/nvml_api.h"
#include "tests/telemetry/collectors/fake_nvml.h"

namespace nv = wirewise::collectors::nvml;
using wirewise::collectors::testing::FakeGpu;
using wirewise::collectors::testing::FakeNvmlState;

#define FAKE_EXPORT extern "C" __attribute__((visibility("default")))

namespace {
FakeNvmlState g_state;
FakeGpu* gpuOf(nv::Device d) { return reinterpret_cast<FakeGpu*>(d); }
}  // namespace

FAKE_EXPORT FakeNvmlState* fakeNvmlState() { return &g_state; }

FAKE_EXPORT nv::Return nvmlInit_v2() {
  ++g_state.initCalls;
  return g_state.initResult;
}
FAKE_EXPORT nv::Return nvmlShutdown() {
  ++g_state.shutdownCalls;
  return nv::kSuccess;
}
FAKE_EXPORT nv::Return nvmlDeviceGetCount_v2(unsigned int* count) {
  *count = static_cast<unsigned>(g_state.gpus);
  return nv::kSuccess;
}
FAKE_EXPORT nv::Return nvmlDeviceGetHandleByIndex_v2(unsigned int i, nv::Device* d) {
  if (i >= static_cast<unsigned>(g_state.gpus)) return nv::kErrorInvalidArgument;
  *d = reinterpret_cast<nv::Device>(&g_state.gpu[i]);
  return nv::kSuccess;
}
FAKE_EXPORT nv::Return nvmlDeviceGetNvLinkState(nv::Device d, unsigned int link, nv::EnableState* st) {
  FakeGpu* g = gpuOf(d);
  if (link >= static_cast<unsigned>(g->links)) return nv::kErrorInvalidArgument;
  *st = g->link[link].active;
  return nv::kSuccess;
}

#ifndef FAKE_NVML_OMIT_FIELD_VALUES
FAKE_EXPORT nv::Return nvmlDeviceGetFieldValues(nv::Device d, int n, nv::FieldValue* v) {
  ++g_state.fieldValueCalls;
  FakeGpu* g = gpuOf(d);
  for (int i = 0; i < n; ++i) {
    nv::FieldValue& f = v[i];
    f.timestamp = g_state.timestampUs;
    f.latencyUsec = 5;
    f.nvmlReturn = nv::kSuccess;
    f.valueType = nv::kULongLong;
    bool perLink = f.fieldId >= 138 && f.fieldId <= 164;
    if (perLink && f.scopeId >= static_cast<unsigned>(g->links)) {
      f.nvmlReturn = nv::kErrorInvalidArgument;
      continue;
    }
    const auto& l = g->link[perLink ? f.scopeId : 0];
    switch (f.fieldId) {
      case nv::kFiNvlinkLinkCount:
        if (!g_state.linkCountField) f.nvmlReturn = nv::kErrorNotSupported;
        f.valueType = nv::kUInt;
        f.value.uiVal = static_cast<unsigned>(g->links);
        break;
      case nv::kFiNvlinkThroughputDataTx: f.value.ullVal = l.txKiB; break;
      case nv::kFiNvlinkThroughputDataRx: f.value.ullVal = l.rxKiB; break;
      case nv::kFiNvlinkErrorDlReplay: f.value.ullVal = l.replay; break;
      case nv::kFiNvlinkErrorDlRecovery: f.value.ullVal = l.recovery; break;
      case nv::kFiNvlinkErrorDlCrc: f.value.ullVal = l.crc; break;
      case nv::kFiNvlinkGetSpeed:
        f.valueType = nv::kUInt;
        f.value.uiVal = l.speedMBps;
        break;
      case nv::kFiPcieCountTxBytes:
      case nv::kFiPcieCountRxBytes:
        if (!g->pcieFields) {
          f.nvmlReturn = nv::kErrorNotSupported;
          break;
        }
        f.value.ullVal = f.fieldId == nv::kFiPcieCountTxBytes ? g->pcieTxBytes : g->pcieRxBytes;
        break;
      default: f.nvmlReturn = nv::kErrorNotSupported; break;
    }
  }
  return nv::kSuccess;
}
#endif

FAKE_EXPORT nv::Return nvmlDeviceGetPcieThroughput(nv::Device d, int counter, unsigned int* value) {
  ++g_state.throughputCalls;
  FakeGpu* g = gpuOf(d);
  *value = counter == nv::kPcieUtilTxBytes ? g->pcieTxKBps : g->pcieRxKBps;
  return nv::kSuccess;
}
FAKE_EXPORT nv::Return nvmlDeviceGetPcieReplayCounter(nv::Device d, unsigned int* value) {
  *value = gpuOf(d)->pcieReplay;
  return nv::kSuccess;
}
