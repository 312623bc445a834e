#!/usr/bin/python3
"""compat's cpu backend beside PyTorch on the same machine and thread count, in one run.

usage: /usr/bin/python3 bench/compat/cpu_vs_torch.py BENCH_BIN [--threads N] [--min-time S]

BENCH_BIN is build/bench/compat_cpu_backend_bench (-DCUTOVER_BENCH=ON): fp32 GEMM 1024^3 and
4096^3 and conv2d forward (NCHW) at the quick suite's and the standard suite's ResNet-50 shapes,
through the kernels `compat run --backend cpu` uses. Each is then timed in torch (torch.matmul,
torch.nn.functional.conv2d, float32, torch.set_num_threads(N)) on inputs of the same shape.
Prints a Markdown table: milliseconds per call of each, and ours/torch as a speed ratio (torch
time / our time; >= 1 means ours is at least as fast).
"""
import argparse
import json
import os
import subprocess
import sys
import time


def time_torch(fn, min_time):
    fn()  # warm-up: thread pool, oneDNN primitive cache
    n, start = 0, time.perf_counter()
    while True:
        fn()
        n += 1
        elapsed = time.perf_counter() - start
        if elapsed >= min_time and n >= 3:
            return elapsed / n


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("bench")
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--min-time", type=float, default=1.0)
    a = ap.parse_args()
    # torch.set_num_threads sets OpenMP's (oneDNN's) threads only: torch.matmul goes through the
    # system BLAS (Debian: OpenBLAS with its own pthreads), which reads OPENBLAS_NUM_THREADS when it
    # is loaded. Without it a "1 thread" torch GEMM used every core (measured: 12.8 ms at 2 cores'
    # CPU time against 23.2 ms on one), so set it before torch is imported.
    os.environ["OPENBLAS_NUM_THREADS"] = str(a.threads)
    import torch
    import torch.nn.functional as F
    env = dict(os.environ, CUTOVER_BENCH_THREADS=str(a.threads))
    out = subprocess.run([a.bench, "--benchmark_format=json",
                          "--benchmark_min_time=%g" % a.min_time],
                         env=env, capture_output=True, text=True, check=True).stdout
    ours = json.loads(out)["benchmarks"]
    torch.set_num_threads(a.threads)
    print("torch %s, %d threads (torch.get_num_threads() = %d, OPENBLAS_NUM_THREADS=%s), %s" % (
        torch.__version__, a.threads, torch.get_num_threads(), os.environ["OPENBLAS_NUM_THREADS"],
        json.loads(out)["context"].get("host_name", "")))
    print()
    print("| case | ours (implementation) | ours ms | torch ms | ours/torch speed |")
    print("|---|---|---:|---:|---:|")
    g = torch.Generator().manual_seed(1)
    for b in ours:
        case, impl = b["label"].split(" | ", 1)
        shape = [int(x) for x in case.split("/")[2].split("x")]
        if case.startswith("gemm/"):
            m, n, k = shape
            x, y = torch.randn(m, k, generator=g), torch.randn(k, n, generator=g)
            t = time_torch(lambda: torch.matmul(x, y), a.min_time)
        else:
            bn, c, h, w, k, r, s, stride, pad = shape
            x, wt = torch.randn(bn, c, h, w, generator=g), torch.randn(k, c, r, s, generator=g)
            t = time_torch(lambda: F.conv2d(x, wt, stride=stride, padding=pad), a.min_time)
        ms = b["real_time"] if b["time_unit"] == "ms" else b["real_time"] / 1e6
        print("| %s | %s | %.3f | %.3f | %.2fx |" % (case, impl, ms, t * 1e3, t * 1e3 / ms))
    return 0


if __name__ == "__main__":
    sys.exit(main())
