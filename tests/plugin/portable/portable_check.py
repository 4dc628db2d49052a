#!/usr/bin/env python3
"""The shipped library loads where NCCL runs (WIREWISE_PORTABLE, plugin/glibc_floor.c).

1. Every symbol version it needs, from `objdump -T`: glibc 2.28 or older (RHEL 8), libgcc_s GCC_7.0.0 or
   older (GCC 8's), and nothing of libstdc++ (GLIBCXX_*, CXXABI_*): that is linked in.
2. Its dependencies, from `readelf -d`: glibc's own libraries and libgcc_s only.
3. It loads and answers through a C program (the way NCCL opens it) with an older libstdc++ first on the
   library path: a stand-in with GCC 8's version names. A negative control, an ordinary C++ library built
   here, must fail to load there, or the stand-in would prove nothing.

Usage: portable_check.py PLUGIN_SO PROFILER_SO LOADER STUB_DIR CONTROL_SO
"""
import os
import re
import subprocess
import sys

GLIBC_FLOOR = (2, 28)
LIBGCC_FLOOR = (7, 0, 0)
ALLOWED_NEEDED = re.compile(r"^(libc\.so\.6|libm\.so\.6|libpthread\.so\.0|libdl\.so\.2|libgcc_s\.so\.1|ld-linux[-\w.]*\.so\.\d+)$")


def version_tuple(text):
    return tuple(int(p) for p in text.split("."))


def needed_versions(lib):
    """(symbol, version name) for every undefined symbol that names a version."""
    out = subprocess.run(["objdump", "-T", lib], check=True, capture_output=True, text=True).stdout
    found = []
    for line in out.splitlines():
        m = re.search(r"\*UND\*\s+\S+\s+\(?([A-Z]+_[\d.]+)\)?\s+(\S+)$", line)
        if m:
            found.append((m.group(2), m.group(1)))
    return found


def check_versions(lib):
    problems, newest = [], {}
    for symbol, version in needed_versions(lib):
        family, _, number = version.partition("_")
        if family in ("GLIBCXX", "CXXABI"):
            problems.append(f"{symbol} needs {version}: libstdc++ must be linked in")
            continue
        floor = {"GLIBC": GLIBC_FLOOR, "GCC": LIBGCC_FLOOR}.get(family)
        if floor is None:
            problems.append(f"{symbol} needs {version}, a library outside glibc and libgcc_s")
            continue
        v = version_tuple(number)
        if v > floor:
            problems.append(f"{symbol} needs {version} (floor {family}_{'.'.join(map(str, floor))}): "
                            "add it to plugin/glibc_floor.c")
        if v > newest.get(family, ()):
            newest[family] = v
    print("newest versions needed: " + ", ".join(f"{f}_{'.'.join(map(str, v))}" for f, v in sorted(newest.items())))
    if "GLIBC" not in newest:
        problems.append("no GLIBC version found at all: objdump's output was not understood")
    return problems


def check_needed(lib):
    out = subprocess.run(["readelf", "-d", lib], check=True, capture_output=True, text=True).stdout
    needed = re.findall(r"\(NEEDED\).*\[(.+)\]", out)
    print("needed: " + " ".join(needed))
    return [f"depends on {n}: only glibc's libraries and libgcc_s may be" for n in needed if not ALLOWED_NEEDED.match(n)]


def load_in_python(lib, env):
    """dlopen with RTLD_NOW in a fresh python3 (which itself needs no libstdc++): (ok, message)."""
    code = "import ctypes,os,sys; ctypes.CDLL(sys.argv[1], mode=os.RTLD_NOW|os.RTLD_LOCAL)"
    r = subprocess.run([sys.executable, "-c", code, lib], env=env, capture_output=True, text=True)
    return r.returncode == 0, (r.stderr.strip().splitlines() or [""])[-1]


def check_old_libstdcxx(plugin, profiler, loader, stub_dir, control):
    problems = []
    old_first = dict(os.environ, LD_LIBRARY_PATH=stub_dir + os.pathsep + os.environ.get("LD_LIBRARY_PATH", ""))
    ok, message = load_in_python(control, dict(os.environ))
    if not ok:
        problems.append(f"the negative control does not load even with this system's libstdc++: {message}")
    ok, message = load_in_python(control, old_first)
    if ok or "GLIBCXX" not in message:
        problems.append("the negative control loaded (or failed for another reason) with the older libstdc++ "
                        f"first: the stand-in proves nothing ({message or 'loaded'})")
    else:
        print(f"negative control, older libstdc++ first: refused as expected ({message})")
    r = subprocess.run([loader, plugin, profiler], env=old_first, capture_output=True, text=True, timeout=60)
    if r.returncode != 0:
        problems.append(f"the plugin did not load and answer with the older libstdc++ first: {r.stderr.strip()}")
    else:
        print(f"plugin, older libstdc++ first: {r.stdout.strip()}")
    return problems


def main():
    if len(sys.argv) != 6:
        print(__doc__, file=sys.stderr)
        return 2
    plugin, profiler, loader, stub_dir, control = sys.argv[1:]
    problems = check_versions(plugin) + check_needed(plugin)
    problems += check_old_libstdcxx(plugin, profiler, loader, stub_dir, control)
    for p in problems:
        print("FAIL: " + p)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
