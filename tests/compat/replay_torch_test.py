#!/usr/bin/env python3
"""The quick suite replayed in PyTorch (docs/compat.md "Reproduce a case in PyTorch").

usage: replay_torch_test.py CUTOVER_BIN PYTHON

Runs `cutover compat run --suite quick --dump DIR` (the cpu backend), then DIR/replay.py in one
PYTHON process (Debian's /usr/bin/python3 with python3-torch) and asserts, for every case of
every op of the quick suite, that our output is within the op's tolerance of the float64 truth
and that PyTorch agrees with it, or else is further from the truth than ours (torch 1.13's native
bf16 kernels on a CPU without AVX-512 BF16 are: a finding about torch there, which the replay
exists to surface, so the test means the same on every x86-64 CPU); that
the float8 cases are skipped for want of a float8 dtype (torch 1.13), and that `compat dump`
writes cases whose replay agrees with the float64 truth. Exit 77 (skipped) when PYTHON has no
torch, except in CI, where scripts/install-deps installs it.
"""
import json
import os
import subprocess
import sys
import tempfile


def fail(msg):
    print("FAIL: " + msg)
    sys.exit(1)


def main():
    cutover, python = sys.argv[1], sys.argv[2]
    probe = subprocess.run([python, "-c", "import torch, numpy; print(torch.__version__)"],
                           capture_output=True, text=True)
    if probe.returncode != 0:
        if os.environ.get("CI") in ("true", "1"):
            fail("required in CI: %s cannot import torch (scripts/install-deps installs "
                 "python3-torch)" % python)
        print("SKIP: %s cannot import torch and numpy (apt-get install python3-torch)" % python)
        sys.exit(77)
    torch_version = probe.stdout.strip()
    with tempfile.TemporaryDirectory() as tmp:
        dump = os.path.join(tmp, "dump")
        run = subprocess.run([cutover, "compat", "run", "--suite", "quick", "--reps", "1",
                              "--record", os.path.join(tmp, "quick.rec"), "--dump", dump,
                              "--json"], capture_output=True, text=True)
        if run.returncode != 0:
            fail("compat run --dump exited %d: %s" % (run.returncode, run.stderr))
        listing = json.loads(subprocess.run([cutover, "compat", "list", "--json"],
                                            capture_output=True, text=True, check=True).stdout)
        cpu_ops = {o["name"] for o in listing["ops"] if o["cpu"]}
        rep = subprocess.run([python, os.path.join(dump, "replay.py"), "--json"],
                             capture_output=True, text=True)
        if rep.returncode not in (0, 1):
            fail("replay.py exited %d: %s" % (rep.returncode, rep.stderr))
        doc = json.loads(rep.stdout)
        seen_ops, problems, skipped, further = set(), [], [], []
        for r in doc["cases"]:
            op = r["id"].split("/")[0]
            dtype = r["id"].split("/")[1]
            seen_ops.add(op)
            if r["status"] == "skipped":
                skipped.append(r["id"])
                if dtype != "fp8_e4m3" or "no float8" not in r["reason"]:
                    problems.append("%s skipped: %s" % (r["id"], r["reason"]))
                continue
            if r["status"] not in ("agree", "torch_further_from_truth"):
                problems.append("%s %s: %s" % (r["id"], r["status"],
                                               json.dumps(r.get("vs_ours") or r.get("reason"))))
                continue
            # Whatever torch computes on this CPU, ours is within tolerance of the float64 truth;
            # a case torch is outside tolerance of ours on is one where torch is further from it.
            ours, theirs = r["ours_vs_truth"], r["vs_truth"]
            if ours["q"] > 1 or ours["nonfinite"] or ours["compared"] == 0:
                problems.append("%s: our output is outside tolerance of the truth: %s" %
                                (r["id"], json.dumps(ours)))
            if r["status"] == "torch_further_from_truth":
                if r["vs_ours"]["q"] <= 1 or not (theirs["q"] > ours["q"] or
                                                   theirs["nonfinite"]):
                    problems.append("%s: torch_further_from_truth without cause: %s" %
                                    (r["id"], json.dumps(r)))
                further.append("%s (torch q %.3g, cutover q %.3g)" % (r["id"], theirs["q"],
                                                                      ours["q"]))
        if problems:
            fail("torch %s against our output and the truth:\n  " % torch_version +
                 "\n  ".join(problems))
        if seen_ops != cpu_ops:
            fail("replayed ops %s, the quick suite's cpu ops are %s" % (sorted(seen_ops),
                                                                        sorted(cpu_ops)))
        if not skipped:
            fail("no float8 case was skipped (torch %s has no float8)" % torch_version)
        print("ok: %d quick-suite cases within tolerance of the truth; torch %s agrees on %d, "
              "is further from the truth on %d, %d float8 skipped" %
              (len(doc["cases"]) - len(skipped), torch_version,
               len(doc["cases"]) - len(skipped) - len(further), len(further), len(skipped)))
        for f in further:
            print("  torch further from truth than cutover: " + f)

        # compat dump: inputs and truth alone; replay.py compares with the truth.
        ddir = os.path.join(tmp, "dumped")
        ids = ["conv2d_bwd_data/fp32/2x8x9x9x6x3x3x2x1/NHWC/seed=4",
               "sdpa/fp32/1x2x64x32/causal/seed=2"]
        d = subprocess.run([cutover, "compat", "dump", *ids, "--dir", ddir],
                           capture_output=True, text=True)
        if d.returncode != 0:
            fail("compat dump exited %d: %s" % (d.returncode, d.stderr))
        rep = subprocess.run([python, os.path.join(ddir, "replay.py"), "--json"],
                             capture_output=True, text=True)
        doc = json.loads(rep.stdout)
        got = sorted((r["id"], r["status"]) for r in doc["cases"])
        if got != sorted((i, "agree") for i in ids) or rep.returncode != 0:
            fail("compat dump replay: %s" % rep.stdout)
        for r in doc["cases"]:
            if "vs_ours" in r or r["vs_truth"]["compared"] == 0:
                fail("%s: a dump without output compares with the truth only" % r["id"])
        print("ok: compat dump cases agree with the float64 truth in torch")
    print("PASS")


if __name__ == "__main__":
    main()
