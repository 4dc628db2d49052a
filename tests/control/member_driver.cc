// One "rank" process of the multi-process agreement test: loads the real plugin through the NCCL-faithful
// loader, creates several tuner v5 communicators (ids shared by every process of the test) and runs each
// communicator's collective sequence, recording NCCL's final choice (algorithm, protocol, channels) for
// every collective. The control plane is configured by the parent through WIREWISE_* variables.
//
//   control_member_driver <plugin.so> <out file> <nComms> <nRanks> <collectives> [start delay ms]
// A collective whose getCollInfo returns an error is recorded as three 0xFE bytes.
// WW_TEST_TREE_FIRST=1 makes this process's cost tables prefer Tree over Ring (a rank of another kind, as on
// a heterogeneous cluster: NVIDIA/nccl #1136). After writing <out file> it waits for <out file>.go before finalizing: the job ends together (a process
// that hosts the coordinator must outlive the others' last boundary, as rank 0 does in a real job).
// WW_TEST_BARRIER=<dir>:<job>:<n>: after creating its communicators it waits (up to 60 s) until <n>
// processes of job <job> have, as ncclCommInitRank returns on no rank before all have joined NCCL's
// bootstrap.
// It writes <out file>.timing: microseconds from its start (after any start delay) to the end of its
// communicators' init, and from then to the end of its 1,000th round (0 when it runs fewer).
// WW_TEST_PACE_US=<us>: at least this long between rounds (one collective of every comm), as collectives
// take time on a GPU; without it a process runs thousands of collectives in the time of one round trip.
#include <unistd.h>

#include <chrono>
#include <cstdarg>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <thread>
#include <vector>

#include "sim/loader/nccl_loader.h"
#include "tests/wait_until.h"

using namespace wirewise;

namespace {
// NCCL's logger stand-in: WARN lines to stderr (the parent test reads them).
void logToStderr(ncclDebugLogLevel level, unsigned long, const char*, int, const char* fmt, ...) {
  if (level != NCCL_LOG_WARN) return;
  va_list ap;
  va_start(ap, fmt);
  std::fprintf(stderr, "NCCL WARN ");
  std::vfprintf(stderr, fmt, ap);
  std::fprintf(stderr, "\n");
  std::fflush(stderr);
  va_end(ap);
}
}  // namespace

