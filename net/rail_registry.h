// The process-wide registry of open send comms, so that the runtime's sampler thread can read every rail's
// telemetry (sendTelemetry) and its streams' TCP_INFO without touching the data path.
//
// connect() registers a comm when it returns it and closeSend() unregisters it before the comm (and its
// fds) go away; both run on NCCL's proxy service thread. Readers copy each comm out under the registry
// lock, taking it once per comm, so closeSend waits at most for one comm's reads (<= 16 getsockopt).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "net/devices.h"
#include "net/transport.h"
#include "telemetry/collectors/link_health.h"

namespace wirewise::net {

// `handle` is the peer's (its rail addresses tell which rail each stream reached); `local` names the rails.
// Also installs the registry as the runtime's rail source (Runtime::setRailSource) the first time.
void registerSendComm(void* sendComm, const Device& local, const void* handle);
// After it returns no reader touches the comm. Unknown or null comms are ignored. `peer` and `labels`,
// when given, receive what the comm was registered with (for the summary closeSend logs).
void unregisterSendComm(void* sendComm, std::string* peer = nullptr, std::vector<std::string>* labels = nullptr);
size_t registeredSendComms();
// The comm's registry id (OpenSendComm::id), 0 when it is not registered.
uint64_t sendCommId(void* sendComm);

struct OpenSendComm {
  uint64_t id = 0;                  // registration order, from 1; never reused
  std::string peer;                 // the peer's address
  std::vector<std::string> labels;  // per rail: the interface, "lo#2" when the device repeats one
  CommTelemetry telemetry;          // rttUs and retransmits filled from TCP_INFO
};

// Every open send comm, in registration order.
std::vector<OpenSendComm> openSendComms();
// The same, one reading per rail, for the runtime's rail model (collectors::RailTracker).
std::vector<collectors::RailReading> railReadings();

// The rail labels of `local` for `nRails` rails: interface names, with "#<rail>" when one repeats, and
// "rail<k>" for rails the local device does not have.
std::vector<std::string> railLabels(const Device& local, int nRails);

}  // namespace wirewise::net
