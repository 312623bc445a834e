#!/usr/bin/env python3
"""Replays cutover compat cases in PyTorch.

Written by `cutover compat run --dump DIR` and `cutover compat dump CASE_ID... --dir DIR`.
usage: python3 replay.py [--device cpu|cuda] [--json] [CASE_DIR ...]

Runs every case directory beside this script (or those named) in one process: loads the inputs
(in0.npy, ...), runs the same op in PyTorch and prints its error against our output (out.npy,
when the dump has it) and against the float64 truth at the sampled positions, with the measure
`cutover compat compare` uses: q = max |x - r| / (atol + rtol * max(|r|, rms(truth))) over the
sampled positions (q <= 1 passes), beside the max relative error and the normwise error.
A case whose torch output is outside tolerance of ours while ours is within tolerance of the
truth and torch is further from it is `torch_further_from_truth` ("torch further from truth than
cutover", both q values given): a finding about torch on this device, not a fault of ours.
Exit 0 when every case that ran agrees (with our output when dumped, else with the truth) or
finds torch further from the truth, 1 when one does not, 2 on bad input.
"""
import argparse
import json
import math
import os
import sys

import numpy as np
import torch
import torch.nn.functional as F

HERE = os.path.dirname(os.path.abspath(__file__))


class Skip(Exception):
    """The case cannot run with this torch (the reason says why)."""


def low_precision(dtype):
    return {"fp16": torch.float16, "bf16": torch.bfloat16}.get(dtype)


def output_dtype(dtype):
    # compat/dtype.h OutputDtype: fp8_e4m3 GEMM writes bf16; tf32 and int8 write float32.
    return {"fp16": torch.float16, "bf16": torch.bfloat16, "fp8_e4m3": torch.bfloat16}.get(dtype)


class Runner:
    """Runs one op in PyTorch on `device`; `notes` collects how (native dtype or float32)."""

    def __init__(self, device, force_fp32=False):
        self.device = device
        self.force_fp32 = force_fp32  # a native low-precision kernel was refused: use float32
        self.notes = []

    def tensor(self, a, shape):
        return torch.from_numpy(np.ascontiguousarray(a)).reshape(shape).to(self.device)

    def compute_dtype(self, dtype, native_ok):
        """The dtype the op runs in: the case's own where torch has it on this device."""
        if dtype == "fp8_e4m3":
            if not hasattr(torch, "float8_e4m3fn"):
                raise Skip("torch %s has no float8 dtype" % torch.__version__)
            self.notes.append("fp8 values computed in float32, output rounded to bf16")
            return torch.float32
        low = low_precision(dtype)
        if low is None:
            return torch.float32
        if native_ok and not self.force_fp32:
            self.notes.append("native %s" % str(low).replace("torch.", ""))
            return low
        self.notes.append("%s values computed in float32 (torch %s has no %s kernel on %s), "
                          "output rounded" % (dtype, torch.__version__, dtype, self.device))
        return torch.float32

    def finish(self, y, dtype):
        od = output_dtype(dtype)
        if od is not None and y.dtype != od:
            y = y.to(od)
        return y.to(torch.float64).reshape(-1).cpu().numpy()


def native_matmul_ok(device, dtype):
    if device != "cpu":
        return True
    return dtype == "bf16"  # torch 1.13 on CPU: bf16 matmul and conv through oneDNN, no fp16


def run_gemm(c, ins, rn):
    dt = c["dtype"]
    if c["op"] == "gemm_batched":
        b, m, n, k = c["shape"]
        a, bb = rn.tensor(ins[0], (b, m, k)), rn.tensor(ins[1], (b, k, n))
    else:
        m, n, k = c["shape"]
        a, bb = rn.tensor(ins[0], (m, k)), rn.tensor(ins[1], (k, n))
    if dt == "int8":
        # int8 matmul wraps in torch: upcast to int32 as our op accumulates (exact).
        rn.notes.append("int8 upcast to int32")
        return rn.finish(torch.matmul(a.to(torch.int32), bb.to(torch.int32)).to(torch.float64), dt)
    if dt == "tf32":
        rn.notes.append("tf32 inputs computed in float32 with TF32 math off")
        if rn.device != "cpu":
            torch.backends.cuda.matmul.allow_tf32 = False
    cd = rn.compute_dtype(dt, native_matmul_ok(rn.device, dt))
    return rn.finish(torch.matmul(a.to(cd), bb.to(cd)), dt)


