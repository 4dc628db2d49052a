// Interface selection (WIREWISE_NET_IFNAMES / NCCL_SOCKET_IFNAME conventions): the list parser and
// matcher, the fallback order on synthetic interface lists, and the real getifaddrs path inside a network
// namespace whose veth interfaces are named to exercise every rule.
#include "net/devices.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <sched.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <string>
#include <thread>
#include <vector>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "net/wire.h"

namespace wirewise::net {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::IsEmpty;
using ::testing::UnorderedElementsAre;

IfList parsed(const std::string& text) {
  IfList l;
  std::string problem;
  EXPECT_TRUE(parseIfList(text, &l, &problem)) << text << ": " << problem;
  return l;
}

std::string problemOf(const std::string& text) {
  IfList l;
  std::string problem;
  EXPECT_FALSE(parseIfList(text, &l, &problem)) << text;
  return problem;
}

TEST(NetIfList, ParsesNcclSyntax) {
  IfList l = parsed("eth");
  EXPECT_FALSE(l.exclude);
  EXPECT_FALSE(l.exact);
  EXPECT_THAT(l.names, ElementsAre("eth"));

  l = parsed("^docker,lo");
  EXPECT_TRUE(l.exclude);
  EXPECT_FALSE(l.exact);
  EXPECT_THAT(l.names, ElementsAre("docker", "lo"));

  l = parsed("^=eth0,eth1");
  EXPECT_TRUE(l.exclude);
  EXPECT_TRUE(l.exact);
  EXPECT_THAT(l.names, ElementsAre("eth0", "eth1"));

  // NCCL reads '^' before '=' only; a port suffix is dropped; empty entries are skipped.
  l = parsed("=^eth");
  EXPECT_FALSE(l.exclude);
  EXPECT_TRUE(l.exact);
  EXPECT_THAT(l.names, ElementsAre("^eth"));
  EXPECT_THAT(parsed("ib0:1,eth0:2").names, ElementsAre("ib0", "eth0"));
  EXPECT_THAT(parsed(",eth0,,eth1,").names, ElementsAre("eth0", "eth1"));
}

TEST(NetIfList, RejectsValuesThatCannotMeanWhatTheySay) {
  for (const char* empty : {"", "^", "=", "^=", ",", ":1", "^,"})
    EXPECT_THAT(problemOf(empty), HasSubstr("names no interface")) << '"' << empty << '"';
  EXPECT_THAT(problemOf("eth0, eth1"), HasSubstr("no spaces"));
  EXPECT_THAT(problemOf("enp0s31f6-too-long"), HasSubstr("at most 15 characters"));
  EXPECT_THAT(problemOf("net/eth0"), HasSubstr("no '/'"));
  // 15 characters is the longest Linux name and must pass.
  EXPECT_THAT(parsed("abcdefghijklmno").names, ElementsAre("abcdefghijklmno"));
}

TEST(NetIfList, MatchesPrefixesExactNamesAndExclusions) {
  IfList prefix = parsed("eth,ib");
  EXPECT_TRUE(matchIfList("eth0", prefix));
  EXPECT_TRUE(matchIfList("eth10", prefix));
  EXPECT_TRUE(matchIfList("ib1", prefix));
  EXPECT_FALSE(matchIfList("veth0", prefix));  // a prefix, not a substring
  EXPECT_FALSE(matchIfList("et", prefix));

  IfList exact = parsed("=eth1");
  EXPECT_TRUE(matchIfList("eth1", exact));
  EXPECT_FALSE(matchIfList("eth10", exact));
  EXPECT_FALSE(matchIfList("eth", exact));

  IfList notDocker = parsed("^docker,lo");
  EXPECT_TRUE(matchIfList("eth0", notDocker));
  EXPECT_FALSE(matchIfList("docker0", notDocker));
  EXPECT_FALSE(matchIfList("lo", notDocker));
  EXPECT_FALSE(matchIfList("lo:1", notDocker));   // prefixes: every lo* and docker* name
  EXPECT_TRUE(matchIfList("lxcbr0", notDocker));

  IfList notEth1 = parsed("^=eth1");
  EXPECT_FALSE(matchIfList("eth1", notEth1));
  EXPECT_TRUE(matchIfList("eth10", notEth1));
}

Interface iface(const std::string& name, bool running = true, int lastOctet = 1) {
  Interface i;
  i.name = name;
  i.addr.sin_family = AF_INET;
  i.addr.sin_addr.s_addr = htonl(0x0a000000u | static_cast<uint32_t>(lastOctet));
  i.running = running;
  return i;
}

std::vector<std::string> names(const std::vector<Interface>& ifs) {
  std::vector<std::string> out;
  for (const auto& i : ifs) out.push_back(i.name);
  return out;
}

std::vector<std::string> select(const std::vector<Interface>& found, const std::string& ww, const std::string& nccl,
                                std::vector<std::string>* warnings) {
  return names(selectRails(found, IfSettings{ww, nccl}, warnings));
}

TEST(NetSelectRails, DefaultFollowsNcclOrder) {
  std::vector<std::string> w;
  // Anything but docker*, lo*, virbr* first; down interfaces never count.
  EXPECT_THAT(select({iface("lo"), iface("docker0"), iface("eth0"), iface("virbr0"), iface("eth1", false)}, "", "", &w),
              ElementsAre("eth0"));
  // IPoIB before everything else.
  EXPECT_THAT(select({iface("eth0"), iface("ib0"), iface("ib1")}, "", "", &w), ElementsAre("ib0", "ib1"));
  // Then docker, then loopback, then libvirt's bridge.
  EXPECT_THAT(select({iface("lo"), iface("virbr0"), iface("docker0")}, "", "", &w), ElementsAre("docker0"));
  EXPECT_THAT(select({iface("virbr0"), iface("lo")}, "", "", &w), ElementsAre("lo"));
  EXPECT_THAT(select({iface("virbr0"), iface("lo", false)}, "", "", &w), ElementsAre("virbr0"));
  EXPECT_THAT(select({iface("eth0", false)}, "", "", &w), IsEmpty());
  EXPECT_THAT(w, IsEmpty());
}

TEST(NetSelectRails, WirewiseOverridesNcclWhichOverridesDefault) {
  std::vector<Interface> found = {iface("lo"), iface("eth0"), iface("eth1"), iface("eth10"), iface("ens1")};
  std::vector<std::string> w;
  EXPECT_THAT(select(found, "", "ens", &w), ElementsAre("ens1"));
  EXPECT_THAT(select(found, "eth1", "ens", &w), ElementsAre("eth1", "eth10"));
  EXPECT_THAT(select(found, "=eth1", "", &w), ElementsAre("eth1"));
  EXPECT_THAT(select(found, "^=eth1", "", &w), ElementsAre("lo", "eth0", "eth10", "ens1"));
  EXPECT_THAT(select(found, "lo", "", &w), ElementsAre("lo"));
  // NCCL ignores a one-character NCCL_SOCKET_IFNAME; so do we (silently, as NCCL).
  EXPECT_THAT(select(found, "", "e", &w), ElementsAre("eth0", "eth1", "eth10", "ens1"));
  EXPECT_THAT(w, IsEmpty());
}

TEST(NetSelectRails, BadValuesWarnAndFallBack) {
  std::vector<Interface> found = {iface("lo"), iface("eth0"), iface("eth1", false), iface("ens1")};
  std::vector<std::string> w;
  EXPECT_THAT(select(found, "eth0, ens1", "ens", &w), ElementsAre("ens1"));
  ASSERT_EQ(w.size(), 1u);
  EXPECT_THAT(w[0], HasSubstr("WIREWISE_NET_IFNAMES=\"eth0, ens1\""));
  EXPECT_THAT(w[0], HasSubstr("no spaces"));
  EXPECT_THAT(w[0], HasSubstr("using NCCL_SOCKET_IFNAME=\"ens\" (ens1)"));

  w.clear();  // a name that exists but is down: no rail, NCCL's default instead
  EXPECT_THAT(select(found, "=eth1", "", &w), ElementsAre("eth0", "ens1"));
  ASSERT_EQ(w.size(), 1u);
  EXPECT_THAT(w[0], HasSubstr("matches no running IPv4 interface (running: lo, eth0, ens1)"));
  EXPECT_THAT(w[0], HasSubstr("using NCCL's default interface selection (eth0, ens1)"));

  w.clear();  // both bad: two warnings, both naming what is used in the end
  EXPECT_THAT(select(found, "^", "wlan", &w), ElementsAre("eth0", "ens1"));
  ASSERT_EQ(w.size(), 2u);
  EXPECT_THAT(w[0], HasSubstr("WIREWISE_NET_IFNAMES=\"^\""));
  EXPECT_THAT(w[1], HasSubstr("NCCL_SOCKET_IFNAME=\"wlan\""));
  for (const auto& s : w) EXPECT_THAT(s, HasSubstr("default interface selection (eth0, ens1)"));
}

TEST(NetSelectRails, AtMostSixteenInterfacesAsNccl) {
  std::vector<Interface> found;
  for (int i = 0; i < 20; ++i) found.push_back(iface("eth" + std::to_string(i), true, i + 1));
  std::vector<std::string> w;
  std::vector<std::string> got = select(found, "", "", &w);
  ASSERT_EQ(got.size(), static_cast<size_t>(kMaxInterfaces));
  EXPECT_EQ(got.back(), "eth15");
}

TEST(NetMakeDevices, OnePerRailPlusMergedCappedAtWireLimit) {
  std::vector<std::string> w;
  std::vector<Device> one = makeDevices({iface("eth0", true, 7)}, &w);
  ASSERT_EQ(one.size(), 1u);
  EXPECT_EQ(one[0].name, "eth0");
  auto* sin = reinterpret_cast<const sockaddr_in*>(&one[0].rails[0].addr);
  EXPECT_EQ(ntohl(sin->sin_addr.s_addr), 0x0a000007u);
  EXPECT_EQ(sin->sin_port, 0);

  std::vector<Device> two = makeDevices({iface("eth0", true, 1), iface("eth1", true, 2)}, &w);
  ASSERT_EQ(two.size(), 3u);
  EXPECT_EQ(two[2].name, kMergedDeviceName);
  ASSERT_EQ(two[2].rails.size(), 2u);
  EXPECT_EQ(two[2].rails[1].ifname, "eth1");
  EXPECT_EQ(two[2].speedMbps, two[0].speedMbps + two[1].speedMbps);
  EXPECT_THAT(w, IsEmpty());

  std::vector<Interface> six;
  for (int i = 0; i < 6; ++i) six.push_back(iface("eth" + std::to_string(i), true, i + 1));
  std::vector<Device> seven = makeDevices(six, &w);
  ASSERT_EQ(seven.size(), 7u);
  EXPECT_EQ(seven.back().rails.size(), static_cast<size_t>(kMaxRails));
  ASSERT_EQ(w.size(), 1u);
  EXPECT_THAT(w[0], HasSubstr("6 interfaces selected"));

  std::vector<Device> none = makeDevices({}, &w);
  ASSERT_EQ(none.size(), 1u);
  EXPECT_EQ(none[0].name, "lo");
}

// ---- The real interface list, inside a network namespace (root / CAP_SYS_ADMIN + CAP_NET_ADMIN) ----

class NetnsDevices : public ::testing::Test {
 protected:
  void SetUp() override {
    if (geteuid() != 0) GTEST_SKIP() << "needs root (CAP_NET_ADMIN, CAP_SYS_ADMIN) for a network namespace";
    if (std::system("command -v ip >/dev/null 2>&1") != 0) GTEST_SKIP() << "needs iproute2 (ip)";
    ns_ = "wwdev" + std::to_string(getpid());
    if (!sh("ip netns add " + ns_)) GTEST_SKIP() << "cannot create a network namespace here";
    created_ = true;
    // veth pairs live with both ends in the namespace; each name exercises one rule.
    bool ok = sh(ip("link set lo up")) && vethPair("rail0", "rail1", 0) && vethPair("rail10", "docker0", 1) &&
              vethPair("virbr0", "eth0", 2) &&
              // rail2 is up but its peer is down: no carrier, so not running.
              sh(ip("link add rail2 type veth peer name nowhere0")) && sh(ip("addr add 10.201.3.1/24 dev rail2")) &&
              sh(ip("link set rail2 up")) &&
              // eth9 is running but has no IPv4 address.
              sh(ip("link add eth9 type veth peer name eth9p")) && sh(ip("link set eth9 up")) &&
              sh(ip("link set eth9p up"));
    if (!ok) GTEST_SKIP() << "cannot create veth interfaces in a network namespace here";
  }
  void TearDown() override {
    if (created_) sh("ip netns del " + ns_);
  }

