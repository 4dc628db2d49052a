#!/usr/bin/env python3
"""Runs ww_bench_collectors and checks the collectors' CPU budget from its JSON output.

Usage: check_collectors_bench.py BENCH_BINARY [PERIOD_MS] [MAX_CORE_PERCENT]
Fails when the median CPU time of one full sampling pass over the realistic fake tree (8 IB ports,
16 netdevs) exceeds MAX_CORE_PERCENT (default 1) of one core at one pass per PERIOD_MS (default 1000).
"""
import json
import subprocess
import sys


def main():
    binary = sys.argv[1]
    period_ms = float(sys.argv[2]) if len(sys.argv) > 2 else 1000.0
    max_pct = float(sys.argv[3]) if len(sys.argv) > 3 else 1.0
    out = subprocess.run([binary, "--benchmark_min_time=0.2", "--benchmark_repetitions=3",
                          "--benchmark_format=json"], check=True, capture_output=True, text=True).stdout
    runs = json.loads(out)["benchmarks"]
    scale = {"ns": 1e-6, "us": 1e-3, "ms": 1.0, "s": 1e3}
    medians = {b["run_name"]: b["cpu_time"] * scale[b["time_unit"]]
               for b in runs if b.get("aggregate_name") == "median"}
    for name, ms in sorted(medians.items()):
        print(f"{name}: median {ms * 1000:.1f} us CPU per call")
    if "BM_SamplePassAll" not in medians:
        print("FAIL: BM_SamplePassAll did not run")
        return 1
    pct = 100.0 * medians["BM_SamplePassAll"] / period_ms
    verdict = "ok" if pct <= max_pct else "FAIL"
    print(f"{verdict}: one pass every {period_ms:.0f} ms costs {pct:.3f}% of one core (limit {max_pct}%)")
    return 0 if verdict == "ok" else 1


if __name__ == "__main__":
    sys.exit(main())
