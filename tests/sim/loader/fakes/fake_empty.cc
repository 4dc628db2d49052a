// A loadable library that exports no plugin symbol: NCCL reports such a plugin as unsupported.
extern "C" __attribute__((visibility("default"))) int fakeEmptyMarker() { return 42; }
