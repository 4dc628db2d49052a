#!/usr/bin/env python3
"""One rank of bench/gpu/real_nccl.sh's torchrun job: real NCCL (PyTorch's), every result checked exactly.

Launched by torchrun with 4 ranks on one GPU. torchrun gives every rank the same environment, so this sets the
per-rank variables itself before NCCL starts: NCCL_HOSTID=host<LOCAL_RANK> (NCCL then sees 4 hosts and talks
over sockets on loopback instead of refusing a duplicate GPU: shared/research/nccl-abi.md, "Multi-rank NCCL on
one GPU") and NCCL_DEBUG_FILE=<out>/nccl.rank<RANK>.log (the checker reads each rank's plugin load lines).

Sizes are what the tuner sees (nBytes): the all-reduce buffer, the all-gather output and the reduce-scatter
input, so they compare directly with the adaptation log's summary rows. Values are small integers in
float32, so every sum is exact and every result is compared element for element with the expected tensor,
on the GPU, for every timed iteration (the comparison runs outside the timed events).

Writes <out>/result.rank<RANK>.json (read by real_nccl_check.py; the dry run's stub writes the same shape):
  {"rank", "world", "local_rank", "host_id", "nccl_version", "torch_version", "device", "ok", "errors": [...],
   "seconds", "results": [{"coll", "bytes", "iters", "median_us", "min_us", "mismatches"}]}
with one result per (coll, bytes) and round (--rounds repeats the sweep; the checker takes the median).
"""
import argparse
import json
import os
import sys
import time

COLLS = ("allreduce", "allgather", "reducescatter")


def parse_args():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--out", required=True, help="this run's folder")
    p.add_argument("--sizes", default="4096,65536,1048576,8388608,33554432", help="bytes, comma-separated")
    p.add_argument("--iters", type=int, default=10, help="timed iterations per size")
    p.add_argument("--warmup", type=int, default=2, help="untimed iterations per size")
    p.add_argument("--rounds", type=int, default=1, help="sweeps (the adaptive policy needs traffic to act on)")
    p.add_argument("--linger", type=float, default=0.0,
                   help="seconds to wait before teardown, so the plugin's sampler passes land (CUPTI matching)")
    return p.parse_args()


def main():
    a = parse_args()
    rank = int(os.environ["RANK"])
    local_rank = int(os.environ.get("LOCAL_RANK", rank))
    os.environ["NCCL_HOSTID"] = "host%d" % local_rank  # before NCCL reads its environment (first communicator)
    os.environ["NCCL_DEBUG_FILE"] = os.path.join(a.out, "nccl.rank%d.log" % rank)
    import torch
    import torch.distributed as dist

    result = {"rank": rank, "local_rank": local_rank, "host_id": os.environ["NCCL_HOSTID"], "ok": False,
              "errors": [], "results": [], "torch_version": torch.__version__,
              "nccl_version": nccl_version(torch)}
    start = time.time()
    try:
        torch.cuda.set_device(local_rank % torch.cuda.device_count())  # all ranks on the one GPU
        result["device"] = torch.cuda.get_device_name()
        dist.init_process_group("nccl")
        world = dist.get_world_size()
        result["world"] = world
        sizes = [int(s) for s in a.sizes.split(",")]
        for _ in range(a.rounds):
            for coll in COLLS:
                for nbytes in sizes:
                    result["results"].append(run_size(torch, dist, coll, nbytes, rank, world, a.warmup, a.iters))
        torch.cuda.synchronize()
        bad = [r for r in result["results"] if r["mismatches"]]
        result["errors"] += ["%s %d B: %d wrong elements" % (r["coll"], r["bytes"], r["mismatches"]) for r in bad]
        if a.linger > 0:
            time.sleep(a.linger)
        dist.destroy_process_group()  # finalizes both faces: comm_finalize lines
        result["ok"] = not result["errors"]
    except Exception as e:  # report it in the result: the checker says which rank failed and why
        result["errors"].append("%s: %s" % (type(e).__name__, e))
    result["seconds"] = round(time.time() - start, 3)
    with open(os.path.join(a.out, "result.rank%d.json" % rank), "w") as f:
        json.dump(result, f, indent=1)
    return 0 if result["ok"] else 1


def nccl_version(torch):
    """"2.28.9": PyTorch gives a tuple (major, minor, patch[, suffix]); old releases gave NCCL_VERSION_CODE."""
    v = torch.cuda.nccl.version()
    if isinstance(v, int):
        v = (v // 10000, v // 100 % 100, v % 100) if v >= 20900 else (v // 1000, v // 100 % 10, v % 100)
    return ".".join(str(x) for x in v if str(x) != "")


def run_size(torch, dist, coll, nbytes, rank, world, warmup, iters):
    """Times one (collective, size) and checks every iteration's result exactly."""
    n = nbytes // 4  # float32 elements in the buffer the tuner sizes
    per = n // world  # one rank's share for all-gather / reduce-scatter
    idx = torch.arange(n, device="cuda", dtype=torch.int64)
    pattern = (idx % 251).float()  # < 2^24 even after a 4-rank sum: exact in float32
    tri = world * (world + 1) / 2  # sum over ranks of (rank + 1)
    if coll == "allreduce":
        src = pattern + (rank + 1)
        expected = pattern * world + tri
        buf = torch.empty_like(src)
        op = lambda: dist.all_reduce(buf)  # noqa: E731 - in place: refilled from src before each iteration
        out = buf
    elif coll == "allgather":
        inp = (idx[:per] % 997).float() + 1000.0 * rank  # rank r's share is r * 1000 + i % 997
        expected = torch.cat([(idx[:per] % 997).float() + 1000.0 * r for r in range(world)])
        out = torch.empty(per * world, device="cuda")
        op = lambda: dist.all_gather_into_tensor(out, inp)  # noqa: E731
    else:
        inp = pattern[:per * world] + (rank + 1)
        expected = (pattern[rank * per:(rank + 1) * per] * world) + tri
        out = torch.empty(per, device="cuda")
        op = lambda: dist.reduce_scatter_tensor(out, inp)  # noqa: E731
    mismatches = torch.zeros((), dtype=torch.int64, device="cuda")
    times = []
    for i in range(warmup + iters):
        if coll == "allreduce":
            buf.copy_(src)
        else:
            out.zero_()  # a collective that wrote nothing must not pass on the previous iteration's result
        s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        s.record()
        op()
        e.record()
        mismatches += (out != expected).sum()
        if i >= warmup:
            times.append((s, e))
    torch.cuda.synchronize()
    us = sorted(s.elapsed_time(e) * 1000.0 for s, e in times)
    return {"coll": coll, "bytes": nbytes, "iters": iters, "median_us": round(us[len(us) // 2], 3),
            "min_us": round(us[0], 3), "mismatches": int(mismatches.item())}


if __name__ == "__main__":
    sys.exit(main())
