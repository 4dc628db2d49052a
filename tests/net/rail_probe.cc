// One end of a multi-rail transfer through the real library (for netns_rails.sh): picks the merged
// device NCCL would use on a multi-rail host, exchanges the handle through a file, and sends or
// receives-and-verifies a deterministic message stream.
#include <dlfcn.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <string>

#include "tests/net/proxy_driver.h"
#include "tests/wait_until.h"

using namespace wirewise::net::testing;

int main(int argc, char** argv) {
  if (argc != 5) {
    std::fprintf(stderr, "usage: %s send|recv HANDLE_FILE MESSAGES MESSAGE_BYTES\n", argv[0]);
    return 2;
  }
  const bool sender = std::strcmp(argv[1], "send") == 0;
  const std::string path = argv[2];
  const int count = std::atoi(argv[3]);
  const size_t bytes = std::strtoull(argv[4], nullptr, 10);
  void* lib = dlopen(WW_NET_SO, RTLD_NOW | RTLD_LOCAL);
  auto* net = lib == nullptr ? nullptr : static_cast<const ncclNet_v11_t*>(dlsym(lib, "ncclNetPlugin_v11"));
  void* ctx = nullptr;
  int ndev = 0;
  if (net == nullptr || net->init(&ctx, 1, nullptr, nullptr, nullptr) != ncclSuccess ||
      net->devices(&ndev) != ncclSuccess) {
    std::fprintf(stderr, "cannot load the plugin\n");
    return 3;
  }
  int dev = -1;
  for (int d = 0; d < ndev; ++d) {
    ncclNetProperties_v11_t p;
    if (net->getProperties(d, &p) == ncclSuccess && std::strcmp(p.name, "wirewise-merged") == 0) dev = d;
  }
  if (dev < 0) {
    std::fprintf(stderr, "no merged device among %d\n", ndev);
    return 4;
  }
  std::vector<Message> traffic(static_cast<size_t>(count), Message{bytes, 1});
  char handle[NCCL_NET_HANDLE_MAXSIZE] = {};
  RunResult r;
  void *lc = nullptr, *rc = nullptr, *sc = nullptr;
  if (!sender) {
    if (net->listen(ctx, dev, handle, &lc) != ncclSuccess) return 5;
    std::ofstream(path + ".tmp", std::ios::binary).write(handle, sizeof handle);
    std::rename((path + ".tmp").c_str(), path.c_str());
    if (acceptLoop(net, lc, &rc) != ncclSuccess) return 6;
    r = runSide(net, rc, false, traffic, 0x7a11, 8);
  } else {
    wirewise::waitUntil([&] { return access(path.c_str(), R_OK) == 0; }, std::chrono::seconds(10),
                        std::chrono::milliseconds(50));
    std::ifstream(path, std::ios::binary).read(handle, sizeof handle);
    if (connectLoop(net, ctx, dev, handle, &sc) != ncclSuccess) return 7;
    r = runSide(net, sc, true, traffic, 0x7a11, 8);
  }
  if (!r.error.empty()) {
    std::fprintf(stderr, "%s: %s\n", argv[1], r.error.c_str());
    return 8;
  }
  // Closed as NCCL closes them (so that LeakSanitizer, in the sanitizer build, sees nothing left behind).
  if ((sc != nullptr && net->closeSend(sc) != ncclSuccess) || (rc != nullptr && net->closeRecv(rc) != ncclSuccess) ||
      (lc != nullptr && net->closeListen(lc) != ncclSuccess) || net->finalize(ctx) != ncclSuccess) {
    std::fprintf(stderr, "%s: closing failed\n", argv[1]);
    return 9;
  }
  if (!sender) std::printf("received %zu bytes in %.3f s (%.2f GB/s)\n", r.bytes, r.seconds, r.bytes / r.seconds / 1e9);
  return 0;
}
