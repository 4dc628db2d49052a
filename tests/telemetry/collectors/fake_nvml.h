// Scripted state of the fake NVML library (fake_nvml.cc). The test dlopens the same path as the
// collector, which returns the same handle, and edits this state through fakeNvmlState().
#pragma once

namespace wirewise::collectors::testing {

struct FakeNvLink {
  int active = 1;
  unsigned long long txKiB = 0, rxKiB = 0, replay = 0, recovery = 0, crc = 0;
  unsigned speedMBps = 26562;  // NVLink 4 per-link, per direction
};
struct FakeGpu {
  int links = 0;
  FakeNvLink link[18];
  bool pcieFields = true;  // fields 197/198 supported
  unsigned long long pcieTxBytes = 0, pcieRxBytes = 0;
  unsigned pcieTxKBps = 0, pcieRxKBps = 0, pcieReplay = 0;
};
struct FakeNvmlState {
  int initResult = 0;
  int initCalls = 0, shutdownCalls = 0, fieldValueCalls = 0, throughputCalls = 0;
  bool linkCountField = true;  // field 91 supported
  long long timestampUs = 1'000'000;
  int gpus = 0;
  FakeGpu gpu[4];
};

using FakeNvmlStateFn = FakeNvmlState* (*)();

}  // namespace wirewise::collectors::testing
