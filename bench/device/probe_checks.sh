#!/usr/bin/env bash
# probe's device checks, run on a GPU host by bench/device/run.sh (or by hand):
#   1. times `cutover probe collect` (median of RUNS runs) side by side with PyTorch's
#      `python3 -m torch.utils.collect_env` (skipped, with a message, when torch is missing) and
#      prints the ratio (the issue's goal: probe at least 10x faster);
#   2. checks the NVML fields of the fingerprint (name, uuid, PCI bus id, memory, driver
#      version, power limit, ECC mode, persistence mode) against
#      `nvidia-smi --query-gpu=... --format=csv,noheader,nounits`, GPU by GPU;
#   3. copies the fingerprint to OUT_DIR (to be saved under examples/).
# Exit status: 0 all fields agree; 1 a field differs; 2 usage; 3 not a GPU host (no nvidia-smi,
# no python3) or the collection failed.
#
# Usage: bench/device/probe_checks.sh CUTOVER_BIN OUT_DIR [RUNS]
set -euo pipefail

die() { echo "probe_checks.sh: $2" >&2; exit "$1"; }

[[ $# -ge 2 && $# -le 3 ]] || die 2 "usage: probe_checks.sh CUTOVER_BIN OUT_DIR [RUNS]"
bin=$1
out=$2
runs=${3:-5}
[[ $runs =~ ^[1-9][0-9]*$ ]] || die 2 "RUNS must be a positive integer, not '$runs'"
[[ -x $bin ]] || die 2 "$bin is not an executable cutover binary"
command -v nvidia-smi >/dev/null 2>&1 ||
  die 3 "nvidia-smi not found: these checks need a GPU host with the NVIDIA driver installed"
command -v python3 >/dev/null 2>&1 || die 3 "python3 not found: it compares the fields"
mkdir -p "$out"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

# Median wall time in milliseconds of RUNS runs of "$@" (output discarded).
median_ms() {
  local i t0 t1
  : >"$work/times"
  for ((i = 0; i < runs; i++)); do
    t0=$(date +%s%N)
    "$@" >/dev/null 2>&1 || return 1
    t1=$(date +%s%N)
    echo $(((t1 - t0) / 1000000)) >>"$work/times"
  done
  sort -n "$work/times" | awk '{a[NR] = $1} END {print (NR % 2) ? a[(NR + 1) / 2] : (a[NR / 2] + a[NR / 2 + 1]) / 2}'
}

fp=$work/fingerprint.json
"$bin" probe collect --out "$fp" >/dev/null || die 3 "$bin probe collect --out failed"
probe_ms=$(median_ms "$bin" probe collect --json) || die 3 "$bin probe collect --json failed"
echo "probe collect: median ${probe_ms} ms of ${runs} runs"

if python3 -c 'import torch' >/dev/null 2>&1; then
  torch_ms=$(median_ms python3 -m torch.utils.collect_env) ||
    die 3 "python3 -m torch.utils.collect_env failed"
  echo "torch.utils.collect_env: median ${torch_ms} ms of ${runs} runs"
  python3 - "$probe_ms" "$torch_ms" <<'PY'
import sys
probe, torch = float(sys.argv[1]), float(sys.argv[2])
ratio = torch / max(probe, 1.0)
print(f"ratio: probe collect is {ratio:.1f}x faster than torch.utils.collect_env "
      f"(goal >= 10x: {'met' if ratio >= 10 else 'NOT met'})")
PY
else
  echo "torch.utils.collect_env: skipped (PyTorch is not installed for python3)"
fi

fields=index,name,uuid,pci.bus_id,memory.total,driver_version,power.limit,ecc.mode.current,persistence_mode
nvidia-smi --query-gpu="$fields" --format=csv,noheader,nounits >"$work/smi.csv" ||
  die 3 "nvidia-smi --query-gpu failed"
host=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1])).get("hostname") or "host")' "$fp")
cp "$fp" "$out/probe-fingerprint-$host.json"
echo "fingerprint: $out/probe-fingerprint-$host.json"

python3 - "$fp" "$work/smi.csv" <<'PY'
import csv, json, sys
fp = json.load(open(sys.argv[1]))
gpus = {g["index"]: g for g in fp["gpus"]}
bad = 0
rows = list(csv.reader(open(sys.argv[2]), skipinitialspace=True))
if len(rows) != len(gpus):
    print(f"MISMATCH gpu count: nvidia-smi {len(rows)}, fingerprint {len(gpus)}")
    bad += 1
def na(v):
    return v.strip() in ("[N/A]", "N/A", "[Not Supported]", "")
for row in rows:
    idx, name, uuid, bus, mem, drv, power, ecc, pm = [c.strip() for c in row]
    g = gpus.get(int(idx))
    if g is None:
        print(f"MISMATCH GPU {idx}: not in the fingerprint"); bad += 1; continue
    def check(field, smi, mine, same):
        global bad
        if na(smi):
            ok = mine is None
        else:
            ok = mine is not None and same(smi, mine)
        print(f"{'ok      ' if ok else 'MISMATCH'} GPU {idx} {field}: nvidia-smi {smi!r}, fingerprint {mine!r}")
        bad += 0 if ok else 1
    enabled = lambda s, m: (s.lower() == "enabled") == m
    check("name", name, g.get("name"), lambda s, m: s == m)
    check("uuid", uuid, g.get("uuid"), lambda s, m: s == m)
    check("pci_bus_id", bus, g.get("pci_bus_id"), lambda s, m: s.lower() == m.lower())
    check("memory_mib", mem, g.get("memory_mib"), lambda s, m: int(float(s)) == m)
    check("driver.version", drv, fp["driver"].get("version"), lambda s, m: s == m)
    check("power_limit_w", power, g.get("power_limit_w"), lambda s, m: abs(float(s) - m) < 0.5)
    check("ecc.enabled", ecc, g.get("ecc", {}).get("enabled"), enabled)
    check("persistence_mode", pm, g.get("persistence_mode"), enabled)
print(f"{bad} mismatch(es)")
sys.exit(1 if bad else 0)
PY
