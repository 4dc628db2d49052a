#include "net/devices.h"

#include <arpa/inet.h>
#include <ifaddrs.h>
#include <net/if.h>
#include <unistd.h>

#include <cstring>
#include <fstream>

#include "common/settings.h"
#include "net/wire.h"

namespace wirewise::net {

int linkSpeedMbps(const std::string& ifname) {
  std::ifstream in("/sys/class/net/" + ifname + "/speed");
  long speed = -1;
  if (!(in >> speed) || speed <= 0 || speed > 10'000'000) return 10000;
  return static_cast<int>(speed);
}

bool parseIfList(std::string_view text, IfList* out, std::string* problem) {
  *out = IfList{};
  std::string_view rest = text;
  if (!rest.empty() && rest.front() == '^') {
    out->exclude = true;
    rest.remove_prefix(1);
  }
  if (!rest.empty() && rest.front() == '=') {
    out->exact = true;
    rest.remove_prefix(1);
  }
  while (!rest.empty()) {
    size_t comma = rest.find(',');
    std::string_view entry = rest.substr(0, comma);
    rest = comma == std::string_view::npos ? std::string_view{} : rest.substr(comma + 1);
    entry = entry.substr(0, entry.find(':'));  // NCCL's ":<port>" suffix means nothing for sockets
    if (entry.empty()) continue;                // "eth0,,eth1" and a trailing comma: NCCL skips them too
    if (entry.find_first_of(" \t\n") != std::string_view::npos) {
      *problem = "interface names contain no spaces; write the list without them, e.g. \"eth0,eth1\"";
      return false;
    }
    if (entry.find('/') != std::string_view::npos || entry.size() >= IFNAMSIZ) {
      *problem = "\"" + std::string(entry) + "\" cannot be (the start of) a Linux interface name (at most " +
                 std::to_string(IFNAMSIZ - 1) + " characters, no '/'); name interfaces as `ip link` shows them";
      return false;
    }
    out->names.emplace_back(entry);
  }
  if (out->names.empty()) {
    *problem = "it names no interface; give comma-separated name prefixes, e.g. \"eth\", \"=eth0,eth1\" or "
               "\"^docker,lo\"";
    return false;
  }
  return true;
}

bool matchIfList(std::string_view ifname, const IfList& list) {
  bool hit = false;
  for (const std::string& n : list.names) {
    hit = list.exact ? ifname == n : ifname.substr(0, n.size()) == n;
    if (hit) break;
  }
  return hit != list.exclude;
}

namespace {

std::vector<Interface> matching(const std::vector<Interface>& found, const IfList& list) {
  std::vector<Interface> out;
  for (const Interface& i : found) {
    if (static_cast<int>(out.size()) == kMaxInterfaces) break;
    if (i.running && matchIfList(i.name, list)) out.push_back(i);
  }
  return out;
}

std::string namesOf(const std::vector<Interface>& ifs, bool runningOnly) {
  std::string s;
  for (const Interface& i : ifs) {
    if (runningOnly && !i.running) continue;
    s += (s.empty() ? "" : ", ") + i.name;
  }
  return s.empty() ? "none" : s;
}

// One user-supplied value: the rails it selects, or empty with `*problem` set.
std::vector<Interface> fromValue(const std::vector<Interface>& found, const char* var, const std::string& value,
                                 std::string* problem) {
  IfList list;
  std::string why;
  if (!parseIfList(value, &list, &why)) {
    *problem = "ignoring " + std::string(var) + "=\"" + value + "\": " + why;
    return {};
  }
  std::vector<Interface> rails = matching(found, list);
  if (rails.empty())
    *problem = "ignoring " + std::string(var) + "=\"" + value + "\": it matches no running IPv4 interface (running: " +
               namesOf(found, true) + "); change it to match one of those";
  return rails;
}

}  // namespace

std::vector<Interface> selectRails(const std::vector<Interface>& found, const IfSettings& settings,
                                   std::vector<std::string>* warnings) {
  std::vector<std::string> problems;
  std::vector<Interface> rails;
  std::string used;
  if (!settings.wirewise.empty()) {
    std::string problem;
    rails = fromValue(found, settingName(&Settings::netIfnames), settings.wirewise, &problem);
    if (rails.empty()) problems.push_back(problem);
  }
  if (rails.empty() && settings.nccl.size() > 1) {  // NCCL ignores a one-character NCCL_SOCKET_IFNAME
    std::string problem;
    rails = fromValue(found, "NCCL_SOCKET_IFNAME", settings.nccl, &problem);
    if (rails.empty()) problems.push_back(problem);
    else used = "NCCL_SOCKET_IFNAME=\"" + settings.nccl + "\"";
  }
  if (rails.empty()) {
    // NCCL's own order when nothing is set: IPoIB first, then any real interface, and only then the
    // container bridge, loopback and libvirt's bridge.
    for (const char* step : {"ib", "^docker,lo,virbr", "docker", "lo", "virbr"}) {
      IfList list;
      std::string unused;
      if (parseIfList(step, &list, &unused)) rails = matching(found, list);
      if (!rails.empty()) break;
    }
    used = "NCCL's default interface selection";
  }
  for (const std::string& p : problems)
    warnings->push_back(p + "; using " + used + " (" + namesOf(rails, false) + ")");
  return rails;
}

std::vector<Interface> listInterfaces() {
  std::vector<Interface> out;
  ifaddrs* list = nullptr;
  if (getifaddrs(&list) != 0) return out;
  for (ifaddrs* ifa = list; ifa != nullptr; ifa = ifa->ifa_next) {
    if (ifa->ifa_addr == nullptr || ifa->ifa_addr->sa_family != AF_INET || ifa->ifa_name == nullptr) continue;
    bool seen = false;
    for (const Interface& i : out) seen = seen || i.name == ifa->ifa_name;
    if (seen) continue;  // first address per name, as NCCL keeps
    Interface i;
    i.name = ifa->ifa_name;
    std::memcpy(&i.addr, ifa->ifa_addr, sizeof(sockaddr_in));
    i.addr.sin_port = 0;
    i.running = (ifa->ifa_flags & IFF_UP) && (ifa->ifa_flags & IFF_RUNNING);
    out.push_back(std::move(i));
  }
  freeifaddrs(list);
  return out;
}

namespace {

Rail railFrom(const std::string& ifname, const sockaddr_in& sin) {
  Rail rail;
  rail.ifname = ifname;
  rail.addrLen = sizeof(sockaddr_in);
  std::memcpy(&rail.addr, &sin, sizeof(sockaddr_in));
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
    Rail r = railFrom("lo", lo);
    d.speedMbps += r.speedMbps;
    d.rails.push_back(std::move(r));
  }
  return d;
}

std::vector<Device> makeDevices(const std::vector<Interface>& rails, std::vector<std::string>* warnings) {
  if (rails.empty()) return {loopbackDevice(1)};
  std::vector<Device> devices;
  for (const Interface& i : rails) devices.push_back(single(railFrom(i.name, i.addr)));
  if (devices.size() >= 2) {
    Device merged;
    merged.name = kMergedDeviceName;
    for (const Device& d : devices) {
      if (static_cast<int>(merged.rails.size()) == kMaxRails) break;
      merged.rails.push_back(d.rails.front());
      merged.speedMbps += d.speedMbps;
    }
    if (devices.size() > merged.rails.size())
      warnings->push_back(std::to_string(devices.size()) + " interfaces selected; " + kMergedDeviceName +
                          " stripes over the first " + std::to_string(kMaxRails) +
                          " only; choose the rails with " + settingName(&Settings::netIfnames));
    devices.push_back(std::move(merged));
  }
  return devices;
}

std::vector<Device> discoverDevices(const IfSettings& settings, WarnFn warn) {
  std::vector<std::string> warnings;
  std::vector<Device> devices = makeDevices(selectRails(listInterfaces(), settings, &warnings), &warnings);
  if (warn != nullptr)
    for (const std::string& w : warnings) warn(("wirewise: " + w).c_str());
  return devices;
}


}  // namespace wirewise::net
