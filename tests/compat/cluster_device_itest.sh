#!/usr/bin/env bash
# The cuda path of the cluster suite under a real `mpirun -np 4`, on the fake device side of
# tests/compat/fake_cluster_device.cc (each collective computed across the ranks over MPI):
#  - rank 0's unique id reaches every rank, each rank joins on the device of its local rank, the
#    record is valid and names NCCL's variables and each rank's device, every collective is
#    correct and in-place alltoall (which NCCL lacks) is not offered;
#  - more ranks on a node than GPUs: refused on every rank, exit 2, no hang;
#  - a rank whose collective hangs: the watchdog aborts it within --timeout, the job ends with
#    exit 3 and the record keeps what was measured, complete: false;
#  - no plugin, and the real plugin on this GPU-less host: exit 3 on every rank, no hang.
# Usage: cluster_device_itest.sh BUILD_DIR SOURCE_DIR FAKE_PLUGIN [REAL_PLUGIN]
set -euo pipefail
build="$1"; src="$2"; fake="$3"; real="${4:-}"
bin="$build/apps/cutover/cutover"
command -v mpirun >/dev/null || { echo "SKIP: mpirun not installed (openmpi-bin)"; exit 77; }
[ -e "$build/apps/cutover/libcutover_compat_mpi.so" ] || { echo "SKIP: MPI plugin not built"; exit 77; }
work="$(mktemp -d)"; trap 'rm -rf "$work"' EXIT
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_btl=tcp,self
export OMPI_MCA_btl_tcp_if_include=lo OMPI_MCA_oob_tcp_if_include=lo
fail() { echo "FAIL: $*"; exit 1; }
mkdir "$work/log"

t0=$(date +%s)
CUTOVER_CUDA_PLUGIN="$fake" CUTOVER_FAKE_GPUS=4 CUTOVER_FAKE_CLUSTER_LOG="$work/log" \
  NCCL_ALGO=Ring NCCL_PROTO=Simple \
  mpirun --oversubscribe -np 4 "$bin" compat run --suite cluster --backend cuda -b 8 -e 64KiB \
  -f 8 --reps 3 --pair-bytes 16KiB --passes 1 --record "$work/cuda.rec" >"$work/out" 2>"$work/err" ||
  { rc=$?; cat "$work/out" "$work/err"; fail "mpirun exited $rc"; }
echo "cuda path on the fake device, 4 ranks: $(( $(date +%s) - t0 )) s"
python3 "$src/tests/harness/validate_schema.py" "$src/docs/schemas/compat-cluster-1.json" \
  "$work/cuda.rec" || fail "the record does not match its schema"
python3 - "$work/cuda.rec" "$work/log" <<'PY' || fail "the cuda record or the ranks' logs"
import json, os, sys
r = json.load(open(sys.argv[1]))
assert r["complete"] is True and r["backend"] == "cuda" and r["world_size"] == 4, r
t = r["transport"]
assert t["kind"] == "nccl" and t["library"] == "fake NCCL over MPI", t
assert t["env"] == {"NCCL_ALGO": "Ring", "NCCL_PROTO": "Simple"}, t["env"]
assert t["env_differs_on_ranks"] == [] and t["timeout_s"] == 600, t
assert [d["device"] for d in t["devices"]] == [0, 1, 2, 3], t["devices"]
assert t["devices"][2]["name"] == "Fake GPU 0000:02:00.0", t["devices"]
assert "note" not in t  # one node: no two-node tree caveat
rows = {(c["op"], c["in_place"]) for c in r["collectives"]}
assert ("alltoall", True) not in rows and ("alltoall", False) in rows, rows
assert len(rows) == 9, rows
for c in r["collectives"]:
    assert c["correct"] and c["wrong_values"] == 0, c
    assert c["busbw_gbps"] > 0 and len(c["rep_us"]) == 3, c
assert all(r["pairwise"]["bw_gbps"][a][b] > 0 for a in range(4) for b in range(4) if a != b)
# Each rank joined with rank 0's id, on the device of its local rank (one host: its rank).
lines = [open(os.path.join(sys.argv[2], "rank%d" % k)).read().split() for k in range(4)]
ids = {l[-1] for l in lines}
assert len(ids) == 1 and ids != {"0" * 16}, lines
assert [(int(l[1]), int(l[3]), int(l[5]), l[7]) for l in lines] == [(k, 4, k, "-") for k in range(4)], lines
assert "ring_all_reduce" not in r  # one node: no second pass
PY
echo "ok: one id on every rank, device = local rank, every collective correct, record valid"

