#!/bin/sh
# Re-pull after a small change: a fresh pull of a dataset against a re-pull into the restored
# tree after 1 MiB of one file changed, over a file:// store (so the figure is the client's work,
# not a network's). Prints the median of RUNS runs of each with min and max, and the bytes each
# downloaded.
#   bench/datasync/repull.sh [CUTOVER_BIN] [SIZE_MIB] [RUNS]
set -eu
bin=${1:-build/apps/cutover/cutover}
size=${2:-512}
runs=${3:-5}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
mkdir -p "$work/src"
i=0
while [ $i -lt 8 ]; do
  head -c $((size / 8))M /dev/urandom > "$work/src/part-$i.bin"
  i=$((i + 1))
done
export CUTOVER_DB="$work/state.db"
"$bin" -q datasync push "$work/src" "file://$work/store" --name v1 > /dev/null
# Version 2: 1 MiB rewritten in the middle of one file.
dd if=/dev/urandom of="$work/src/part-3.bin" bs=1M count=1 seek=$((size / 16)) conv=notrunc 2> /dev/null
"$bin" -q datasync push "$work/src" "file://$work/store" --name v2 > /dev/null

now() { date +%s.%N; }
median() { sort -g | awk '{a[NR]=$1} END {printf "%.3f s (min %.3f, max %.3f)", a[int((NR+1)/2)], a[1], a[NR]}'; }
fresh="" repull="" fresh_dl="" repull_dl=""
r=0
while [ $r -lt "$runs" ]; do
  rm -rf "$work/dest"
  t0=$(now)
  fresh_dl=$("$bin" -q --json datasync pull "file://$work/store" --name v2 "$work/dest" | sed -n 's/.*"downloaded_bytes": *\([0-9]*\).*/\1/p')
  t1=$(now)
  fresh="$fresh $(awk "BEGIN {print $t1 - $t0}")"
  # Back to version 1, then the re-pull of version 2 over it.
  "$bin" -q datasync pull "file://$work/store" --name v1 "$work/dest" > /dev/null
  sync
  t0=$(now)
  repull_dl=$("$bin" -q --json datasync pull "file://$work/store" --name v2 "$work/dest" | sed -n 's/.*"downloaded_bytes": *\([0-9]*\).*/\1/p')
  t1=$(now)
  repull="$repull $(awk "BEGIN {print $t1 - $t0}")"
  r=$((r + 1))
done
echo "dataset: $size MiB in 8 files, 1 MiB changed, $runs runs"
echo "fresh pull:  $(echo $fresh | tr ' ' '\n' | median), downloaded $fresh_dl bytes"
echo "re-pull:     $(echo $repull | tr ' ' '\n' | median), downloaded $repull_dl bytes"