def conv_tensors(c, ins, rn):
    n, ch, h, w, k, r, s, stride, pad = c["shape"]
    p, q = (h + 2 * pad - r) // stride + 1, (w + 2 * pad - s) // stride + 1
    nhwc = c["layout"] == "NHWC"
    # Our NHWC tensors: x[N,H,W,C], w[K,R,S,C], y[N,P,Q,K]; torch wants NCHW views of them.
    shapes = {"x": (n, h, w, ch) if nhwc else (n, ch, h, w),
              "w": (k, r, s, ch) if nhwc else (k, ch, r, s),
              "y": (n, p, q, k) if nhwc else (n, k, p, q)}
    names = {"conv2d_fwd": ("x", "w"), "conv2d_bwd_data": ("y", "w"),
             "conv2d_bwd_filter": ("x", "y")}[c["op"]]
    out = {}
    for name, a in zip(names, ins):
        t = rn.tensor(a, shapes[name])
        out[name] = t.permute(0, 3, 1, 2) if nhwc else t
    return out, (n, ch, h, w), (k, ch, r, s), stride, pad, nhwc


def run_conv(c, ins, rn):
    dt = c["dtype"]
    t, xs, ws, stride, pad, nhwc = conv_tensors(c, ins, rn)
    cd = rn.compute_dtype(dt, native_matmul_ok(rn.device, dt))
    if rn.device != "cpu":
        torch.backends.cudnn.allow_tf32 = False
    op = c["op"]
    if op == "conv2d_fwd":
        y = F.conv2d(t["x"].to(cd), t["w"].to(cd), stride=stride, padding=pad)
    elif op == "conv2d_bwd_data":
        x = torch.zeros(xs, dtype=cd, device=rn.device, requires_grad=True)
        F.conv2d(x, t["w"].to(cd), stride=stride, padding=pad).backward(t["y"].to(cd))
        y = x.grad
    else:
        w = torch.zeros(ws, dtype=cd, device=rn.device, requires_grad=True)
        F.conv2d(t["x"].to(cd), w, stride=stride, padding=pad).backward(t["y"].to(cd))
        y = w.grad
    rn.notes.append("autograd" if op != "conv2d_fwd" else "F.conv2d")
    if nhwc:
        y = y.permute(0, 2, 3, 1)
    return rn.finish(y.contiguous(), dt)


def run_sdpa(c, ins, rn):
    dt = c["dtype"]
    b, h, s, d = c["shape"]
    q, k, v = (rn.tensor(a, (b, h, s, d)) for a in ins)
    causal = c["layout"] == "causal"
    if hasattr(F, "scaled_dot_product_attention"):
        # Not exercised by Debian's torch 1.13 (it has no scaled_dot_product_attention).
        cd = rn.compute_dtype(dt, rn.device != "cpu")
        rn.notes.append("F.scaled_dot_product_attention")
        y = F.scaled_dot_product_attention(q.to(cd), k.to(cd), v.to(cd), is_causal=causal)
        return rn.finish(y, dt)
    # The explicit form, float32 scores and softmax (our op's fp32 softmax).
    rn.notes.append("explicit softmax(q k^T / sqrt(D)) v in float32")
    scores = torch.matmul(q, k.transpose(-2, -1)) / math.sqrt(d)
    if causal:
        mask = torch.ones(s, s, dtype=torch.bool, device=rn.device).triu(1)
        scores = scores.masked_fill(mask, float("-inf"))
    return rn.finish(torch.matmul(torch.softmax(scores, dim=-1), v), dt)