# More ranks than GPUs on the node: every rank refuses alike (mpirun may stop the slower ones
# before they print), exit 2.
set +e
CUTOVER_CUDA_PLUGIN="$fake" CUTOVER_FAKE_GPUS=2 timeout 120 mpirun --oversubscribe -np 4 "$bin" \
  compat run --suite cluster --backend cuda -e 64 --passes 0 --record "$work/few.rec" \
  >"$work/out2" 2>&1
rc=$?
set -e
[ "$rc" -eq 2 ] || { cat "$work/out2"; fail "4 ranks on 2 GPUs: exit $rc, want 2"; }
grep -q "rank 2: compat run --suite cluster: local rank 2 on node .*, which has 2 GPU(s)" \
  "$work/out2" || { cat "$work/out2"; fail "the message for too few GPUs"; }
echo "ok: 4 ranks on 2 GPUs refused on every rank with exit 2"

# A hung collective on rank 1: the watchdog (--timeout 2s) aborts it, the job ends with exit 3.
set +e
t0=$(date +%s)
CUTOVER_CUDA_PLUGIN="$fake" CUTOVER_FAKE_GPUS=4 CUTOVER_FAKE_HANG_RANK=1 CUTOVER_FAKE_HANG_AFTER=5 \
  timeout 120 mpirun --oversubscribe -np 4 "$bin" compat run --suite cluster --backend cuda \
  --ops all_reduce -b 1KiB -e 64KiB -f 2 --passes 0 --timeout 2s --record "$work/hang.rec" \
  >"$work/out3" 2>&1
rc=$?
took=$(( $(date +%s) - t0 ))
set -e
[ "$rc" -eq 3 ] || { cat "$work/out3"; fail "a hung collective: exit $rc, want 3"; }
[ "$took" -lt 60 ] || fail "a hung collective took $took s to end"
grep -q "rank 1: collective did not complete in 2 s (--timeout)" "$work/out3" ||
  { cat "$work/out3"; fail "the watchdog's message"; }
python3 - "$work/hang.rec" <<'PY' || fail "the record of the hung run"
import json, sys
r = json.load(open(sys.argv[1]))
assert r["complete"] is False and r["collectives"], r
assert all(c["correct"] for c in r["collectives"])
PY
echo "ok: a hung collective aborted by the watchdog in $took s, exit 3, the record kept"

# No plugin at all, and (when built) the real plugin on this host without a GPU: exit 3.
set +e
CUTOVER_CUDA_PLUGIN=/nonexistent/libcutover_compat_cuda.so timeout 120 mpirun --oversubscribe \
  -np 2 "$bin" compat run --suite cluster --backend cuda -e 64 --passes 0 \
  --record "$work/none.rec" >"$work/out4" 2>&1
rc=$?
set -e
[ "$rc" -eq 3 ] || { cat "$work/out4"; fail "no plugin: exit $rc, want 3"; }
grep -q "rank 0: CUDA plugin not found: tried /nonexistent/libcutover_compat_cuda.so" \
  "$work/out4" || { cat "$work/out4"; fail "the message without a plugin"; }
echo "ok: no plugin: exit 3 on every rank"
if [ -n "$real" ] && ! nvidia-smi -L >/dev/null 2>&1; then
  set +e
  CUTOVER_CUDA_PLUGIN="$real" timeout 120 mpirun --oversubscribe -np 2 "$bin" compat run \
    --suite cluster --backend cuda -e 64 --passes 0 --record "$work/real.rec" >"$work/out5" 2>&1
  rc=$?
  set -e
  [ "$rc" -eq 3 ] || { cat "$work/out5"; fail "the real plugin without a GPU: exit $rc, want 3"; }
  grep -q "rank 0: no usable CUDA device" "$work/out5" || { cat "$work/out5"; fail "its message"; }
  echo "ok: the real plugin loads its device side and refuses without a GPU, exit 3"
fi