int main(int argc, char** argv) {
  if (argc < 6) {
    std::fprintf(stderr, "usage: %s plugin out nComms nRanks collectives [delayMs]\n", argv[0]);
    return 2;
  }
  const int nComms = std::atoi(argv[3]);
  const size_t nRanks = static_cast<size_t>(std::atol(argv[4]));
  const long nColl = std::atol(argv[5]);
  // The scenario's late starter: this member begins delayMs after the others.
  if (argc > 6) std::this_thread::sleep_for(std::chrono::milliseconds(std::atol(argv[6])));
  const auto started = std::chrono::steady_clock::now();

  loader::OpenResult open = loader::openPlugin(loader::PluginKind::Tuner, argv[1], nullptr);
  if (open.handle == nullptr) return 3;
  std::string why;
  auto tuner = loader::Tuner::load(open.handle, &why);
  if (!tuner || tuner->version() != 5) return 4;

  // Which communicators this process is in: by default comms 0..nComms-1 of nRanks each; WW_TEST_COMMS=
  // "id/ranks,id/ranks,..." names them (subgroups, as PyTorch's process groups make them).
  std::vector<std::pair<uint64_t, size_t>> comms;
  if (const char* list = std::getenv("WW_TEST_COMMS")) {
    std::string spec(list);
    for (size_t at = 0; at < spec.size();) {
      size_t end = spec.find(',', at);
      if (end == std::string::npos) end = spec.size();
      const std::string item = spec.substr(at, end - at);
      const size_t slash = item.find('/');
      comms.emplace_back(std::stoull(item.substr(0, slash)), std::stoul(item.substr(slash + 1)));
      at = end + 1;
    }
  } else {
    for (int i = 0; i < nComms; ++i) comms.emplace_back(static_cast<uint64_t>(i), nRanks);
  }
  const int nCtx = static_cast<int>(comms.size());
  std::vector<void*> ctx(comms.size(), nullptr);
  for (size_t i = 0; i < comms.size(); ++i) {
    const int n = static_cast<int>(comms[i].second);
    ncclNvlDomainInfo_v5_t nvl{1, n, n};
    ncclTunerConstants_v5_t constants{};
    if (tuner->init(&ctx[i], 0xC0FFEE00ull + comms[i].first, comms[i].second, 1, logToStderr, &nvl, &constants) !=
        ncclSuccess)
      return 5;
  }
  const auto initDone = std::chrono::steady_clock::now();
  auto round1000 = initDone;
  if (const char* barrier = std::getenv("WW_TEST_BARRIER")) {
    const std::string spec(barrier);
    const size_t last = spec.rfind(':'), mid = spec.rfind(':', last - 1);
    const std::string dir = spec.substr(0, mid);
    const std::string prefix = "ready" + spec.substr(mid + 1, last - mid - 1) + "-";
    const long n = std::atol(spec.substr(last + 1).c_str());
    std::ofstream(dir + "/" + prefix + std::to_string(getpid())) << "ready";
    wirewise::waitUntil(
        [&] {
          long ready = 0;
          for (const auto& e : std::filesystem::directory_iterator(dir))
            ready += e.path().filename().string().rfind(prefix, 0) == 0;
          return ready >= n;
        },
        std::chrono::seconds(60), std::chrono::milliseconds(1));
  }
  const char* paceEnv = std::getenv("WW_TEST_PACE_US");
  const auto pace = std::chrono::microseconds(paceEnv != nullptr ? std::atol(paceEnv) : 0);
  auto nextRound = std::chrono::steady_clock::now();
  // One byte each for algorithm, protocol and channels, per collective, comm after comm.
  std::vector<std::vector<uint8_t>> rec(comms.size());
  const loader::CommChannels comm{16, 16, 1};
  const char* treeFirst = std::getenv("WW_TEST_TREE_FIRST");
  const bool tree = treeFirst != nullptr && std::string(treeFirst) == "1";
  for (long s = 0; s < nColl; ++s) {
    if (pace.count() > 0) {
      nextRound += pace;
      std::this_thread::sleep_until(nextRound);
    }
    for (int i = 0; i < nCtx; ++i) {
      const int id = static_cast<int>(comms[static_cast<size_t>(i)].first);
      float table[NCCL_NUM_ALGORITHMS][NCCL_NUM_PROTOCOLS];
      for (auto& row : table)
        for (float& c : row) c = -1.0f;
      for (int p = 0; p < NCCL_NUM_PROTOCOLS; ++p) {
        table[NCCL_ALGO_TREE][p] = (tree ? 10.0f : 20.0f) + static_cast<float>(p);
        table[NCCL_ALGO_RING][p] = (tree ? 20.0f : 10.0f) + static_cast<float>(p);
      }
      auto coll = static_cast<ncclFunc_t>((s * 7 + id) % 5);
      size_t bytes = size_t{1} << ((s * 13 + id) % 30);
      int nCh = 0;
      auto& r = rec[static_cast<size_t>(i)];
      // An error (WIREWISE_SYNC_GIVE_UP_MS): NCCL would fail this collective; recorded as 0xFE x 3.
      if (tuner->getCollInfo(ctx[static_cast<size_t>(i)], coll, bytes, 1, table, 0, &nCh) != ncclSuccess) {
        r.insert(r.end(), 3, uint8_t{0xFE});
        continue;
      }
      loader::Selection sel = loader::selectAlgo(table, nCh, 8, comm);
      r.push_back(static_cast<uint8_t>(sel.algo));
      r.push_back(static_cast<uint8_t>(sel.proto));
      r.push_back(static_cast<uint8_t>(sel.nChannels));
    }
    if (s == 999) round1000 = std::chrono::steady_clock::now();
  }
  {
    auto us = [](auto d) { return std::chrono::duration_cast<std::chrono::microseconds>(d).count(); };
    std::ofstream(std::string(argv[2]) + ".timing")
        << us(initDone - started) << " " << (nColl >= 1000 ? us(round1000 - initDone) : 0) << "\n";
  }
  {
    std::string tmp = std::string(argv[2]) + ".tmp";
    std::ofstream out(tmp, std::ios::binary);
    for (const auto& r : rec)
      out.write(reinterpret_cast<const char*>(r.data()), static_cast<std::streamsize>(r.size()));
    if (!out.good()) return 6;
    out.close();
    if (std::rename(tmp.c_str(), argv[2]) != 0) return 7;
  }
  std::string go = std::string(argv[2]) + ".go";
  wirewise::waitUntil([&] { return access(go.c_str(), F_OK) == 0; }, std::chrono::seconds(60),
                      std::chrono::milliseconds(10));
  for (void* c : ctx) tuner->finalize(c);
  return 0;
}
