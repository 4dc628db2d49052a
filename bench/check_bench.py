#!/usr/bin/env python3
"""Runs ww_bench_getcollinfo and checks the hot-path targets from its JSON output.

Usage: check_bench.py BENCH_BINARY [MAX_NS]
Fails when a getCollInfo benchmark's median CPU time, with the median table copy subtracted, exceeds MAX_NS
(default 50), when any getCollInfo call allocates, or when the allocation counter does not see the
sanity benchmarks' allocations (it would then prove nothing).
"""
import json
import subprocess
import sys


def main():
    binary = sys.argv[1]
    max_ns = float(sys.argv[2]) if len(sys.argv) > 2 else 50.0
    out = subprocess.run([binary, "--benchmark_min_time=0.05", "--benchmark_repetitions=5",
                          "--benchmark_format=json"], check=True, capture_output=True, text=True).stdout
    runs = json.loads(out)["benchmarks"]

    def ns(b):
        scale = {"ns": 1.0, "us": 1e3, "ms": 1e6, "s": 1e9}[b["time_unit"]]
        # CPU time: on a shared machine wall time also counts the time this thread was not running.
        return b["cpu_time"] * scale

    medians = {b["run_name"]: b for b in runs if b.get("aggregate_name") == "median"}
    allocs = {}
    for b in runs:
        if b.get("run_type") == "iteration":
            allocs[b["run_name"]] = max(allocs.get(b["run_name"], 0.0), b.get("allocs_per_call", 0.0))

    ok = True
    copy = ns(medians["BM_TableCopy"])
    print(f"table copy (baseline): median {copy:.2f} ns")
    for name in ("BM_AllocSanityNew", "BM_AllocSanityLibc"):
        if allocs.get(name) != 1.0:
            print(f"FAIL: {name} counted {allocs.get(name)} allocations per call, expected 1: the counter is broken")
            ok = False
    calls = [n for n in medians if n.startswith("BM_GetCollInfo")]
    if not calls:
        print("FAIL: no getCollInfo benchmark ran")
        ok = False
    for name in calls:
        total = ns(medians[name])
        net = total - copy
        a = allocs.get(name, -1)
        verdict = "ok"
        if net > max_ns or a != 0.0:
            verdict = "FAIL"
            ok = False
        print(f"{verdict:4} {name}: median {total:.2f} ns with copy, {net:.2f} ns getCollInfo "
              f"(limit {max_ns:.0f}), allocs_per_call {a:g}")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
