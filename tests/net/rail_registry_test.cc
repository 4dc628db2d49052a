// The registry of open send comms (net/rail_registry.h) over real loopback rails: what the runtime's
// sampler reads (shares, rates, TCP_INFO RTT per rail), closeSend racing a sampler thread, and a rail that
// dies mid-transfer reaching the adaptation log as a rail_shift event through the real Runtime.
#include <gtest/gtest.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <map>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include <nlohmann/json.hpp>

#include "tests/runtime/log_lines.h"
#include "net/comm.h"
#include "net/rail_registry.h"
#include "net/transport.h"
#include "runtime/runtime.h"
#include "tests/net/transport_util.h"

namespace wirewise::net {
namespace {

using testing::connectPair;
using testing::Pair;
using testing::waitDone;

// One message each way through the pair: sender and receiver progress from this one thread.
bool transfer(Pair& p, std::vector<char>& out, std::vector<char>& in, int tag) {
  void* sreq = nullptr;
  void* rreq = nullptr;
  void* data = in.data();
  size_t size = in.size();
  if (irecv(p.rc, 1, &data, &size, &tag, &rreq) != Status::kOk || rreq == nullptr) return false;
  if (isend(p.sc, out.data(), out.size(), tag, &sreq) != Status::kOk || sreq == nullptr) return false;
  int sdone = 0, rdone = 0;
  auto start = std::chrono::steady_clock::now();
  while (!sdone || !rdone) {
    if (!sdone && test(sreq, &sdone, nullptr) != Status::kOk) return false;
    if (!rdone && test(rreq, &rdone, nullptr) != Status::kOk) return false;
    if (std::chrono::steady_clock::now() - start > std::chrono::seconds(30)) return false;
  }
  return true;
}

class RailRegistry : public ::testing::Test {
 protected:
  void SetUp() override {
    setDevices({loopbackDevice(2)});
    TransportConfig c;
    c.chunkBytes = 64 << 10;
    setConfig(c);
  }
};

TEST_F(RailRegistry, ConnectRegistersAndCloseUnregisters) {
  const size_t before = registeredSendComms();
  Pair p = connectPair(0);
  ASSERT_NE(p.sc, nullptr);
  ASSERT_EQ(registeredSendComms(), before + 1);
  const uint64_t id = sendCommId(p.sc);
  ASSERT_NE(id, 0u);
  std::vector<char> out(4 << 20, 'x'), in(4 << 20);
  for (int i = 0; i < 8; ++i) ASSERT_TRUE(transfer(p, out, in, i));

  const OpenSendComm* mine = nullptr;
  std::vector<OpenSendComm> open = openSendComms();
  for (const auto& c : open)
    if (c.id == id) mine = &c;
  ASSERT_NE(mine, nullptr);
  EXPECT_EQ(mine->peer, "127.0.0.1");
  ASSERT_EQ(mine->telemetry.rails, 2);
  ASSERT_EQ(mine->labels, (std::vector<std::string>{"lo#0", "lo#1"}));  // the device repeats "lo"
  uint64_t delivered = 0;
  for (int r = 0; r < 2; ++r) {
    const RailTelemetry& t = mine->telemetry.rail[r];
    EXPECT_TRUE(t.up);
    EXPECT_GT(t.rttUs, 0u) << "rail " << r << ": TCP_INFO read on the sampler's side";
    EXPECT_LT(t.rttUs, 1'000'000u);
    EXPECT_GT(t.bytesDelivered, 0u) << "rail " << r << " carried a share";
    delivered += t.bytesDelivered;
  }
  // Published at rate samples (every ~10 ms of busy time), so it may lag what was sent, never exceed it:
  // 32 MiB of payload plus a 40-byte header per 64 KiB chunk.
  EXPECT_LE(delivered, 8ull * (4 << 20) + 8 * 64 * 40);

  std::vector<collectors::RailReading> readings = railReadings();
  int ours = 0;
  for (const auto& r : readings)
    if (r.conn == id) {
      ++ours;
      EXPECT_EQ(r.label, "lo#" + std::to_string(r.rail));
      EXPECT_GT(r.rttUs, 0u);
    }
  EXPECT_EQ(ours, 2);

  p.close();
  EXPECT_EQ(registeredSendComms(), before);
  EXPECT_EQ(sendCommId(p.sc), 0u);
  for (const auto& c : openSendComms()) EXPECT_NE(c.id, id);
}

TEST_F(RailRegistry, RailLabelsNameInterfacesAndMarkRepeats) {
  Device d;
  d.rails.resize(2);
  d.rails[0].ifname = "eth0";
  d.rails[1].ifname = "eth1";
  EXPECT_EQ(railLabels(d, 2), (std::vector<std::string>{"eth0", "eth1"}));
  EXPECT_EQ(railLabels(d, 3), (std::vector<std::string>{"eth0", "eth1", "rail2"}));
  EXPECT_EQ(railLabels(loopbackDevice(3), 3), (std::vector<std::string>{"lo#0", "lo#1", "lo#2"}));
}

// A sampler thread reads the registry without pause while comms open, carry data and close. A reader must
// never see a comm after its closeSend returned (its fds may already be another socket's), and closeSend
// must never wait long for the reader.
TEST_F(RailRegistry, ClosingWhileASamplerReadsIsSafe) {
  std::atomic<bool> stop{false};
  std::atomic<uint64_t> closedId{0};  // the id of the comm whose closeSend has just returned
  std::atomic<int> passes{0}, violations{0};
  std::thread sampler([&] {
    while (!stop.load()) {
      const uint64_t closed = closedId.load();
      for (const auto& c : openSendComms()) {
        if (c.id == closed) violations.fetch_add(1);
        if (c.telemetry.rails != 2) violations.fetch_add(1);
      }
      (void)railReadings();
      passes.fetch_add(1);
    }
  });
  const size_t before = registeredSendComms();
  std::vector<char> out(1 << 20, 'y'), in(1 << 20);
  double worstCloseMs = 0;
  for (int i = 0; i < 25; ++i) {
    Pair p = connectPair(0);
    ASSERT_NE(p.sc, nullptr);
    const uint64_t id = sendCommId(p.sc);
    ASSERT_NE(id, 0u);
    ASSERT_TRUE(transfer(p, out, in, i));
    auto t0 = std::chrono::steady_clock::now();
    closeSend(p.sc);
    worstCloseMs = std::max(
        worstCloseMs, std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count());
    closedId.store(id);
    p.sc = nullptr;
    p.close();
  }
  stop.store(true);
  sampler.join();
  std::printf("%d sampler passes over 25 open/transfer/close cycles; slowest closeSend %.2f ms\n", passes.load(),
              worstCloseMs);
  EXPECT_EQ(violations.load(), 0);
  EXPECT_GT(passes.load(), 25);
  EXPECT_EQ(registeredSendComms(), before);
  EXPECT_LT(worstCloseMs, 250.0);  // the sampler here spins without pause; a loaded 2-core box preempts
}

using wirewise::testing::readLog;

// The whole path: real transfer over two loopback rails, one rail's stream shut mid-run; the runtime's
// sampler reads the registry and logs the shift (and the rail as down in link_health).
TEST_F(RailRegistry, ARailThatDiesMidTransferIsLoggedAsARailShift) {
  char dir[] = "/tmp/ww_rail_registry_XXXXXX";
  ASSERT_NE(mkdtemp(dir), nullptr);
  const std::string log = std::string(dir) + "/wirewise.jsonl";
  std::map<std::string, std::string> env = {{"WIREWISE_SYSFS_ROOT", dir},
                                            {"WIREWISE_COLLECT_MS", "100"},
                                            {"WIREWISE_SUMMARY_MS", "3600000"},
                                            {"WIREWISE_LOG", log}};
  ASSERT_EQ(Runtime::references(), 0);
  Runtime::acquire([&](const char* k) -> const char* {
    auto it = env.find(k);
    return it == env.end() ? nullptr : it->second.c_str();
  });
  Pair p = connectPair(0);
  ASSERT_NE(p.sc, nullptr);
  const uint64_t id = sendCommId(p.sc);
  std::vector<char> out(2 << 20, 'z'), in(2 << 20);
  auto runFor = [&](std::chrono::milliseconds d) {
    auto end = std::chrono::steady_clock::now() + d;
    for (int tag = 0; std::chrono::steady_clock::now() < end; ++tag) ASSERT_TRUE(transfer(p, out, in, tag % 1000));
  };
  runFor(std::chrono::milliseconds(600));
  auto* sc = static_cast<SendComm*>(p.sc);
  ASSERT_EQ(sc->streamCount(), 2u);  // one stream per rail
  shutdown(sc->streamFd(1), SHUT_RDWR);
  runFor(std::chrono::milliseconds(600));
  p.close();
  Runtime::release();

  bool shift = false, down = false;
  for (const auto& e : readLog(log)) {
    if (e.value("event", "") == "rail_shift" && e.value("conn", 0ull) == id) {
      const std::string reason = e.value("reason", "");
      if (reason.find("lo#1 died") == std::string::npos) continue;
      shift = true;
      EXPECT_EQ(e["rails"].size(), 2u) << e.dump();
      EXPECT_FALSE(e["rails"][1]["up"].get<bool>()) << e.dump();
      EXPECT_DOUBLE_EQ(e["rails"][0]["after"].get<double>(), 1.0) << e.dump();
    }
    if (e.value("event", "") == "link_health")
      for (const auto& l : e["links"])
        if (l.value("id", "") == "rail:lo#1" && l.value("state", "") == "down") down = true;
  }
  EXPECT_TRUE(shift) << "no rail_shift naming lo#1's death in " << log;
  EXPECT_TRUE(down);
  std::remove(log.c_str());
  rmdir(dir);
}

}  // namespace
}  // namespace wirewise::net
