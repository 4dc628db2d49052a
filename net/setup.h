// Connection setup: the listener side (listen sockets, streams grouped by their hello into a recv comm)
// and the connector's in-progress state, kept behind the handle's `stage` field between connect calls.
#pragma once

#include <cstdint>
#include <vector>

#include "net/comm.h"
#include "net/devices.h"
#include "net/transport.h"
#include "net/wire.h"

namespace wirewise::net {

inline constexpr uint32_t kListenMagic = 0x4c49534e;

struct ListenComm {
  uint32_t magic = kListenMagic;
  struct Pending {
    int fd;
    Hello hello;
    size_t got;
  };
  struct Group {
    uint64_t connId;
    std::vector<StreamFd> fds;
    int count;
  };
  uint64_t railTimeoutNs = 0;
  std::vector<int> fds;
  std::vector<Pending> pending;
  std::vector<Group> groups;
  ~ListenComm();
};

Status openListen(const Device& dev, const TransportConfig& config, NetHandle* handle, ListenComm** out);
// One step of accepting: *recvComm stays null until every stream of some connection has said hello.
Status acceptStep(ListenComm* lc, RecvComm** recvComm);
// One step of connecting to `handle` (copied from the peer; its stage field is ours).
Status connectStep(const Device& local, const TransportConfig& config, void* handle, SendComm** sendComm);

}  // namespace wirewise::net
