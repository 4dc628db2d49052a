#include "bench/alloc_counter.h"

#include <cstddef>
#include <cstdlib>
#include <new>

extern "C" {
void* __libc_malloc(size_t);
void* __libc_calloc(size_t, size_t);
void* __libc_realloc(void*, size_t);
void* __libc_memalign(size_t, size_t);
void __libc_free(void*);
}

namespace {
// Thread-local and initial-exec in the executable, so touching them never allocates.
thread_local bool tCounting = false;
thread_local uint64_t tAllocs = 0;

inline void note() {
  if (tCounting) ++tAllocs;
}
}  // namespace

namespace wirewise::bench {
void startCountingAllocs() {
  tAllocs = 0;
  tCounting = true;
}
uint64_t stopCountingAllocs() {
  tCounting = false;
  return tAllocs;
}
}  // namespace wirewise::bench

// Exported from the executable (ENABLE_EXPORTS), so they interpose for every library, the plugin included.
extern "C" {
void* malloc(size_t n) {
  note();
  return __libc_malloc(n);
}
void* calloc(size_t a, size_t b) {
  note();
  return __libc_calloc(a, b);
}
void* realloc(void* p, size_t n) {
  note();
  return __libc_realloc(p, n);
}
void* memalign(size_t align, size_t n) {
  note();
  return __libc_memalign(align, n);
}
void* aligned_alloc(size_t align, size_t n) {
  note();
  return __libc_memalign(align, n);
}
int posix_memalign(void** out, size_t align, size_t n) {
  note();
  void* p = __libc_memalign(align, n);
  if (p == nullptr) return 12;  // ENOMEM
  *out = p;
  return 0;
}
void free(void* p) { __libc_free(p); }
}

// operator new counts once and allocates directly, so a `new` is never counted twice through malloc.
namespace {
void* allocate(size_t n, size_t align) {
  note();
  void* p = align > alignof(std::max_align_t) ? __libc_memalign(align, n ? n : 1) : __libc_malloc(n ? n : 1);
  if (p == nullptr) throw std::bad_alloc();
  return p;
}
void* allocateNoThrow(size_t n, size_t align) noexcept {
  note();
  return align > alignof(std::max_align_t) ? __libc_memalign(align, n ? n : 1) : __libc_malloc(n ? n : 1);
}
}  // namespace

void* operator new(size_t n) { return allocate(n, 0); }
void* operator new[](size_t n) { return allocate(n, 0); }
void* operator new(size_t n, std::align_val_t a) { return allocate(n, static_cast<size_t>(a)); }
void* operator new[](size_t n, std::align_val_t a) { return allocate(n, static_cast<size_t>(a)); }
void* operator new(size_t n, const std::nothrow_t&) noexcept { return allocateNoThrow(n, 0); }
void* operator new[](size_t n, const std::nothrow_t&) noexcept { return allocateNoThrow(n, 0); }
void* operator new(size_t n, std::align_val_t a, const std::nothrow_t&) noexcept {
  return allocateNoThrow(n, static_cast<size_t>(a));
}
void* operator new[](size_t n, std::align_val_t a, const std::nothrow_t&) noexcept {
  return allocateNoThrow(n, static_cast<size_t>(a));
}
void operator delete(void* p) noexcept { __libc_free(p); }
void operator delete[](void* p) noexcept { __libc_free(p); }
void operator delete(void* p, size_t) noexcept { __libc_free(p); }
void operator delete[](void* p, size_t) noexcept { __libc_free(p); }
void operator delete(void* p, std::align_val_t) noexcept { __libc_free(p); }
void operator delete[](void* p, std::align_val_t) noexcept { __libc_free(p); }
void operator delete(void* p, size_t, std::align_val_t) noexcept { __libc_free(p); }
void operator delete[](void* p, size_t, std::align_val_t) noexcept { __libc_free(p); }
