#!/usr/bin/env python3
"""Runs every example scenario through `wirewise simulate`, in full, and prints one summary table.

Usage: run_scenarios.py --wirewise BIN [--scenarios DIR] [--out DIR] [--plugin LIB]
                        [--policy NAME] [--sync MODE] [--steps N]

For each scenario it writes NAME.json (report), NAME.svg (plot), NAME.jsonl (the plugin's adaptation log) and
NAME.txt (the simulator's table) into --out (default: ./bench-out/scenarios), then prints the summary and
saves it as summary.txt and summary.json there. Sync and policy are the simulator's defaults unless given.
Exit status 1 when a run fails or any ranks diverged (the table is printed first); the adaptation targets
themselves are checked by the `scenario` test (tests/sim/driver/scenario_targets_test.cc), not here.
"""
import argparse
import glob
import json
import os
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
DEFAULT_SCENARIOS = os.path.normpath(os.path.join(HERE, "..", "..", "scenarios"))


def latencies(report):
    parts = []
    for f in report["faults"]:
        if f["onset_step"] >= report["steps"]:
            parts.append(f"#{f['index']} n/a")
        elif f["latency_steps"] is None:
            parts.append(f"#{f['index']} never")
        else:
            parts.append(f"#{f['index']} {f['latency_steps']}")
    return " ".join(parts) if parts else "no faults"


def run_one(args, path):
    name = os.path.splitext(os.path.basename(path))[0]
    base = os.path.join(args.out, name)
    for ext in (".json", ".svg", ".jsonl", ".txt"):
        if os.path.exists(base + ext):
            os.remove(base + ext)  # the plugin appends to its log; a stale report must not pass for a new one
    cmd = [args.wirewise, "simulate", path, "--report", base + ".json", "--plot", base + ".svg",
           "--log", base + ".jsonl"]
    for opt in ("plugin", "policy", "sync", "steps"):
        if getattr(args, opt) is not None:
            cmd += ["--" + opt, str(getattr(args, opt))]
    t0 = time.monotonic()
    proc = subprocess.run(cmd, capture_output=True, text=True)
    wall = time.monotonic() - t0
    with open(base + ".txt", "w") as f:
        f.write(proc.stdout)
    if proc.stderr:
        sys.stderr.write(proc.stderr)
    report = None
    if os.path.exists(base + ".json"):
        with open(base + ".json") as f:
            report = json.load(f)
    return name, proc.returncode, wall, report


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--wirewise", required=True, help="the wirewise program")
    ap.add_argument("--scenarios", default=DEFAULT_SCENARIOS, help="folder of scenario JSON files")
    ap.add_argument("--out", default=os.path.join("bench-out", "scenarios"), help="output folder")
    ap.add_argument("--plugin", help="tuner library (default: the one next to wirewise)")
    ap.add_argument("--policy", help="WIREWISE_POLICY (default: the simulator's)")
    ap.add_argument("--sync", help="WIREWISE_SYNC (default: the simulator's)")
    ap.add_argument("--steps", type=int, help="shorten every run (default: in full)")
    args = ap.parse_args()

    files = sorted(glob.glob(os.path.join(args.scenarios, "*.json")))
    if not files:
        print(f"no scenarios in {args.scenarios}", file=sys.stderr)
        return 1
    os.makedirs(args.out, exist_ok=True)

    rows, summary, ok = [], [], True
    for path in files:
        name, rc, wall, r = run_one(args, path)
        if rc != 0 or r is None:
            ok = False
        if r is None:
            rows.append(f"{name:<24} failed (exit status {rc}): see {os.path.join(args.out, name)}.txt")
            continue
        m = {k: r["modes"][k]["comm_time_us"] * 1e-6 for k in ("nccl-default", "static-best", "oracle", "wirewise")}
        div = r["consistency"]["divergences"]
        if div != 0:
            ok = False
        plugin = r.get("plugin", {})
        policy = f"{plugin.get('sync') or '?'}/{plugin.get('policy') or '?'}"
        share = r.get("exploration_share", 0.0)
        rows.append(f"{name:<24} {m['nccl-default']:8.3f} {m['static-best']:8.3f} {m['oracle']:8.3f} "
                    f"{m['wirewise']:8.3f} {r['captured_gain']:6.3f}  {latencies(r):<22} {share * 100:6.2f}% "
                    f"{div:4d}  {policy:<24} {wall:5.1f}")
        summary.append({"scenario": r["scenario"], "steps": r["steps"], "exit_status": rc,
                        "comm_time_s": m, "captured_gain": r["captured_gain"],
                        "latency_steps": [f["latency_steps"] for f in r["faults"]],
                        "exploration_share": share, "divergences": div, "sync": plugin.get("sync"),
                        "policy": plugin.get("policy"), "adaptations": r.get("adaptations", {}),
                        "run_time_s": r.get("run_time_s")})

    head = ("simulated: example scenarios" + (f", {args.steps} steps each" if args.steps else ", full runs") +
            " (comm time in s of simulated time; wall s = this machine)\n"
            f"{'scenario':<24} {'default':>8} {'static':>8} {'oracle':>8} {'wirewise':>8} {'gain':>6}  "
            f"{'fault latency (steps)':<22} {'explore':>7} {'div':>4}  {'sync/policy':<24} {'wall s':>5}")
    text = head + "\n" + "\n".join(rows) + "\n"
    print(text, end="")
    with open(os.path.join(args.out, "summary.txt"), "w") as f:
        f.write(text)
    with open(os.path.join(args.out, "summary.json"), "w") as f:
        json.dump({"simulated": True, "scenarios": summary}, f, indent=2)
        f.write("\n")
    print(f"reports, plots and logs in {os.path.abspath(args.out)}")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
