// A throw-away sysfs-like tree under /tmp, written by the tests and read by the production collectors
// through their injectable root.
#pragma once

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>

namespace wirewise::collectors::testing {

class FakeSysfs {
 public:
  FakeSysfs() {
    char tmpl[] = "/tmp/ww-fake-sysfs-XXXXXX";
    const char* dir = ::mkdtemp(tmpl);
    root_ = dir ? dir : "/tmp/ww-fake-sysfs-failed";
  }
  ~FakeSysfs() {
    std::error_code ec;
    std::filesystem::remove_all(root_, ec);
  }
  FakeSysfs(const FakeSysfs&) = delete;
  FakeSysfs& operator=(const FakeSysfs&) = delete;

  const std::string& root() const { return root_; }
  void write(const std::string& rel, const std::string& content) const {
    std::filesystem::path p = std::filesystem::path(root_) / rel;
    std::filesystem::create_directories(p.parent_path());
    std::ofstream(p, std::ios::trunc) << content;
  }
  void write(const std::string& rel, unsigned long long v) const { write(rel, std::to_string(v) + "\n"); }
  void remove(const std::string& rel) const {
    std::error_code ec;
    std::filesystem::remove_all(std::filesystem::path(root_) / rel, ec);
  }

  // A standard IB port with every counter at zero.
  void ibPort(const std::string& dev, int port, const std::string& layer = "InfiniBand",
              const std::string& rate = "400 Gb/sec (4X NDR)") const {
    std::string d = "class/infiniband/" + dev + "/ports/" + std::to_string(port) + "/";
    write(d + "state", "4: ACTIVE\n");
    write(d + "rate", rate + "\n");
    write(d + "link_layer", layer + "\n");
    for (const char* c : {"port_xmit_data", "port_rcv_data", "port_xmit_wait", "symbol_error", "port_rcv_errors",
                          "link_error_recovery", "link_downed", "port_xmit_discards"}) {
      write(d + "counters/" + c, 0ull);
    }
  }
  void netdev(const std::string& name, const std::string& speed = "10000") const {
    std::string d = "class/net/" + name + "/";
    write(d + "operstate", "up\n");
    write(d + "speed", speed + "\n");
    for (const char* c : {"tx_bytes", "rx_bytes", "tx_errors", "rx_errors", "tx_dropped", "rx_dropped"}) {
      write(d + "statistics/" + c, 0ull);
    }
  }

 private:
  std::string root_;
};

}  // namespace wirewise::collectors::testing
