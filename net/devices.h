// The rails wirewise can stripe over: one TCP-capable interface address each, grouped into devices.
//
// Which interfaces become rails follows NCCL's socket transport (NCCL_SOCKET_IFNAME, ncclFindInterfaces
// in NCCL 2.28): WIREWISE_NET_IFNAMES if set, else NCCL_SOCKET_IFNAME, else NCCL's default order.
#pragma once

#include <netinet/in.h>
#include <sys/socket.h>

#include <string>
#include <string_view>
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

inline constexpr const char* kMergedDeviceName = "wirewise-merged";
inline constexpr int kMaxInterfaces = 16;  // NCCL's MAX_IFS: more selected interfaces are ignored

// One interface as getifaddrs reports it: its first IPv4 address and whether it is up and running.
struct Interface {
  std::string name;
  sockaddr_in addr{};
  bool running = false;
};

// A WIREWISE_NET_IFNAMES / NCCL_SOCKET_IFNAME value in NCCL's conventions: comma-separated name prefixes;
// a leading '^' selects the interfaces that match none of them; '=' (after the '^' when both) makes the
// names exact. A ":<port>" suffix on a name is dropped, as NCCL does for socket interfaces.
struct IfList {
  bool exclude = false;
  bool exact = false;
  std::vector<std::string> names;
};

// False, with `*problem` saying what is wrong and how to fix it, for a value that cannot select what it
// seems to mean: no names, spaces, or names that no Linux interface can have (over 15 characters, '/').
bool parseIfList(std::string_view text, IfList* out, std::string* problem);
bool matchIfList(std::string_view ifname, const IfList& list);

// The raw values of WIREWISE_NET_IFNAMES and NCCL_SOCKET_IFNAME ("" when unset).
struct IfSettings {
  std::string wirewise;
  std::string nccl;
};

// The running interfaces of `found` that become rails, in `found`'s order (at most kMaxInterfaces).
// A bad or unmatched WIREWISE_NET_IFNAMES falls back to NCCL_SOCKET_IFNAME, a bad or unmatched
// NCCL_SOCKET_IFNAME to NCCL's default order: "ib*", then anything but docker*, lo*, virbr*, then
// docker*, then lo*, then virbr*. Each fallback adds one warning naming the value, the fix and what was
// used instead. NCCL_SOCKET_IFNAME of one character is ignored, as NCCL does; NCCL_COMM_ID's subnet hint
// and IPv6 addresses are not used.
std::vector<Interface> selectRails(const std::vector<Interface>& found, const IfSettings& settings,
                                   std::vector<std::string>* warnings);

// IPv4 interfaces from getifaddrs, first address per name (an alias label such as "eth0:1" is its own
// name, as NCCL sees it).
std::vector<Interface> listInterfaces();

// One device per rail plus, with two or more rails, kMergedDeviceName over the first kMaxRails of them
// (wire format limit; a warning says so when more were selected). No rail: loopback.
std::vector<Device> makeDevices(const std::vector<Interface>& rails, std::vector<std::string>* warnings);

// speed from /sys/class/net/<if>/speed; unknown or virtual links (-1, missing) report 10 Gb/s like NCCL's
// socket transport does.
int linkSpeedMbps(const std::string& ifname);

using WarnFn = void (*)(const char* msg);
// listInterfaces + selectRails + makeDevices; every warning goes to `warn` (may be null).
std::vector<Device> discoverDevices(const IfSettings& settings, WarnFn warn);
// A device of `n` rails on 127.0.0.1 (tests: n sockets over loopback).
Device loopbackDevice(int n);

}  // namespace wirewise::net
