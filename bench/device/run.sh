#!/usr/bin/env bash
# compat's (and probe's) checks on a GPU host, in one call: the device machine has no package
# installs and no network, so the binary and the CUDA plugin are built on the build host and
# carried. On the build host first:
#
#   cmake --build build --target cutover cutover_compat_cuda compat_cuda_plugin_test
#   bench/device/stage.sh build .device-carry     # stripped binary, plugin, GPU test, libs
#
# then, on the GPU host, from the repository root (the device tool: carry [".device-carry"]):
#
#   bench/device/run.sh [CARRY_DIR]     (default .device-carry; OUT names the results folder,
#                                        default ./out-device)
#
# It (1) finds the host's NVIDIA libraries (CUDA toolkit or PyTorch's pip packages) and checks
# that the carried cutover runs, else tries to build it there; (2) runs the plugin's GPU tests;
# (3) measures `cutover compat calibrate` side by side with PyTorch (bf16 8192^3 torch.matmul
# and a device-to-device tensor copy; targets: 95% and 90% of PyTorch), ours before and after
# PyTorch's; (4) runs `compat run --backend cuda --suite quick` (timed, target < 60 s on an
# H200) and `--backend cpu` on the same cases, and `compat compare` of the two; (4b) two 30 s
# soaks of the GEMM cases on the GPU (`--soak`), their overhead and their stability compared
# (compat-cuda-soak1.rec, compat-cuda-soak2.rec); (4c) with 2 or more GPUs and an mpirun, the
# cluster suite over NCCL, one rank per GPU (compat-cluster-cuda.rec), its 1 GiB all_reduce
# beside torch.distributed's (bench/device/torch_allreduce.py); (5) calls
# bench/device/probe_checks.sh when it exists. Results go to $OUT: compat-summary.txt (every
# table), compat-cuda-quick.rec and compat-cpu-quick.rec (for examples/), compat-compare.json,
# compat-log.txt, and probe/ (probe_checks.sh's files). The last lines printed are the summary.
#
# Exit status: 0 done (targets missed are reported, not failed); 2 usage or nothing to run;
# 3 not a GPU host, or the carried binary does not run and cannot be built here.
set -euo pipefail

die() {
  echo "run.sh: $2" >&2
  exit "$1"
}

[[ $# -le 1 ]] || die 2 "usage: bench/device/run.sh [CARRY_DIR]"
carry=${1:-.device-carry}
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
command -v nvidia-smi >/dev/null 2>&1 ||
  die 3 "nvidia-smi not found: this script runs on a GPU host (see its header for how to stage and carry the build)"
nvidia-smi -L >/dev/null 2>&1 || die 3 "nvidia-smi lists no GPU"

out=${OUT:-$PWD/out-device}
mkdir -p "$out"
log=$out/compat-log.txt
summary=$out/compat-summary.txt
: >"$log"
: >"$summary"
say() { echo "$*" | tee -a "$summary"; }

# ---- 1. the NVIDIA libraries and a cutover that runs.
libdirs=""
for so in libcudart.so.13 libcublasLt.so.13 libcublas.so.13 libcudnn.so.9 libnccl.so.2; do
  found=$(find /usr/local /usr/lib /usr/lib64 /opt -name "$so" 2>/dev/null | head -n 1 || true)
  if [[ -z "$found" ]] && command -v python3 >/dev/null 2>&1; then
    site=$(python3 -c 'import site; print(" ".join(site.getsitepackages()))' 2>/dev/null || true)
    for d in $site; do
      found=$(find "$d/nvidia" -name "$so" 2>/dev/null | head -n 1 || true)
      [[ -n "$found" ]] && break
    done
  fi
  if [[ -z "$found" ]]; then
    echo "run.sh: $so not found on this host; the CUDA backend will not load" | tee -a "$log" >&2
    continue
  fi
  dir=$(dirname "$found")
  case ":$libdirs:" in *":$dir:"*) ;; *) libdirs=${libdirs:+$libdirs:}$dir ;; esac
done
# Only cutover's processes get these paths: python3 and torch keep their own environment.
cut_ld=${libdirs}${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}

bin=""
if [[ -x "$carry/bin/cutover" ]]; then
  bin=$(cd "$carry/bin" && pwd)/cutover
  # The carried libraries only when the host lacks one of them.
  if LD_LIBRARY_PATH=$cut_ld ldd "$bin" | grep -q 'not found'; then
    carried_libs=$(cd "$carry/lib" && pwd)
    cut_ld=$cut_ld:$carried_libs
  fi
  if ! LD_LIBRARY_PATH=$cut_ld "$bin" --version >>"$log" 2>&1; then
    echo "run.sh: the carried $bin does not run here (see $log)" >&2
    bin=""
  fi