  static bool sh(const std::string& cmd) { return std::system((cmd + " >/dev/null 2>&1").c_str()) == 0; }
  std::string ip(const std::string& args) const { return "ip -n " + ns_ + " " + args; }
  bool vethPair(const std::string& a, const std::string& b, int subnet) {
    std::string net = "10.201." + std::to_string(subnet) + ".";
    return sh(ip("link add " + a + " type veth peer name " + b)) && sh(ip("addr add " + net + "1/24 dev " + a)) &&
           sh(ip("addr add " + net + "2/24 dev " + b)) && sh(ip("link set " + a + " up")) &&
           sh(ip("link set " + b + " up"));
  }

  // Runs `f` on a thread that entered the namespace (setns changes the calling thread only).
  template <typename F>
  void inNamespace(F&& f) {
    int fd = open(("/run/netns/" + ns_).c_str(), O_RDONLY | O_CLOEXEC);
    ASSERT_GE(fd, 0);
    bool entered = false;
    std::thread t([&] {
      entered = setns(fd, CLONE_NEWNET) == 0;
      if (entered) f();
    });
    t.join();
    close(fd);
    ASSERT_TRUE(entered) << "setns failed";
  }

  // Devices seen in the namespace for these settings; warnings go to `gWarnings`.
  std::vector<Device> devicesFor(const std::string& ww, const std::string& nccl) {
    std::vector<Device> out;
    gWarnings.clear();
    inNamespace([&] { out = discoverDevices(IfSettings{ww, nccl}, [](const char* m) { gWarnings.push_back(m); }); });
    return out;
  }

