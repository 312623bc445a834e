#!/usr/bin/env bash
# probe fleet on 10,000 fingerprints of about 20 KB (8 GPUs, 60 libraries each, 10 outliers):
# median wall time of RUNS runs with its spread, and peak memory. Issue 3's goal: under 3 s on
# 2 cores and under 500 MB.
# Usage: bench/probe/fleet.sh [BUILD_DIR] [HOSTS] [RUNS]
set -euo pipefail
here="$(cd "$(dirname "$0")/../.." && pwd)"
build="${1:-$here/build}"
hosts="${2:-10000}"
runs="${3:-5}"
bin="$build/apps/cutover/cutover"
work="${TMPDIR:-/tmp}/cutover-fleet-bench-$hosts"
if [ ! -f "$work/.done" ]; then
  rm -rf "$work"
  mkdir -p "$work"
  "$bin" probe collect --root "$here/tests/fixtures/hosts/h100-cuda12.4" --out "$work/base.json" >/dev/null
  python3 "$here/bench/probe/make_fleet.py" "$work/base.json" "$work/hosts" "$hosts" >/dev/null
  touch "$work/.done"
fi
echo "fleet: $hosts files, $(du -sm "$work/hosts" | cut -f1) MB, $(nproc) cores"
times=()
for i in $(seq "$runs"); do
  sync
  out="$( { /usr/bin/time -f '%e %M' "$bin" probe fleet "$work/hosts" >/dev/null; } 2>&1 | tail -1)" || true
  times+=("${out% *}")
  rss_kb="${out#* }"
done
sorted="$(printf '%s\n' "${times[@]}" | sort -n)"
median="$(echo "$sorted" | awk -v n="$runs" 'NR == int((n + 1) / 2)')"
echo "probe fleet: median ${median} s of $runs runs (min $(echo "$sorted" | head -1), max $(echo "$sorted" | tail -1)); peak RSS $((rss_kb / 1024)) MB"
