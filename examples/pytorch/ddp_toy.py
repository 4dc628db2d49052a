"""A toy DDP job to try wirewise on: a stack of linear layers trained on random data, so the all-reduces
of its gradient buckets (25 MiB by default) are the collectives wirewise measures and tunes.

    . examples/pytorch/wirewise.env
    torchrun --nnodes 1 --nproc-per-node 8 --rdzv-id toy-$RANDOM examples/pytorch/ddp_toy.py --steps 300
    srun python examples/pytorch/ddp_toy.py --steps 300      # under SLURM: one task per GPU

Afterwards: `wirewise log summarize ~/wirewise-logs/*.jsonl` (see examples/pytorch/README.md).
"""
import argparse
import os
import time

import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel


def launch_env():
    # torchrun sets RANK/WORLD_SIZE/LOCAL_RANK and MASTER_ADDR/PORT; srun sets SLURM_* instead.
    if "RANK" not in os.environ and "SLURM_PROCID" in os.environ:
        os.environ["RANK"] = os.environ["SLURM_PROCID"]
        os.environ["WORLD_SIZE"] = os.environ["SLURM_NTASKS"]
        os.environ["LOCAL_RANK"] = os.environ["SLURM_LOCALID"]
        os.environ.setdefault("MASTER_ADDR", os.environ["SLURM_LAUNCH_NODE_IPADDR"])
        os.environ.setdefault("MASTER_PORT", "29500")
    return int(os.environ["LOCAL_RANK"])


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--steps", type=int, default=300)
    ap.add_argument("--width", type=int, default=4096)
    ap.add_argument("--layers", type=int, default=8)
    args = ap.parse_args()

    local_rank = launch_env()
    torch.cuda.set_device(local_rank)
    dist.init_process_group("nccl")
    model = torch.nn.Sequential(*[torch.nn.Linear(args.width, args.width) for _ in range(args.layers)]).cuda()
    model = DistributedDataParallel(model, device_ids=[local_rank])
    opt = torch.optim.SGD(model.parameters(), lr=1e-4)
    x = torch.randn(32, args.width, device="cuda")

    torch.cuda.synchronize()
    start = time.time()
    for step in range(args.steps):
        opt.zero_grad(set_to_none=True)
        model(x).square().mean().backward()
        opt.step()
        if dist.get_rank() == 0 and (step + 1) % 50 == 0:
            torch.cuda.synchronize()
            print(f"step {step + 1}: {(time.time() - start) / (step + 1) * 1e3:.1f} ms/step", flush=True)
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
