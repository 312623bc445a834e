#!/usr/bin/env bash
# The cpu cluster suite under `mpirun --oversubscribe -np 4` on one host: the record is valid
# against docs/schemas/compat-cluster-1.json, every collective is correct, bus bandwidths are
# positive and agree with the timings, the matrix is complete; and ranks that disagree on the
# options are refused on every rank. Usage: cluster_mpirun_itest.sh BUILD_DIR SOURCE_DIR
# Exit 77 (skip) without mpirun or the MPI plugin.
set -euo pipefail
build="$1"; src="$2"
bin="$build/apps/cutover/cutover"
command -v mpirun >/dev/null || { echo "SKIP: mpirun not installed (openmpi-bin)"; exit 77; }
[ -e "$build/apps/cutover/libcutover_compat_mpi.so" ] || { echo "SKIP: MPI plugin not built"; exit 77; }
work="$(mktemp -d)"; trap 'rm -rf "$work"' EXIT
# Root in CI; OpenMPI refuses root without both variables. tcp,self: no shared-memory btl in
# containers whose /dev/shm is small.
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_btl=tcp,self
export OMPI_MCA_btl_tcp_if_include=lo OMPI_MCA_oob_tcp_if_include=lo
fail() { echo "FAIL: $*"; exit 1; }

t0=$(date +%s)
mpirun --oversubscribe -np 4 "$bin" compat run --suite cluster --backend cpu -b 8 -e 256KiB -f 4 \
  --reps 3 --pair-bytes 64KiB --passes 2 --record "$work/cluster.rec" >"$work/out" 2>"$work/err" ||
  { rc=$?; cat "$work/out" "$work/err"; fail "mpirun exited $rc"; }
echo "cluster suite, 4 ranks: $(( $(date +%s) - t0 )) s"
grep -q "record written to $work/cluster.rec" "$work/out" || fail "rank 0's table: $(cat "$work/out")"
python3 "$src/tests/harness/validate_schema.py" "$src/docs/schemas/compat-cluster-1.json" \
  "$work/cluster.rec" || fail "the record does not match its schema"
python3 - "$work/cluster.rec" <<'PY' || fail "the record's content is wrong"
import json, sys
r = json.load(open(sys.argv[1]))
assert r["complete"] is True and r["world_size"] == 4, r
assert r["launcher"] == "mpirun" and r["mpi"]["library"].startswith("Open MPI v4"), r["mpi"]
factor = {"all_reduce": 1.5, "all_gather": .75, "reduce_scatter": .75, "alltoall": .75,
          "broadcast": 1, "sendrecv": 1}
seen = set()
for c in r["collectives"]:
    seen.add((c["op"], c["in_place"]))
    assert c["correct"] and c["wrong_values"] == 0, c
    t = c["time_us"]
    assert 0 < t["min"] <= t["avg"] <= t["max"], c
    algbw = c["bytes"] / (t["avg"] * 1e-6) / 1e9
    assert abs(c["algbw_gbps"] - algbw) <= 1e-6 * algbw, c
    assert abs(c["busbw_gbps"] - algbw * factor[c["op"]]) <= 1e-6 * algbw, c
    assert c["busbw_gbps"] > 0 and len(c["rep_us"]) == 3, c
expect = {(o, p) for o in factor for p in (False, True)} - {("broadcast", False), ("sendrecv", True)}
assert seen == expect, seen ^ expect
# 8 B is too small to split over 4 ranks: all_gather starts at 32 B (8 * 4).
assert min(c["bytes"] for c in r["collectives"] if c["op"] == "all_gather") == 32
p = r["pairwise"]
assert p["rounds"] == 3 and len(p["bw_gbps"]) == 4
for a in range(4):
    for b in range(4):
        assert (p["bw_gbps"][a][b] > 0) == (a != b), (a, b, p["bw_gbps"])
        assert (p["latency_us"][a][b] > 0) == (a != b), (a, b, p["latency_us"])
assert p["rule_applied"] is False and "1 node(s)" in p["rule_reason"], p
assert len(r["nodes"]) == 1 and r["nodes"][0]["ranks"] == [0, 1, 2, 3]
assert "fingerprint" in r["nodes"][0]
PY
echo "ok: record valid, every collective correct, busbw = bytes / avg time x factor, matrix 4 x 4"

# --progress json: rank 0 alone writes events (start, progress with the last row as its note,
# end) on stderr, one JSON object a line, and no table rows there.
mpirun --oversubscribe -np 2 "$bin" --progress json compat run --suite cluster --ops all_reduce \
  -b 1KiB -e 4KiB -f 2 --reps 2 --passes 0 --record "$work/events.rec" >"$work/out4" \
  2>"$work/err4" || { rc=$?; cat "$work/out4" "$work/err4"; fail "mpirun --progress json exited $rc"; }
python3 - "$work/err4" <<'PY' || { cat "$work/err4"; fail "the --progress json events"; }
import json, sys
events = [json.loads(l) for l in open(sys.argv[1]) if l.strip()]
kinds = [e["event"] for e in events]
assert kinds[0] == "start" and kinds[-1] == "end" and kinds.count("start") == 1, kinds
assert all(e["task"] == "compat run --suite cluster" for e in events), events
end = events[-1]
assert end["done"] == 6, end  # all_reduce at 1, 2 and 4 KiB, out of place and in place
assert end["ok"] is True and end["unit"] == "rows", end
PY
echo "ok: --progress json gives rank 0's events"

# Ranks that disagree on the options: refused on every rank, exit 2, no hang.
set +e
timeout 120 mpirun --oversubscribe -np 2 "$bin" compat run --suite cluster -e 64 --passes 0 \
  --record "$work/a.rec" : -np 2 "$bin" compat run --suite cluster -e 128 --passes 0 \
  --record "$work/a.rec" >"$work/out2" 2>&1
rc=$?
set -e
[ "$rc" -eq 2 ] || { cat "$work/out2"; fail "disagreeing ranks: exit $rc, want 2"; }
grep -q "rank 2 has other options than rank 0" "$work/out2" || { cat "$work/out2"; fail "message"; }
echo "ok: disagreeing ranks refused with exit 2"

# A rank that dies mid-run: mpirun ends the job; rank 0 rewrote the record after each size, so
# the sizes measured before the death are kept, marked complete: false.
set +e
timeout 120 mpirun --oversubscribe -np 3 "$bin" compat run --suite cluster --ops all_reduce \
  -b 1KiB -e 64KiB -f 2 --passes 0 --record "$work/dead.rec" : -np 1 \
  env CUTOVER_FAILPOINTS=compat.cluster.size_written:after=2:kill "$bin" compat run \
  --suite cluster --ops all_reduce -b 1KiB -e 64KiB -f 2 --passes 0 --record "$work/dead.rec" \
  >"$work/out3" 2>&1
rc=$?
set -e
[ "$rc" -ne 0 ] || { cat "$work/out3"; fail "a killed rank: mpirun exited 0"; }
python3 - "$work/dead.rec" <<'PY' || fail "the record of the killed run is wrong"
import json, sys
r = json.load(open(sys.argv[1]))
assert r["complete"] is False, r["complete"]
sizes = sorted({c["bytes"] for c in r["collectives"]})
assert sizes == [1024, 2048], sizes
assert all(c["correct"] for c in r["collectives"])
PY
echo "ok: a rank killed after 2 sizes: mpirun exit $rc, the record keeps 2 sizes, complete: false"
