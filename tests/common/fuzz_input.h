// The libFuzzer targets' reader of their input: bytes taken in order, and zeros once it runs out, so a
// short input still drives a whole run.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>

namespace wirewise::fuzz {

struct Input {
  const uint8_t* p;
  size_t n;
  uint8_t byte() {
    if (n == 0) return 0;
    --n;
    return *p++;
  }
  void bytes(void* out, size_t len) {  // missing bytes read as zero
    size_t k = len < n ? len : n;
    std::memcpy(out, p, k);
    std::memset(static_cast<char*>(out) + k, 0, len - k);
    p += k;
    n -= k;
  }
  template <class T>
  T raw() {
    T v;
    bytes(&v, sizeof v);
    return v;
  }
};

}  // namespace wirewise::fuzz
