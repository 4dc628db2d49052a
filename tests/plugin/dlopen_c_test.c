/* Loads the built library the way NCCL does (RTLD_NOW | RTLD_LOCAL) from a plain C program: catches
   unresolved symbols, C++ leaks into the dynamic interface, and checks that the tuner, profiler and net
   names resolve to one instance. Drives one v5 getCollInfo on a flat float[7][3] table. */
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct {
  const char* name;
  int (*init)(void**, unsigned long long, size_t, size_t, void*, void*, void*);
  int (*getCollInfo)(void*, int, size_t, int, float**, int, int, int, int*);
  int (*finalize)(void*);
} tuner_v5;

static int fail(const char* what) {
  fprintf(stderr, "FAIL: %s (%s)\n", what, dlerror());
  return 1;
}

typedef struct {
  const char* name;
  int (*init)(void**, unsigned long long, int*, const char*, int, int, int, void*);
} profiler_v5_head;

/* NCCL 2.28 may never finalize a communicator nor dlclose the tuner (NVIDIA/nccl PR #2261): the
   process must still exit cleanly with the plugin's background thread running. */
static int leakAtExit(void* tuner, const tuner_v5* t) {
  void* ctx = NULL;
  static int mask;
  const profiler_v5_head* p = (const profiler_v5_head*)dlsym(tuner, "ncclProfiler_v5");
  void* pctx = NULL;
  if (t->init(&ctx, 0x99ull, 8, 1, NULL, NULL, NULL) != 0 || ctx == NULL) return fail("init");
  if (p == NULL || p->init(&pctx, 0x99ull, &mask, "leak", 1, 8, 0, NULL) != 0 || pctx == NULL)
    return fail("profiler init");
  printf("dlopen_c_test: exiting with live communicators\n");
  return 0;
}

int main(int argc, char** argv) {
  if (argc != 3 && !(argc == 4 && strcmp(argv[3], "leak") == 0)) {
    fprintf(stderr, "usage: %s TUNER_SO PROFILER_SO [leak]\n", argv[0]);
    return 2;
  }
  setenv("WIREWISE_LOG", "none", 1);
  void* tuner = dlopen(argv[1], RTLD_NOW | RTLD_LOCAL);
  if (!tuner) return fail("dlopen tuner");
  void* profiler = dlopen(argv[2], RTLD_NOW | RTLD_LOCAL);
  if (!profiler) return fail("dlopen profiler symlink");
  const char* syms[] = {"ncclTunerPlugin_v7", "ncclTunerPlugin_v6", "ncclTunerPlugin_v5", "ncclTunerPlugin_v4",
                        "ncclTunerPlugin_v3", "ncclTunerPlugin_v2", "ncclProfiler_v6",    "ncclProfiler_v5",
                        "ncclProfiler_v4",    "ncclNetPlugin_v12",  "ncclNetPlugin_v11",  "ncclNetPlugin_v10",
                        "ncclNetPlugin_v9",   "ncclNetPlugin_v8"};
  for (size_t i = 0; i < sizeof syms / sizeof syms[0]; ++i) {
    void* a = dlsym(tuner, syms[i]);
    void* b = dlsym(profiler, syms[i]);
    if (!a) return fail(syms[i]);
    if (a != b) {
      fprintf(stderr, "FAIL: %s differs between the tuner and profiler names: two instances\n", syms[i]);
      return 1;
    }
  }
  /* The net face: every version is named "wirewise" (NCCL matches NCCL_NET against it). */
  for (size_t i = 6; i < sizeof syms / sizeof syms[0]; ++i) {
    const char* const* netName = (const char* const*)dlsym(tuner, syms[i]);
    if (strcmp(*netName, "wirewise") != 0) return fail(syms[i]);
  }
  const tuner_v5* t = (const tuner_v5*)dlsym(tuner, "ncclTunerPlugin_v5");
  if (strcmp(t->name, "wirewise") != 0) return fail("name");
  if (argc == 4) return leakAtExit(tuner, t);
  void* ctx = NULL;
  if (t->init(&ctx, 0x1234ull, 8, 1, NULL, NULL, NULL) != 0 || ctx == NULL) return fail("init");
  float table[7][3];
  for (int a = 0; a < 7; ++a)
    for (int p = 0; p < 3; ++p) table[a][p] = (a == 1) ? 10.0f * (p + 1) : -1.0f;
  int nChannels = 0;
  if (t->getCollInfo(ctx, 4, 1 << 20, 1, (float**)table, 7, 3, 0, &nChannels) != 0) return fail("getCollInfo");
  /* No configuration: the table and channel count must be exactly as NCCL set them. */
  if (nChannels != 0 || table[1][0] != 10.0f || table[0][0] != -1.0f) return fail("pass-through changed the table");
  if (t->finalize(ctx) != 0) return fail("finalize");
  dlclose(profiler);
  dlclose(tuner);
  printf("dlopen_c_test: ok\n");
  return 0;
}
