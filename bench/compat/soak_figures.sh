#!/usr/bin/env bash
# The soak figures of docs/benchmarks.md: two soaks of the same cases on one host, each soak's own
# overhead (wall time minus the timed repetitions minus the planned idle between rounds; target
# below 5% of the soak), the spread each showed, and `compat compare`'s stability verdict of the
# pair (on a quiet host: "same").
#
#   bench/compat/soak_figures.sh BUILD_DIR [DURATION] [OPS]     (defaults: 60s, softmax,reduce_max,gemm)
set -euo pipefail
[[ $# -ge 1 ]] || { echo "usage: $0 BUILD_DIR [DURATION] [OPS]" >&2; exit 2; }
bin=$1/apps/cutover/cutover
duration=${2:-60s}
ops=${3:-softmax,reduce_max,gemm}
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
for k in 1 2; do
  "$bin" --quiet compat run --ops "$ops" --threads 1 --soak "$duration" --record "$dir/soak$k.rec" \
    --json >"$dir/soak$k.json"
  python3 - "$dir/soak$k.json" "$k" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
print("soak %s: %d rounds, wall %.2f s, timed %.2f s, planned idle %.2f s, overhead %.3f s = %.2f%% of the wall time"
      % (sys.argv[2], d["rounds"], d["wall_s"], d["timed_s"], d["idle_s"], d["overhead_s"], 100 * d["overhead_share"]))
PY
done
"$bin" compat compare "$dir/soak1.rec" "$dir/soak2.rec" --json >"$dir/cmp.json" || true
python3 - "$dir/cmp.json" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
print("stability verdict of the pair: %s" % d["summary"]["stability"])
print("| case | reps a side | CV soak 1 | CV soak 2 | p99/p50 soak 1 | p99/p50 soak 2 | verdict |")
print("|---|---|---|---|---|---|---|")
for c in d["cases"]:
    s = c["stability"]
    if s["source"]["reps"] == 0:
        continue
    t1 = s["source"]["p99_s"] / s["source"]["p50_s"] if s["source"]["p99_s"] else float("nan")
    t2 = s["target"]["p99_s"] / s["target"]["p50_s"] if s["target"]["p99_s"] else float("nan")
    print("| %s | %d | %.2f%% | %.2f%% | %.3f | %.3f | %s |" % (c["id"], s["source"]["reps"], 100 * s["source"]["cv"],
          100 * s["target"]["cv"], t1, t2, s["verdict"]))
PY
