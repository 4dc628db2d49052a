// A stand-in for an old libnccl.so.2: only ncclGetVersion, answering 2.27.2 (too old to adapt).
extern "C" __attribute__((visibility("default"))) int ncclGetVersion(int* version) {
  *version = 22702;
  return 0;
}