def run_rows(c, ins, rn):
    op = c["op"]
    if op in ("softmax", "layernorm", "rmsnorm", "reduce_sum", "reduce_max"):
        rows, cols = c["shape"]
        x = rn.tensor(ins[0], (rows, cols))
    else:
        x = rn.tensor(ins[0], (-1,))
    if op == "softmax":
        y = torch.softmax(x, dim=-1)
    elif op == "layernorm":
        y = F.layer_norm(x, (x.shape[1],), rn.tensor(ins[1], (-1,)), rn.tensor(ins[2], (-1,)),
                         eps=1e-5)
    elif op == "rmsnorm":
        g = rn.tensor(ins[1], (-1,))
        if hasattr(F, "rms_norm"):
            y = F.rms_norm(x, (x.shape[1],), g, eps=1e-6)
        else:
            y = x * torch.rsqrt(x.pow(2).mean(dim=-1, keepdim=True) + 1e-6) * g
    elif op == "reduce_sum":
        y = x.sum(dim=-1)
    elif op == "reduce_max":
        y = x.amax(dim=-1)
    elif op == "gelu":
        y = F.gelu(x)  # the erf form, as ours
    elif op == "silu":
        y = F.silu(x)
    elif op == "copy":
        y = x.clone()
    elif op == "triad":
        y = x + 3.0 * rn.tensor(ins[1], (-1,))
    else:
        raise Skip("no PyTorch counterpart for %s in this script" % op)
    return rn.finish(y, c["dtype"])


def run_case(c, ins, device, force_fp32=False):
    rn = Runner(device, force_fp32)
    op = c["op"]
    try:
        if op in ("gemm", "gemm_batched"):
            y = run_gemm(c, ins, rn)
        elif op.startswith("conv2d_"):
            y = run_conv(c, ins, rn)
        elif op == "sdpa":
            y = run_sdpa(c, ins, rn)
        else:
            y = run_rows(c, ins, rn)
    except RuntimeError as e:
        if force_fp32 or not any(n.startswith("native ") for n in rn.notes):
            raise
        # This torch has no such kernel in the case's dtype here: float32 on the same values.
        y, notes = run_case(c, ins, device, force_fp32=True)
        return y, notes + ["native %s refused: %s" % (c["dtype"], str(e).splitlines()[0])]
    return y, rn.notes


def measure(x, r, truth, rtol, atol):
    """q as compare computes it, the max relative error and the normwise error."""
    ok = np.isfinite(x) & np.isfinite(r)
    x, r = x[ok], r[ok]
    ft = truth[np.isfinite(truth)]
    rms = math.sqrt(float(np.mean(ft * ft))) if ft.size else 0.0
    diff = np.abs(x - r)
    denom = atol + rtol * np.maximum(np.abs(r), rms)
    with np.errstate(divide="ignore", invalid="ignore"):
        q = float(np.max(np.where(diff == 0, 0.0, diff / denom))) if x.size else 0.0
        rel = np.where(diff == 0, 0.0, diff / np.abs(r))
    nr = float(np.linalg.norm(r))
    return {"q": q, "max_rel": float(np.max(rel)) if rel.size else 0.0,
            "normwise": float(np.linalg.norm(x - r)) / nr if nr else (0.0 if not diff.any() else
                                                                       math.inf),
            "compared": int(x.size), "nonfinite": int((~ok).sum())}