else
  echo "run.sh: no carried binary in $carry/bin (bench/device/stage.sh makes it)" >&2
fi
if [[ -z "$bin" ]]; then
  echo "run.sh: building cutover and the CUDA plugin here instead" >&2
  if cmake -S . -B build-device -G Ninja -DCMAKE_BUILD_TYPE=Release -DCUTOVER_CUDA=ON \
    -DCMAKE_CUDA_ARCHITECTURES=native >>"$log" 2>&1 &&
    cmake --build build-device -j "$(nproc)" --target cutover cutover_compat_cuda >>"$log" 2>&1; then
    bin=$PWD/build-device/apps/cutover/cutover
  else
    tail -n 20 "$log" >&2
    die 3 "the carried binary does not run and building here failed (the build needs libcurl, SQLite, OpenSSL, yaml-cpp, nlohmann-json and CLI11 development files; stage and carry instead)"
  fi
fi
# Runs cutover (or a carried test) with the library paths found above.
cut() { LD_LIBRARY_PATH=$cut_ld "$@"; }
plugin=$(dirname "$bin")/libcutover_compat_cuda.so
[[ -f "$plugin" ]] || die 3 "no CUDA plugin beside $bin"
export CUTOVER_CUDA_PLUGIN=$plugin
say "host: $(nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader | head -n 1)"
say "cutover: $bin ($(cut "$bin" --version 2>/dev/null | head -n 1))"
say "NVIDIA libraries from: ${libdirs:-none found}"

# ---- 2. the plugin's GPU tests (correctness of every op family against float64 truth).
if [[ -x "$carry/bin/compat_cuda_plugin_test" ]]; then
  test_rc=0
  CUTOVER_TEST_CUDA_PLUGIN_PATH=$plugin cut "$carry/bin/compat_cuda_plugin_test" >"$out/gtest.txt" 2>&1 || test_rc=$?
  cat "$out/gtest.txt" >>"$log"
  say "compat_cuda_plugin_test: exit $test_rc; $(grep -E '^\[  (PASSED|SKIPPED|FAILED) +\] [0-9]+ test' "$out/gtest.txt" | tr -s ' ' | paste -sd ';' -)"
  # On a GPU host nothing may skip: a skip there means the plugin did not initialize.
  grep -m 1 -A 1 'Skipped$' "$out/gtest.txt" | tail -n 1 | sed 's/^/  skipped: /' | tee -a "$summary" || true
  grep -E -A 2 'Failure$' "$out/gtest.txt" | head -n 30 | tee -a "$summary" || true
  rm -f "$out/gtest.txt"
else
  say "compat_cuda_plugin_test: not carried, skipped"
fi

# ---- 3. our ceilings side by side with PyTorch's, ours before and after.
calib() { # $1: file
  local rc=0
  cut "$bin" compat calibrate --json >"$1" 2>"$out/calib.err" || rc=$?
  cat "$out/calib.err" >>"$log"
  return $rc
}
jget() { # $1 file, $2 python expression on d
  python3 -c "import json,sys; d=json.load(open(sys.argv[1])); print($2)" "$1"
}
if calib "$out/calibrate-1.json"; then
  n=$(jget "$out/calibrate-1.json" 'd["device"]["calibration"]["gemm_size"]')
  bytes=$(jget "$out/calibrate-1.json" 'd["device"]["calibration"]["copy_bytes"]')
  if python3 "$here/torch_side_by_side.py" "$n" "$bytes" >"$out/torch.json" 2>>"$log"; then
    calib "$out/calibrate-2.json" || cp "$out/calibrate-1.json" "$out/calibrate-2.json"
    python3 - "$out/calibrate-1.json" "$out/calibrate-2.json" "$out/torch.json" <<'PY' | tee -a "$summary"
import json, sys
a, b = (json.load(open(p))["device"]["calibration"] for p in sys.argv[1:3])
t = json.load(open(sys.argv[3]))
rows = [("bf16 %d^3 GEMM (TFLOP/s)" % a["gemm_size"], "gemm_bf16_tflops", t["gemm_bf16_tflops"], 0.95),
        ("device copy (GB/s, read+write)", "copy_kernel_gbps", t["copy_gbps"], 0.90)]
print("side by side (torch %s on %s), ours before | after PyTorch:" % (t["torch"], t["device"]))
for name, key, theirs, target in rows:
    ours = (a[key] + b[key]) / 2
    ratio = ours / theirs if theirs > 0 else 0
    print("  %-32s ours %8.1f | %8.1f   torch %8.1f   ratio %.3f (target %.2f: %s)" %
          (name, a[key], b[key], theirs, ratio, target, "met" if ratio >= target else "MISSED"))
