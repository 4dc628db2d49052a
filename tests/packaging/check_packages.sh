#!/bin/sh
# The release artifacts (cmake/packaging.cmake): a Debian package and, beside it, a tarball for systems
# without dpkg. Both are built from BUILD_DIR with cpack into a scratch directory, and each must hold the
# library with its two face names as symbolic links to it, the `wirewise` tool and the examples, and the
# library in it must be the portable one (tests/plugin/portable/portable_check.py's version floor).
# Usage: check_packages.sh BUILD_DIR   (run by .ci/run after the build)
set -eu
build=$(cd "$1" && pwd)
here=$(cd "$(dirname "$0")" && pwd)
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
(cd "$build" && cpack -G "DEB;TGZ" -B "$out" >"$out/cpack.log" 2>&1) || { cat "$out/cpack.log"; exit 1; }
deb=$(ls "$out"/*.deb)
tgz=$(ls "$out"/*.tar.gz)
echo "packages: $(basename "$deb") ($(du -h "$deb" | cut -f1)), $(basename "$tgz") ($(du -h "$tgz" | cut -f1))"
fail=0
check() {  # check LISTING KIND: the entries every package must have
  for want in "lib/.*libnccl-tuner-wirewise\.so$" "lib/.*libnccl-profiler-wirewise\.so -> libnccl-tuner-wirewise\.so" \
              "lib/.*libnccl-net-wirewise\.so -> libnccl-tuner-wirewise\.so" "bin/wirewise$" \
              "share/doc/wirewise/examples/nccl\.conf$" "share/doc/wirewise/examples/pytorch/wirewise\.env$"; do
    if ! grep -Eq "$want" "$1"; then
      echo "FAIL: the $2 has no entry matching $want"
      fail=1
    fi
  done
}
dpkg-deb -c "$deb" >"$out/deb.txt"
tar tvzf "$tgz" >"$out/tgz.txt"
check "$out/deb.txt" "Debian package"
check "$out/tgz.txt" "tarball"
mkdir "$out/x"
tar xzf "$tgz" -C "$out/x"
lib=$(find "$out/x" -type f -name libnccl-tuner-wirewise.so | head -n 1)
newest=$(objdump -T "$lib" | grep -o 'GLIBC_[0-9.]*' | sed 's/GLIBC_//' | sort -V | tail -n 1)
if [ -n "$(objdump -T "$lib" | grep -E 'GLIBCXX_|CXXABI_' || true)" ]; then
  echo "FAIL: the packaged library needs libstdc++"
  fail=1
fi
if [ "$(printf '%s\n2.28\n' "$newest" | sort -V | tail -n 1)" != "2.28" ]; then
  echo "FAIL: the packaged library needs GLIBC_$newest (floor 2.28)"
  fail=1
fi
echo "packaged library: newest glibc version GLIBC_$newest, no libstdc++"
[ "$fail" = 0 ] && echo "packages: ok"
exit "$fail"
