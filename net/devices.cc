#include "net/devices.h"

#include <arpa/inet.h>
#include <ifaddrs.h>
#include <net/if.h>

#include <cstring>
#include <fstream>

namespace wirewise::net {

int linkSpeedMbps(const std::string& ifname) {
  std::ifstream in("/sys/class/net/" + ifname + "/speed");
  long speed = -1;
  if (!(in >> speed) || speed <= 0 || speed > 10'000'000) return 10000;
  return static_cast<int>(speed);
}

namespace {

Rail railFrom(const char* ifname, const sockaddr* sa) {
  Rail rail;
  rail.ifname = ifname;
  rail.addrLen = sizeof(sockaddr_in);
  std::memcpy(&rail.addr, sa, sizeof(sockaddr_in));
  reinterpret_cast<sockaddr_in*>(&rail.addr)->sin_port = 0;
  rail.speedMbps = linkSpeedMbps(ifname);
  return rail;
}

Device single(Rail rail) {
  Device d;
  d.name = rail.ifname;
  d.speedMbps = rail.speedMbps;
  d.rails.push_back(std::move(rail));
  return d;
}

}  // namespace

Device loopbackDevice(int n) {
  sockaddr_in lo{};
  lo.sin_family = AF_INET;
  lo.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  Device d;
  d.name = n == 1 ? "lo" : "lo*" + std::to_string(n);
  for (int i = 0; i < n; ++i) {
    Rail r = railFrom("lo", reinterpret_cast<const sockaddr*>(&lo));
    d.speedMbps += r.speedMbps;
    d.rails.push_back(std::move(r));
  }
  return d;
}

std::vector<Device> discoverDevices() {
  std::vector<Device> devices;
  ifaddrs* list = nullptr;
  if (getifaddrs(&list) == 0) {
    for (ifaddrs* ifa = list; ifa != nullptr; ifa = ifa->ifa_next) {
      if (ifa->ifa_addr == nullptr || ifa->ifa_addr->sa_family != AF_INET) continue;
      unsigned flags = ifa->ifa_flags;
      if (!(flags & IFF_UP) || !(flags & IFF_RUNNING) || (flags & IFF_LOOPBACK)) continue;
      if (std::strncmp(ifa->ifa_name, "docker", 6) == 0) continue;
      devices.push_back(single(railFrom(ifa->ifa_name, ifa->ifa_addr)));
    }
    freeifaddrs(list);
  }
  if (devices.empty()) return {loopbackDevice(1)};
  if (devices.size() >= 2) {
    Device merged;
    merged.name = "wirewise-merged";
    for (const Device& d : devices) {
      merged.rails.push_back(d.rails.front());
      merged.speedMbps += d.speedMbps;
    }
    devices.push_back(std::move(merged));
  }
  return devices;
}

}  // namespace wirewise::net
