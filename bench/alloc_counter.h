// Heap-allocation counting for benchmarks: this binary replaces malloc/calloc/realloc/memalign and the
// global operator new, and counts calls made by the current thread while counting is on. The plugin is
// dlopened into this process, so its allocations (operator new in libstdc++, malloc from anywhere) land
// here too; other threads (the plugin's background thread) are not counted.
#pragma once

#include <cstdint>

namespace wirewise::bench {

void startCountingAllocs();      // resets this thread's count and starts counting
uint64_t stopCountingAllocs();   // stops and returns the count since start

}  // namespace wirewise::bench
