#!/usr/bin/env python3
"""Reference workload for Gantry's pool acceptance runs.

A real torch.distributed training loop that reports to Gantry with one JSON
line per event on stdout (see README.md in this directory):

  {"gantry":"data-pulled","seconds":12.5}
  {"gantry":"throughput","samples_per_second":2400.0}
  {"gantry":"checkpoint-written","seconds":41.2,"step":1200}
  {"gantry":"resumed","step":1200}

and, with --all-reduce-benchmark, runs nccl-tests' all_reduce_perf, whose
"# Avg bus bandwidth : X" line Gantry reads. Start it with torchrun:

  torchrun --nnodes=$NNODES --nproc-per-node=$NPROC_PER_NODE \
      --node-rank=$NODE_RANK --master-addr=$MASTER_ADDR --master-port=$MASTER_PORT \
      train.py --gantry-acceptance --window-seconds=600 --weights=s3://models/base
"""
import argparse
import json
import os
import shutil
import subprocess
import sys
import time

import torch
import torch.distributed as dist
import torch.nn as nn
import torch.nn.functional as F
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.utils.data import DataLoader, TensorDataset
from torch.utils.data.distributed import DistributedSampler


def report(event, **fields):
    """Print one protocol line (rank 0 only) and flush, so it reaches the log now."""
    if int(os.environ.get("RANK", "0")) != 0:
        return
    print(json.dumps({"gantry": event, **fields}), flush=True)


def parse_args():
    p = argparse.ArgumentParser()
    p.add_argument("--gantry-acceptance", action="store_true")
    p.add_argument("--window-seconds", type=int, default=600)
    p.add_argument("--weights", default="")
    p.add_argument("--dataset", default=os.environ.get("DATASET_URI", ""))
    p.add_argument("--checkpoint-dir", default=os.environ.get("CHECKPOINT_DIR", "/checkpoints"))
    p.add_argument("--all-reduce-benchmark", action="store_true")
    p.add_argument("--batch-size", type=int, default=64)
    args, _ = p.parse_known_args()
    return args


def pull(uri, dest):
    """Copy a dataset sample or weights to local disk (s3:// via the AWS CLI, else a path)."""
    os.makedirs(dest, exist_ok=True)
    if not uri:
        return
    if uri.startswith("s3://"):
        subprocess.run(["aws", "s3", "cp", "--recursive", uri, dest], check=True)
    elif os.path.exists(uri):
        shutil.copytree(uri, dest, dirs_exist_ok=True)


def all_reduce_benchmark():
    """Run nccl-tests on every rank's GPUs; its output, with the bus bandwidth line, goes to stdout."""
    if int(os.environ.get("LOCAL_RANK", "0")) != 0:
        return
    subprocess.run(["all_reduce_perf", "-b", "8", "-e", "8G", "-f", "2", "-g", "1"], check=False)


class Model(nn.Module):
    def __init__(self, width=4096, depth=8, classes=1000):
        super().__init__()
        self.layers = nn.Sequential(*[nn.Sequential(nn.Linear(width, width), nn.GELU()) for _ in range(depth)])
        self.head = nn.Linear(width, classes)

    def forward(self, x):
        return self.head(self.layers(x))


def latest_checkpoint(directory):
    if not os.path.isdir(directory):
        return None
    names = sorted(n for n in os.listdir(directory) if n.startswith("step-") and n.endswith(".pt"))
    return os.path.join(directory, names[-1]) if names else None


def main():
    args = parse_args()
    dist.init_process_group("nccl" if torch.cuda.is_available() else "gloo")
    rank, world = dist.get_rank(), dist.get_world_size()
    local = int(os.environ.get("LOCAL_RANK", "0"))
    device = torch.device("cuda", local) if torch.cuda.is_available() else torch.device("cpu")
    if device.type == "cuda":
        torch.cuda.set_device(device)

    model = Model().to(device)
    optim = torch.optim.AdamW(model.parameters(), lr=1e-4)
    step = 0

    resume = latest_checkpoint(args.checkpoint_dir)
    if resume:
        state = torch.load(resume, map_location=device)
        model.load_state_dict(state["model"])
        optim.load_state_dict(state["optim"])
        step = state["step"]
        dist.barrier()
        report("resumed", step=step)
    else:
        start = time.monotonic()
        pull(args.dataset, "/data/sample")
        pull(args.weights, "/data/weights")
        weights = os.path.join("/data/weights", "model.pt")
        if os.path.exists(weights):
            model.load_state_dict(torch.load(weights, map_location=device), strict=False)
        dist.barrier()
        report("data-pulled", seconds=round(time.monotonic() - start, 3))
        if args.all_reduce_benchmark:
            all_reduce_benchmark()
            dist.barrier()

    model = DDP(model, device_ids=[local] if device.type == "cuda" else None)
    # A synthetic sample stands in when the dataset has no tensors of this shape.
    data = TensorDataset(torch.randn(65536, 4096), torch.randint(0, 1000, (65536,)))
    loader = DataLoader(data, batch_size=args.batch_size, sampler=DistributedSampler(data), drop_last=True)

    window_end = time.monotonic() + args.window_seconds
    samples, t0 = 0, time.monotonic()
    epoch = 0
    while time.monotonic() < window_end:
        loader.sampler.set_epoch(epoch)
        for x, y in loader:
            x, y = x.to(device, non_blocking=True), y.to(device, non_blocking=True)
            loss = F.cross_entropy(model(x), y)
            optim.zero_grad(set_to_none=True)
            loss.backward()
            optim.step()
            step += 1
            samples += x.shape[0] * world
            if rank == 0 and step % 100 == 0:
                print(f"step {step} loss {loss.item():.4f}", flush=True)
            if time.monotonic() >= window_end:
                break
        epoch += 1
    if device.type == "cuda":
        torch.cuda.synchronize()
    report("throughput", samples_per_second=round(samples / (time.monotonic() - t0), 1))

    if resume is None:
        start = time.monotonic()
        if rank == 0:
            os.makedirs(args.checkpoint_dir, exist_ok=True)
            path = os.path.join(args.checkpoint_dir, f"step-{step:09d}.pt")
            torch.save({"model": model.module.state_dict(), "optim": optim.state_dict(), "step": step}, path + ".tmp")
            os.replace(path + ".tmp", path)  # durable only once complete
        dist.barrier()
        report("checkpoint-written", seconds=round(time.monotonic() - start, 3), step=step)
        # Wait for Gantry to delete a pod: the barrier then fails on every
        # rank, each pod exits and is replaced, and the replacements resume
        # from this checkpoint.
        while True:
            time.sleep(5)
            dist.barrier()
    dist.destroy_process_group()
    return 0


if __name__ == "__main__":
    sys.exit(main())
