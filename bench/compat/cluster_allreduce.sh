#!/usr/bin/env bash
# Our cluster suite's MPI_Allreduce bus bandwidth beside a plain C loop timing MPI_Allreduce of the
# same size under the same mpirun (bench/compat/mpi_allreduce_loop.c), alternating ROUNDS times.
# Usage: bench/compat/cluster_allreduce.sh BUILD_DIR [RANKS=4] [BYTES=16777216] [ROUNDS=5]
set -euo pipefail
build="$1"; ranks="${2:-4}"; bytes="${3:-16777216}"; rounds="${4:-5}"
here="$(cd "$(dirname "$0")" && pwd)"
work="$(mktemp -d)"; trap 'rm -rf "$work"' EXIT
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_btl=tcp,self
export OMPI_MCA_btl_tcp_if_include=lo OMPI_MCA_oob_tcp_if_include=lo
mpicc -O2 -o "$work/loop" "$here/mpi_allreduce_loop.c"
ours=(); theirs=()
for r in $(seq 1 "$rounds"); do
  mpirun --oversubscribe -np "$ranks" "$build/apps/cutover/cutover" -q compat run --suite cluster \
    --ops all_reduce -b "$bytes" -e "$bytes" --warmup 2 --reps 20 --passes 0 \
    --record "$work/c.rec" >/dev/null
  ours+=("$(python3 -c 'import json,sys; r=json.load(open(sys.argv[1]));
print(next(c["busbw_gbps"] for c in r["collectives"] if not c["in_place"]))' "$work/c.rec")")
  theirs+=("$(mpirun --oversubscribe -np "$ranks" "$work/loop" "$bytes" 2 20 |
              sed -n 's/.*busbw \([0-9.]*\) GB\/s/\1/p')")
done
python3 - "${ours[*]}" "${theirs[*]}" "$ranks" "$bytes" <<'PY'
import statistics, sys
ours = [float(x) for x in sys.argv[1].split()]
theirs = [float(x) for x in sys.argv[2].split()]
o, t = statistics.median(ours), statistics.median(theirs)
print(f"{sys.argv[3]} ranks, {int(sys.argv[4])} B all_reduce busbw GB/s, median of {len(ours)} alternating runs")
print(f"  cutover cluster suite : {o:.3f}  (runs: {', '.join(f'{x:.3f}' for x in ours)})")
print(f"  plain MPI_Allreduce   : {t:.3f}  (runs: {', '.join(f'{x:.3f}' for x in theirs)})")
print(f"  ratio ours / plain    : {o / t:.3f}")
PY
