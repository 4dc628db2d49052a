/* The shipped library's glibc floor: it must load on glibc 2.28 (RHEL 8, Ubuntu 20.04 has 2.31), although
   it is built on a newer one (Debian 12: 2.36). A program built against glibc N asks for the newest
   version of every function it calls: glibc 2.34 moved pthread_* and dl* into libc.so.6 under a new
   version (GLIBC_2.34), 2.33 made stat() a real function (GLIBC_2.33), 2.29 gave exp() and log() new
   versions, and libstdc++ (linked in statically, plugin/CMakeLists.txt) calls pthread_cond_clockwait
   (2.30), arc4random (2.36) and reads __libc_single_threaded (2.32).

   Each of those names is defined here, hidden (this library only; never exported, so nothing of NCCL's
   or the application's is interposed). The static linker binds every call in this library, libstdc++'s
   archive members included, to these definitions, and each one calls the oldest version glibc still
   exports (".symver" names the version), or, where none is old enough, does the same with older calls.
   tests/plugin/portable_check.py reads the result with objdump: no version above GLIBC_2.28, no
   GLIBCXX or CXXABI at all; the whole suite runs the library built this way.

   x86_64 only: the old version names (GLIBC_2.2.5) and the stat ABI number are that architecture's. Built
   only into the shipped library, and not in sanitizer builds: the sanitizers intercept these calls by
   name, which a hidden definition would bypass. Written in C and compiled without LTO: the definitions
   take no prototypes from glibc's headers (C linkage does not carry types), and LTO handles .symver
   badly. */
#define _GNU_SOURCE
#include <errno.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/random.h>
#include <time.h>

#define WW_HIDDEN __attribute__((visibility("hidden")))

/* NAME called as NAME@VERSION: a local alias bound to the old version, and a hidden NAME that calls it. */
#define WW_OLD(ret, name, version, params, args)                      \
  ret ww_old_##name params;                                           \
  __asm__(".symver ww_old_" #name "," #name "@" version);             \
  WW_HIDDEN ret name params { return ww_old_##name args; }

typedef void* Ptr;
typedef const void* CPtr;

WW_OLD(double, exp, "GLIBC_2.2.5", (double x), (x))
WW_OLD(double, log, "GLIBC_2.2.5", (double x), (x))
WW_OLD(Ptr, dlopen, "GLIBC_2.2.5", (const char* file, int mode), (file, mode))
WW_OLD(Ptr, dlsym, "GLIBC_2.2.5", (Ptr handle, const char* name), (handle, name))
WW_OLD(char*, dlerror, "GLIBC_2.2.5", (void), ())
WW_OLD(int, pthread_create, "GLIBC_2.2.5", (Ptr thread, CPtr attr, Ptr (*start)(Ptr), Ptr arg),
       (thread, attr, start, arg))
WW_OLD(int, pthread_join, "GLIBC_2.2.5", (unsigned long thread, Ptr* result), (thread, result))
WW_OLD(int, pthread_detach, "GLIBC_2.2.5", (unsigned long thread), (thread))
WW_OLD(int, pthread_once, "GLIBC_2.2.5", (Ptr once, void (*init)(void)), (once, init))
WW_OLD(int, pthread_key_create, "GLIBC_2.2.5", (Ptr key, void (*destroy)(Ptr)), (key, destroy))
WW_OLD(int, __pthread_key_create, "GLIBC_2.2.5", (Ptr key, void (*destroy)(Ptr)), (key, destroy))
WW_OLD(int, pthread_key_delete, "GLIBC_2.2.5", (unsigned key), (key))
WW_OLD(Ptr, pthread_getspecific, "GLIBC_2.2.5", (unsigned key), (key))
WW_OLD(int, pthread_setspecific, "GLIBC_2.2.5", (unsigned key, CPtr value), (key, value))
WW_OLD(int, pthread_setname_np, "GLIBC_2.12", (unsigned long thread, const char* name), (thread, name))
WW_OLD(int, pthread_condattr_setclock, "GLIBC_2.3.3", (Ptr attr, int clock), (attr, clock))
WW_OLD(int, pthread_sigmask, "GLIBC_2.2.5", (int how, CPtr set, Ptr old), (how, set, old))
WW_OLD(int, pthread_getcpuclockid, "GLIBC_2.2.5", (unsigned long thread, Ptr clock), (thread, clock))

/* Before 2.33, stat() and its kin were inline wrappers over __xstat(version, ...), which glibc still
   exports; 1 is x86_64's struct stat layout (_STAT_VER_LINUX), the one the callers were compiled for. */
enum { kStatVer = 1 };
int __xstat(int ver, const char* path, Ptr buf);
int __lxstat(int ver, const char* path, Ptr buf);
int __fxstat(int ver, int fd, Ptr buf);
int __fxstat64(int ver, int fd, Ptr buf);
int __fxstatat(int ver, int dirfd, const char* path, Ptr buf, int flags);
WW_HIDDEN int stat(const char* path, Ptr buf) { return __xstat(kStatVer, path, buf); }
WW_HIDDEN int lstat(const char* path, Ptr buf) { return __lxstat(kStatVer, path, buf); }
WW_HIDDEN int fstat(int fd, Ptr buf) { return __fxstat(kStatVer, fd, buf); }
WW_HIDDEN int fstat64(int fd, Ptr buf) { return __fxstat64(kStatVer, fd, buf); }
WW_HIDDEN int fstatat(int dirfd, const char* path, Ptr buf, int flags) {
  return __fxstatat(kStatVer, dirfd, path, buf, flags);
}

/* libstdc++ waits on a steady-clock deadline with pthread_cond_clockwait (2.30). Before it, the deadline
   is turned into a wall-clock one, as libstdc++ itself does where the call is missing: a wall-clock step
   during the wait makes it end early or late, which a condition-variable wait may do anyway (every
   caller rechecks its own clock and predicate). */
int pthread_cond_timedwait(Ptr cond, Ptr mutex, const struct timespec* abstime);
WW_HIDDEN int pthread_cond_clockwait(Ptr cond, Ptr mutex, clockid_t clock, const struct timespec* abstime) {
  if (clock == CLOCK_REALTIME) return pthread_cond_timedwait(cond, mutex, abstime);
  struct timespec now, wall;
  clock_gettime(clock, &now);
  clock_gettime(CLOCK_REALTIME, &wall);
  int64_t left = (int64_t)(abstime->tv_sec - now.tv_sec) * 1000000000 + (abstime->tv_nsec - now.tv_nsec);
  if (left < 0) left = 0;
  int64_t end = (int64_t)wall.tv_nsec + left % 1000000000;
  wall.tv_sec += (time_t)(left / 1000000000 + end / 1000000000);
  wall.tv_nsec = (long)(end % 1000000000);
  return pthread_cond_timedwait(cond, mutex, &wall);
}

/* std::random_device's default source on glibc 2.36. getrandom (2.25) blocks only until the kernel's pool
   is first seeded, as arc4random does. */
WW_HIDDEN uint32_t arc4random(void) {
  uint32_t v = 0;
  size_t got = 0;
  while (got < sizeof v) {
    ssize_t n = getrandom((char*)&v + got, sizeof v - got, 0);
    if (n > 0) got += (size_t)n;
    else if (n < 0 && errno != EINTR) break; /* no source at all (kernel < 3.17): v as it stands */
  }
  return v;
}

/* glibc 2.32+ sets this to 1 while a process has one thread, and libstdc++ then skips atomic operations
   (shared_ptr counts). 0, "maybe several threads", is always correct; it costs an atomic instruction. */
WW_HIDDEN char __libc_single_threaded = 0;