def replay(case_dir, device):
    with open(os.path.join(case_dir, "case.json")) as f:
        c = json.load(f)
    res = {"id": c["id"], "dir": case_dir, "implementation": c.get("implementation", "")}
    ins = [np.load(os.path.join(case_dir, "in%d.npy" % i)) for i in range(c["inputs"])]
    index = np.load(os.path.join(case_dir, "truth_index.npy"))
    truth = np.load(os.path.join(case_dir, "truth.npy"))
    try:
        y, notes = run_case(c, ins, device)
    except Skip as e:
        res.update(status="skipped", reason=str(e))
        return res
    except RuntimeError as e:
        res.update(status="error", reason="torch: " + str(e).splitlines()[0])
        return res
    if y.size != c["output_count"]:
        res.update(status="error", reason="torch gave %d outputs, the case has %d" %
                   (y.size, c["output_count"]))
        return res
    ty = y[index]
    res["notes"] = notes
    res["vs_truth"] = measure(ty, truth, truth, c["rtol"], c["atol"])
    if c.get("has_output"):
        ours = np.load(os.path.join(case_dir, "out.npy")).astype(np.float64)
        res["vs_ours"] = measure(ty, ours[index], truth, c["rtol"], c["atol"])
        res["ours_vs_truth"] = measure(ours[index], truth, truth, c["rtol"], c["atol"])
        res["status"] = judge(res["vs_ours"], res["ours_vs_truth"], res["vs_truth"])
    else:
        agree = res["vs_truth"]["q"] <= 1 and res["vs_truth"]["nonfinite"] == 0
        res["status"] = "agree" if agree else "disagree"
    return res


def within(m):
    return m["q"] <= 1 and m["nonfinite"] == 0


def judge(vs_ours, ours_vs_truth, torch_vs_truth):
    """agree: torch is within tolerance of our output. torch_further_from_truth: it is not, but
    ours is within tolerance of the float64 truth and torch is further from it (a finding about
    torch on this device, such as a bf16 kernel of this CPU). disagree: anything else."""
    if within(vs_ours):
        return "agree"
    if within(ours_vs_truth) and (torch_vs_truth["nonfinite"] > 0 or
                                  torch_vs_truth["q"] > ours_vs_truth["q"]):
        return "torch_further_from_truth"
    return "disagree"


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--device", default="cpu", help="cpu (default) or cuda")
    ap.add_argument("--json", action="store_true", help="one JSON document on stdout")
    ap.add_argument("cases", nargs="*", help="case directories (default: all beside this script)")
    a = ap.parse_args()
    if a.device == "cuda" and not torch.cuda.is_available():
        print("replay.py: --device cuda: torch %s sees no CUDA device" % torch.__version__,
              file=sys.stderr)
        return 2
    dirs = a.cases or sorted(os.path.join(HERE, d) for d in os.listdir(HERE)
                             if os.path.isfile(os.path.join(HERE, d, "case.json")))
    results = []
    for d in dirs:
        if not os.path.isfile(os.path.join(d, "case.json")):
            print("replay.py: %s: no case.json (not a case directory)" % d, file=sys.stderr)
            return 2
        results.append(replay(d, a.device))
    doc = {"torch": torch.__version__, "device": a.device, "cases": results}
    if a.json:
        print(json.dumps(doc, indent=1))
    else:
        for r in results:
            line = "%-60s %-9s" % (r["id"], r["status"])
            if r["status"] == "skipped" or r["status"] == "error":
                line += " " + r["reason"]
            else:
                if r["status"] == "torch_further_from_truth":
                    line += " torch further from truth than cutover (torch q=%.3g, cutover " \
                            "q=%.3g);" % (r["vs_truth"]["q"], r["ours_vs_truth"]["q"])
                if "vs_ours" in r:
                    line += " vs ours q=%.3g max_rel=%.3g;" % (r["vs_ours"]["q"],
                                                               r["vs_ours"]["max_rel"])
                line += " vs truth q=%.3g max_rel=%.3g (%s)" % (
                    r["vs_truth"]["q"], r["vs_truth"]["max_rel"], ", ".join(r["notes"]))
            print(line)
        print("torch %s on %s: %d agree, %d torch further from truth than cutover, "
              "%d disagree, %d skipped, %d errors" % (
                  torch.__version__, a.device,
                  *(sum(r["status"] == s for r in results)
                    for s in ("agree", "torch_further_from_truth", "disagree", "skipped",
                              "error"))))
    return 1 if any(r["status"] in ("disagree", "error") for r in results) else 0


if __name__ == "__main__":
    sys.exit(main())