print("  cudaMemcpy device to device: %.1f GB/s; fp32 4096^3 GEMM (no TF32): %.1f TFLOP/s" %
      (a["memcpy_gbps"], a["gemm_fp32_tflops"]))
PY
  else
    say "side by side: skipped (no python3 with torch and CUDA here; see compat-log.txt)"
    jget "$out/calibrate-1.json" '"ours: " + json.dumps(d["device"]["calibration"])' | tee -a "$summary"
  fi
  rm -f "$out/calibrate-2.json"
  [[ -f "$out/torch.json" ]] && mv "$out/torch.json" "$out/compat-torch.json"
else
  say "compat calibrate FAILED: $(cat "$out/calib.err")"
fi
rm -f "$out/calib.err" "$out/calibrate-1.json"

# ---- 4. the quick suite on the GPU and on the CPU, then compare.
t0=$(date +%s.%N)
rc=0
cut "$bin" compat run --backend cuda --suite quick --record "$out/compat-cuda-quick.rec" >"$out/cuda-run.txt" 2>>"$log" || rc=$?
t1=$(date +%s.%N)
cuda_s=$(python3 -c "print('%.1f' % ($t1 - $t0))")
say "compat run --backend cuda --suite quick: exit $rc, ${cuda_s} s (target < 60 s on an H200)"
cat "$out/cuda-run.txt" >>"$log"
grep -vE ' ms ' "$out/cuda-run.txt" | tee -a "$summary" || true
t0=$(date +%s.%N)
cpu_rc=0
cut "$bin" compat run --backend cpu --suite quick --threads "$(nproc)" --record "$out/compat-cpu-quick.rec" >>"$log" 2>&1 || cpu_rc=$?
t1=$(date +%s.%N)
say "compat run --backend cpu --suite quick --threads $(nproc): exit $cpu_rc, $(python3 -c "print('%.1f' % ($t1 - $t0))") s"
if [[ $rc -eq 0 && $cpu_rc -eq 0 ]]; then
  cmp_rc=0
  cut "$bin" compat compare "$out/compat-cpu-quick.rec" "$out/compat-cuda-quick.rec" >"$out/compare.txt" 2>>"$log" || cmp_rc=$?
  cut "$bin" compat compare "$out/compat-cpu-quick.rec" "$out/compat-cuda-quick.rec" --json >"$out/compat-compare.json" 2>>"$log" || true
  say "compat compare cpu cuda: exit $cmp_rc"
  tee -a "$summary" <"$out/compare.txt" >/dev/null
  rm -f "$out/compare.txt"
fi
rm -f "$out/cuda-run.txt"

# ---- 4b. stability: two short soaks of the GEMM cases on the GPU, compared (the A/A noise floor
# of a dedicated device), with each soak's own overhead (target < 5% of its wall time).
if [[ $rc -eq 0 ]]; then
  for k in 1 2; do
    soak_rc=0
    cut "$bin" compat run --backend cuda --ops gemm --soak 30s --json \
      --record "$out/compat-cuda-soak$k.rec" >"$out/soak$k.json" 2>>"$log" || soak_rc=$?
    say "compat run --backend cuda --ops gemm --soak 30s (#$k): exit $soak_rc $(jget "$out/soak$k.json" '"rounds %d, overhead %.2f%% of %.1f s" % (d["rounds"], 100 * d["overhead_share"], d["wall_s"])' 2>/dev/null || true)"
  done
  # What NVML saw during the first soak (compat/gpu_monitor.h): empty fields mean not sampled.
  if [[ -f "$out/compat-cuda-soak1.rec" ]]; then
    python3 - "$out/compat-cuda-soak1.rec" <<'PY' | tee -a "$summary" || true
import json, sys
r = json.load(open(sys.argv[1]))
for c in r["cases"][:3]:
    f = c.get("timing", {}).get("interference", {})
    print("  NVML during %s: SM %s-%s MHz, mem min %s MHz, reasons 0x%x, max %s C, max %s W, "
          "other processes %s" % (c["id"], f.get("sm_clock_min_mhz"), f.get("sm_clock_max_mhz"),
          f.get("mem_clock_min_mhz"), max(0, f.get("throttle_reasons", -1)),
          f.get("temperature_max_c"), f.get("power_max_w"), f.get("other_processes")))
