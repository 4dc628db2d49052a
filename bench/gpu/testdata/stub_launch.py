#!/usr/bin/env python3
"""Stands in for torchrun and the GPU in `bench/gpu/real_nccl.sh --dry-run`: writes what one run would leave in
its folder, from the environment the script set for that run.

- The adaptation log: `wirewise simulate --procs WORLD` loads the libraries NCCL_TUNER_PLUGIN and
  NCCL_PROFILER_PLUGIN name (the real library, NCCL 2.28's ABI) with the run's WIREWISE_* settings, on a
  WORLD x 1-GPU socket cluster running the worker's sweep. Nothing is simulated when the tuner is unset (run e).
- NCCL's per-rank debug logs: a recorded template (<run>.nccl.log, else ww.nccl.log), {rank} and {pid} filled.
- The worker's per-rank results (real_nccl_worker.py's shape) with times from a bandwidth model scaled per run
  (timing.json).
- <run>.extra.jsonl, when the fixture has one: adaptation-log lines the simulator cannot write (cupti_kernels),
  once per process, {pid}, {rank} and {comm} filled.

A negative case's folder holds only what differs from ../good, plus stub.json: per run, "profiler": false
(no profiler face), "table": a file the simulator gets as WIREWISE_CONFIG instead of the run's own,
"mismatches": wrong elements to report, "rc": the launcher's exit status.
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile

COLLS = ("allreduce", "allgather", "reducescatter")


def main():
    p = argparse.ArgumentParser()
    for opt in ("--fixtures", "--wirewise", "--out", "--sizes"):
        p.add_argument(opt, required=True)
    for opt, default in (("--world", 4), ("--iters", 10), ("--warmup", 2), ("--rounds", 1)):
        p.add_argument(opt, type=int, default=default)
    p.add_argument("--linger", type=float, default=0)
    a = p.parse_args()
    run = os.path.basename(a.out.rstrip("/"))
    good = os.path.join(os.path.dirname(a.fixtures.rstrip("/")), "good")

    def fixture(name):
        for d in (a.fixtures, good):
            if os.path.exists(os.path.join(d, name)):
                return os.path.join(d, name)
        return None

    stub = os.path.join(a.fixtures, "stub.json")
    over = json.load(open(stub)).get(run, {}) if os.path.exists(stub) else {}
    sizes = [int(s) for s in a.sizes.split(",")]
    pids = {r: 40000 + r for r in range(a.world)}
    comm = "0x0000000000000000"
    if os.environ.get("NCCL_TUNER_PLUGIN"):
        pids, comm = simulate(a, run, sizes, over, fixture)
    template = open(fixture(run + ".nccl.log") or fixture("ww.nccl.log")).read()
    for r in range(a.world):
        with open(os.path.join(a.out, "nccl.rank%d.log" % r), "w") as f:
            f.write(template.replace("{rank}", str(r)).replace("{pid}", str(pids[r])))
    extra = fixture(run + ".extra.jsonl")
    if extra:
        with open(os.path.join(a.out, "wirewise.extra.jsonl"), "w") as f:
            for r in range(a.world):
                for line in open(extra):
                    f.write(line.replace("{pid}", str(pids[r])).replace("{rank}", str(r)).replace("{comm}", comm))
    factor = json.load(open(fixture("timing.json"))).get(run, 1.0)
    for r in range(a.world):
        results = []
        for _ in range(a.rounds):
            for coll in COLLS:
                for s in sizes:
                    us = (30.0 + s / 2000.0) * factor  # ~2 GB/s over loopback sockets, 30 us latency
                    bad = over.get("mismatches", 0) if (coll, s) == ("allreduce", sizes[-1]) else 0
                    results.append({"coll": coll, "bytes": s, "iters": a.iters, "median_us": round(us, 3),
                                    "min_us": round(us * 0.97, 3), "mismatches": bad})
        errors = ["%s %d B: %d wrong elements" % (x["coll"], x["bytes"], x["mismatches"]) for x in results
                  if x["mismatches"]]
        res = {"rank": r, "local_rank": r, "host_id": "host%d" % r, "world": a.world, "ok": not errors,
               "errors": errors, "results": results, "torch_version": "stub", "nccl_version": "stub",
               "device": "stub", "seconds": 1.0}
        with open(os.path.join(a.out, "result.rank%d.json" % r), "w") as f:
            json.dump(res, f, indent=1)
    return over.get("rc", 0)


def simulate(a, run, sizes, over, fixture):
    """Runs the real library under the simulator; returns ({rank: pid}, comm) from the log it wrote."""
    steps = [{"comm": "world", "coll": coll, "bytes": s, "repeat": a.warmup + a.iters} for coll in COLLS for s in sizes]
    scenario = {"name": "real-nccl-stub-" + run, "description": "bench/gpu/real_nccl.sh --dry-run", "seed": 1,
                "cluster": {"nodes": a.world, "gpus_per_node": 1, "gpu": "h100-sxm", "nics_per_node": 1,
                            "nic_gbps": 2, "net_latency_us": 20, "transport": "socket"},
                "comms": [{"name": "world", "ranks": "all"}],
                # More steps than the worker's rounds: the simulated policy needs as much traffic to calibrate
                # as the real one gets from the GPU run's longer wall time.
                "workload": {"steps": 8 * a.rounds, "step": steps}, "faults": [], "noise": {"jitter": 0.02}}
    env = dict(os.environ)
    if over.get("table"):
        env["WIREWISE_CONFIG"] = fixture(over["table"])
    profiler = env.get("NCCL_PROFILER_PLUGIN", "")
    if not profiler or over.get("profiler") is False:
        profiler = os.path.join(a.out, "no-profiler-face.so")  # a path that does not exist: no profiler face
    log = env["WIREWISE_LOG"]
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "scenario.json")
        json.dump(scenario, open(path, "w"))
        # Deterministic agreement: the same protocol and log lines as the plugin's default (on), without pacing
        # wall time to the simulated job's (which would make the dry run minutes long).
        cmd = [a.wirewise, "simulate", path, "--procs", str(a.world), "--sync", "deterministic",
               "--plugin", env["NCCL_TUNER_PLUGIN"], "--profiler", profiler, "--log", log, "--quiet"]
        done = subprocess.run(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    print(done.stdout, end="")
    if done.returncode != 0:
        sys.exit("stub: %s exited %d" % (" ".join(cmd), done.returncode))
    pids, comm = {}, "0x0000000000000000"
    for name in os.listdir(a.out):
        if name.startswith("wirewise") and name.endswith(".jsonl"):
            for line in open(os.path.join(a.out, name)):
                e = json.loads(line)
                if e.get("event") == "comm_init":
                    comm = e["comm"]
                    if e.get("face") == "profiler":
                        pids[e["rank"]] = e["pid"]
    pids_in_order = sorted({json.loads(line)["pid"] for n in os.listdir(a.out) if n.endswith(".jsonl")
                            for line in open(os.path.join(a.out, n))})
    for r in range(a.world):  # without a profiler face no line names the rank: take the processes in order
        pids.setdefault(r, pids_in_order[r] if r < len(pids_in_order) else 40000 + r)
    return pids, comm


if __name__ == "__main__":
    sys.exit(main())
