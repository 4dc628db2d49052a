// The rails wirewise can stripe over: one TCP-capable interface address each, grouped into devices.
#pragma once

#include <netinet/in.h>
#include <sys/socket.h>

#include <string>
#include <vector>

namespace wirewise::net {

struct Rail {
  std::string ifname;
  sockaddr_storage addr{};  // port 0: the listener binds an ephemeral port
  socklen_t addrLen = 0;
  int speedMbps = 0;
};

// What NCCL sees as one device: a single rail, or several merged into one striped device.
struct Device {
  std::string name;
  std::vector<Rail> rails;
  int speedMbps = 0;  // sum over rails
};

// speed from /sys/class/net/<if>/speed; unknown or virtual links (-1, missing) report 10 Gb/s like NCCL's
// socket transport does.
int linkSpeedMbps(const std::string& ifname);
// Up, running, non-loopback IPv4 interfaces (docker* skipped, as NCCL does by default), one device each,
// plus a merged device of all of them when there are two or more; loopback when nothing else exists.
std::vector<Device> discoverDevices();
// A device of `n` rails on 127.0.0.1 (tests: n sockets over loopback).
Device loopbackDevice(int n);

}  // namespace wirewise::net
