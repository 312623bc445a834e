"""PyTorch's side of bench/device/run.sh: times a bf16 N^3 torch.matmul and a device-to-device
tensor copy the way `cutover compat calibrate` times ours (random data, 3 warm-ups, CUDA events
around each of `reps` runs, the median), and prints one JSON line.

usage: python3 torch_side_by_side.py GEMM_N COPY_BYTES [REPS]
Exit 3 when torch or a CUDA device is missing (run.sh then skips the comparison).
"""
import json
import statistics
import sys


def timed(fn, reps):
    import torch

    for _ in range(3):
        fn()
    events = [(torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True))
              for _ in range(reps)]
    for start, stop in events:
        start.record()
        fn()
        stop.record()
    torch.cuda.synchronize()
    return statistics.median(start.elapsed_time(stop) for start, stop in events)


def main():
    if len(sys.argv) < 3:
        print("usage: torch_side_by_side.py GEMM_N COPY_BYTES [REPS]", file=sys.stderr)
        return 2
    n, copy_bytes = int(sys.argv[1]), int(sys.argv[2])
    reps = int(sys.argv[3]) if len(sys.argv) > 3 else 10
    try:
        import torch
    except ImportError as e:
        print(f"torch_side_by_side: no torch ({e})", file=sys.stderr)
        return 3
    if not torch.cuda.is_available():
        print("torch_side_by_side: torch sees no CUDA device", file=sys.stderr)
        return 3
    gen = torch.Generator(device="cuda").manual_seed(1)
    a = torch.randn(n, n, device="cuda", dtype=torch.bfloat16, generator=gen)
    b = torch.randn(n, n, device="cuda", dtype=torch.bfloat16, generator=gen)
    ms = timed(lambda: torch.matmul(a, b), reps)
    gemm_tflops = 2.0 * n * n * n / (ms * 1e-3) / 1e12
    del a, b
    elems = copy_bytes // 4
    src = torch.rand(elems, device="cuda", dtype=torch.float32, generator=gen)
    dst = torch.empty_like(src)
    ms = timed(lambda: dst.copy_(src), reps)
    copy_gbps = 2.0 * elems * 4 / (ms * 1e-3) / 1e9
    print(json.dumps({"torch": torch.__version__, "device": torch.cuda.get_device_name(),
                      "gemm_n": n, "gemm_bf16_tflops": gemm_tflops,
                      "copy_bytes": elems * 4, "copy_gbps": copy_gbps}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
