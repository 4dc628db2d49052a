#!/bin/sh
# The library's dynamic interface: exactly NCCL's plugin data symbols, and no CUDA, NVML, NCCL or
# Boost library among its dependencies (it must load on any Linux machine; libpthread and libdl are
# glibc's own, named for glibc before 2.34: plugin/CMakeLists.txt).
set -eu
lib="$1"
expected="ncclNetPlugin_v10 ncclNetPlugin_v11 ncclNetPlugin_v12 ncclNetPlugin_v8 ncclNetPlugin_v9"
expected="$expected ncclProfiler_v4 ncclProfiler_v5 ncclProfiler_v6 ncclTunerPlugin_v2 ncclTunerPlugin_v3 ncclTunerPlugin_v4 ncclTunerPlugin_v5"
expected="$expected ncclTunerPlugin_v6 ncclTunerPlugin_v7"
actual=$(nm -D --defined-only "$lib" | awk '{print $3}' | grep -v '^$' | sort | tr '\n' ' ' | sed 's/ $//')
if [ "$actual" != "$expected" ]; then
  echo "FAIL: exported symbols differ"; echo " expected: $expected"; echo " actual:   $actual"; exit 1
fi
for sym in $expected; do
  kind=$(nm -D --defined-only "$lib" | awk -v s="$sym" '$3 == s {print $2}')
  case "$kind" in R|D) ;; *) echo "FAIL: $sym is not a data object (nm type $kind)"; exit 1 ;; esac
done
needed=$(readelf -d "$lib" | sed -n 's/.*(NEEDED).*\[\(.*\)\]/\1/p' | tr '\n' ' ')
for dep in $needed; do
  case "$dep" in
    libc.so.*|libm.so.*|libpthread.so.*|libdl.so.*|libstdc++.so.*|libgcc_s.so.*|ld-linux*.so.*) ;;
    *) echo "FAIL: unexpected dependency $dep (allowed: glibc's libc, libm, libpthread, libdl and ld-linux; libstdc++, libgcc_s)"; exit 1 ;;
  esac
done
echo "exports: $actual"
echo "needed: $needed"
