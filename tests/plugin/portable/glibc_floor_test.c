/* plugin/glibc_floor.c's replacements, linked into this program the way they are into the plugin: each
   must do what the glibc call it stands in for does. The clock wait is the one that computes: a deadline
   on the monotonic clock, 30 ms ahead, must end the wait no earlier and not much later. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

uint32_t arc4random(void);

static int failures = 0;
#define CHECK(cond)                                                    \
  do {                                                                 \
    if (!(cond)) {                                                     \
      fprintf(stderr, "FAIL %s:%d: %s\n", __FILE__, __LINE__, #cond); \
      ++failures;                                                      \
    }                                                                  \
  } while (0)

static int64_t nowNs(clockid_t c) {
  struct timespec t;
  clock_gettime(c, &t);
  return (int64_t)t.tv_sec * 1000000000 + t.tv_nsec;
}

static void* addOne(void* arg) {
  ++*(int*)arg;
  return arg;
}

int main(int argc, char** argv) {
  (void)argc;
  /* stat, lstat, fstat, fstatat agree on this program's own file. */
  struct stat a, b, c, d;
  CHECK(stat(argv[0], &a) == 0);
  CHECK(lstat(argv[0], &b) == 0);
  int fd = open(argv[0], O_RDONLY);
  CHECK(fd >= 0 && fstat(fd, &c) == 0);
  CHECK(fstatat(AT_FDCWD, argv[0], &d, 0) == 0);
  CHECK(a.st_ino == c.st_ino && a.st_size == c.st_size && a.st_ino == d.st_ino && S_ISREG(a.st_mode));
  CHECK(b.st_ino != 0);
  CHECK(stat("/nonexistent/wirewise", &a) == -1 && errno == ENOENT);
  close(fd);

  /* Threads, keys, once. */
  int n = 0;
  pthread_t t;
  void* ret = NULL;
  CHECK(pthread_create(&t, NULL, addOne, &n) == 0);
  CHECK(pthread_join(t, &ret) == 0 && ret == &n && n == 1);
  pthread_key_t key;
  CHECK(pthread_key_create(&key, NULL) == 0);
  CHECK(pthread_setspecific(key, &n) == 0 && pthread_getspecific(key) == &n);
  CHECK(pthread_key_delete(key) == 0);

  /* The steady-clock wait. */
  pthread_mutex_t m = PTHREAD_MUTEX_INITIALIZER;
  pthread_cond_t cv = PTHREAD_COND_INITIALIZER;
  struct timespec deadline;
  clock_gettime(CLOCK_MONOTONIC, &deadline);
  deadline.tv_nsec += 30 * 1000000;
  if (deadline.tv_nsec >= 1000000000) deadline.tv_sec += 1, deadline.tv_nsec -= 1000000000;
  int64_t start = nowNs(CLOCK_MONOTONIC);
  pthread_mutex_lock(&m);
  int rc = 0;
  while (rc != ETIMEDOUT) rc = pthread_cond_clockwait(&cv, &m, CLOCK_MONOTONIC, &deadline);
  pthread_mutex_unlock(&m);
  int64_t waited = nowNs(CLOCK_MONOTONIC) - start;
  CHECK(waited >= 29 * 1000000);
  CHECK(waited < 5000 * 1000000LL); /* a generous bound: a loaded machine may run us late */
  /* A deadline already past returns at once. */
  pthread_mutex_lock(&m);
  CHECK(pthread_cond_clockwait(&cv, &m, CLOCK_MONOTONIC, &deadline) == ETIMEDOUT);
  pthread_mutex_unlock(&m);

  /* Random words differ (2^-32 per pair to fail by chance: four pairs). */
  uint32_t r0 = arc4random();
  int differ = 0;
  for (int i = 0; i < 4; ++i) differ |= arc4random() != r0;
  CHECK(differ);
  CHECK(fabs(exp(1.0) - 2.718281828459045) < 1e-12 && fabs(log(exp(3.5)) - 3.5) < 1e-12);
  if (failures == 0) printf("glibc_floor_test: ok (steady wait of 30 ms took %.1f ms)\n", waited / 1e6);
  return failures == 0 ? 0 : 1;
}