PY
  fi
  if [[ -f "$out/compat-cuda-soak1.rec" && -f "$out/compat-cuda-soak2.rec" ]]; then
    cut "$bin" compat compare "$out/compat-cuda-soak1.rec" "$out/compat-cuda-soak2.rec" 2>>"$log" |
      grep -E '^stability' | tee -a "$summary" || true
  fi
  rm -f "$out/soak1.json" "$out/soak2.json"
fi

# ---- 4c. the cluster suite over NCCL, one rank per GPU, when the host has two or more GPUs
# and an mpirun; our all_reduce bus bandwidth at 1 GiB beside torch.distributed's where torch is.
gpus=$(nvidia-smi -L | grep -c '^GPU ' || true)
mpi_plugin=$(dirname "$bin")/libcutover_compat_mpi.so
if [[ $gpus -lt 2 ]]; then
  say "cluster suite over NCCL: skipped ($gpus GPU on this host; it needs one rank per GPU and 2 or more)"
elif ! command -v mpirun >/dev/null 2>&1; then
  say "cluster suite over NCCL: skipped (no mpirun on this host; $gpus GPUs)"
elif [[ ! -f "$mpi_plugin" ]]; then
  say "cluster suite over NCCL: skipped (no MPI plugin beside $bin)"
else
  cl_rc=0
  t0=$(date +%s.%N)
  LD_LIBRARY_PATH=$cut_ld OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 \
    mpirun --oversubscribe -np "$gpus" -x LD_LIBRARY_PATH -x CUTOVER_CUDA_PLUGIN "$bin" \
    compat run --suite cluster --backend cuda -e 1GiB -f 4 --passes 1 --timeout 5m \
    --record "$out/compat-cluster-cuda.rec" >"$out/cluster.txt" 2>>"$log" || cl_rc=$?
  t1=$(date +%s.%N)
  say "compat run --suite cluster --backend cuda, $gpus ranks: exit $cl_rc, $(python3 -c "print('%.1f' % ($t1 - $t0))") s"
  grep -E '^(cluster suite|all_reduce .* 1073741824 |pairwise|nodes)' "$out/cluster.txt" | tee -a "$summary" || true
  cat "$out/cluster.txt" >>"$log"
  rm -f "$out/cluster.txt"
  if [[ $cl_rc -eq 0 ]] && python3 -c 'import torch, torch.distributed' 2>/dev/null; then
    if python3 -m torch.distributed.run --standalone --nproc_per_node "$gpus" \
      "$here/torch_allreduce.py" 1073741824 >"$out/torch-allreduce.json" 2>>"$log"; then
      python3 - "$out/compat-cluster-cuda.rec" "$out/torch-allreduce.json" <<'PY' | tee -a "$summary"
import json, sys
r = json.load(open(sys.argv[1]))
t = json.loads([l for l in open(sys.argv[2]) if l.startswith("{")][-1])
ours = [c for c in r["collectives"] if c["op"] == "all_reduce" and not c["in_place"]
        and c["bytes"] == t["bytes"]]
if ours:
    o = ours[0]["busbw_gbps"]
    print("all_reduce %d B over %d GPUs: ours %.1f GB/s busbw (%s), torch.distributed %.1f GB/s "
          "(torch %s, NCCL %s), ratio %.3f" % (t["bytes"], t["ranks"], o,
          r["transport"]["library"], t["busbw_gbps"], t["torch"], t["nccl"], o / t["busbw_gbps"]))
else:
    print("all_reduce side by side: no row of %d B in our record" % t["bytes"])
PY
    else
      say "all_reduce side by side: torch.distributed failed (see compat-log.txt)"
    fi
  else
    say "all_reduce side by side: skipped (no torch here, or our run failed)"
  fi
fi

# ---- 5. probe's checks, when that script exists.
if [[ -x "$here/probe_checks.sh" ]]; then
  probe_rc=0
  # A wrapper gives cutover its library paths there while python3 (torch) keeps its own.
  wrap_dir=$(mktemp -d)
  printf '#!/usr/bin/env bash\nLD_LIBRARY_PATH=%q exec %q "$@"\n' "$cut_ld" "$bin" >"$wrap_dir/cutover"
  chmod +x "$wrap_dir/cutover"
  "$here/probe_checks.sh" "$wrap_dir/cutover" "$out/probe" >>"$log" 2>&1 || probe_rc=$?
  rm -rf "$wrap_dir"
  say "probe_checks.sh: exit $probe_rc"
  grep -E '^(probe collect|torch|ratio|MISMATCH|mismatch)' "$log" | tail -n 6 | tee -a "$summary" || true
else
  say "probe_checks.sh: not present, skipped"
fi

echo "---- summary (also in $summary)"
cat "$summary"