  static std::vector<std::string> singles(const std::vector<Device>& ds) {
    std::vector<std::string> out;
    for (const auto& d : ds)
      if (d.name != kMergedDeviceName) out.push_back(d.name);
    return out;
  }

  static inline std::vector<std::string> gWarnings;
  std::string ns_;
  bool created_ = false;
};

TEST_F(NetnsDevices, KernelFlagsAndAddressesAreRead) {
  std::vector<Interface> found;
  inNamespace([&] { found = listInterfaces(); });
  std::vector<std::string> running, down;
  for (const auto& i : found) (i.running ? running : down).push_back(i.name);
  EXPECT_THAT(running, UnorderedElementsAre("lo", "rail0", "rail1", "rail10", "docker0", "virbr0", "eth0"));
  EXPECT_THAT(down, ElementsAre("rail2"));  // eth9 has no IPv4 address, nowhere0 neither
  for (const auto& i : found) {
    if (i.name != "rail10") continue;
    char text[INET_ADDRSTRLEN] = {};
    inet_ntop(AF_INET, &i.addr.sin_addr, text, sizeof text);
    EXPECT_STREQ(text, "10.201.1.1");
  }
}

TEST_F(NetnsDevices, RulesSelectTheNamedInterfaces) {
  std::vector<Device> d = devicesFor("", "");
  EXPECT_THAT(singles(d), UnorderedElementsAre("rail0", "rail1", "rail10", "eth0"));
  ASSERT_EQ(d.back().name, kMergedDeviceName);
  EXPECT_EQ(d.back().rails.size(), 4u);
  EXPECT_THAT(gWarnings, IsEmpty());

  d = devicesFor("=rail1", "");
  EXPECT_THAT(singles(d), ElementsAre("rail1"));
  EXPECT_EQ(d.size(), 1u);  // one rail: no merged device
  EXPECT_THAT(singles(devicesFor("rail1", "")), UnorderedElementsAre("rail1", "rail10"));
  EXPECT_THAT(singles(devicesFor("^rail,lo", "")), UnorderedElementsAre("docker0", "virbr0", "eth0"));
  EXPECT_THAT(singles(devicesFor("^=rail1", "")),
              UnorderedElementsAre("lo", "rail0", "rail10", "docker0", "virbr0", "eth0"));
  EXPECT_THAT(singles(devicesFor("", "eth")), ElementsAre("eth0"));
  EXPECT_THAT(singles(devicesFor("docker", "eth")), ElementsAre("docker0"));
  EXPECT_THAT(gWarnings, IsEmpty());

  // A down interface and one without IPv4 are not rails: warn, then NCCL's default.
  for (const char* bad : {"rail2", "=eth9"}) {
    EXPECT_THAT(singles(devicesFor(bad, "")), UnorderedElementsAre("rail0", "rail1", "rail10", "eth0")) << bad;
    ASSERT_EQ(gWarnings.size(), 1u) << bad;
    EXPECT_THAT(gWarnings[0], HasSubstr(std::string("wirewise: ignoring WIREWISE_NET_IFNAMES=\"") + bad + "\""));
    EXPECT_THAT(gWarnings[0], HasSubstr("matches no running IPv4 interface"));
  }

  // IPoIB interfaces win the default selection, as in NCCL.
  ASSERT_TRUE(vethPair("ib0", "ib1", 4));
  EXPECT_THAT(singles(devicesFor("", "")), UnorderedElementsAre("ib0", "ib1"));
}

}  // namespace
}  // namespace wirewise::net
