#!/usr/bin/env python3
"""torch.distributed all_reduce (NCCL) of one size, timed as nccl-tests and our cluster suite
time it: warm-up calls, then back-to-back calls between CUDA events; one process per GPU, started
by `python3 -m torch.distributed.run --standalone --nproc_per_node G torch_allreduce.py BYTES`.
Rank 0 prints one JSON line: bytes, ranks, avg_us, busbw_gbps (algbw x 2(n-1)/n)."""
import json
import os
import sys

import torch
import torch.distributed as dist


def main():
    nbytes = int(sys.argv[1])
    warmup, reps = 5, 20
    dist.init_process_group("nccl")
    rank, n = dist.get_rank(), dist.get_world_size()
    torch.cuda.set_device(int(os.environ.get("LOCAL_RANK", rank)))
    x = torch.ones(nbytes // 4, dtype=torch.float32, device="cuda")
    for _ in range(warmup):
        dist.all_reduce(x)
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    dist.barrier()
    start.record()
    for _ in range(reps):
        dist.all_reduce(x)
    end.record()
    torch.cuda.synchronize()
    t = torch.tensor([start.elapsed_time(end) / 1e3 / reps], device="cuda")
    dist.all_reduce(t)
    avg = t.item() / n
    if rank == 0:
        algbw = (nbytes // 4 * 4) / avg / 1e9
        print(json.dumps({"torch": torch.__version__, "nccl": ".".join(map(str, torch.cuda.nccl.version())),
                          "bytes": nbytes // 4 * 4, "ranks": n, "avg_us": avg * 1e6,
                          "busbw_gbps": algbw * 2 * (n - 1) / n}))
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
