#!/bin/sh
# Two cutover binaries pushing a tree of small files into a fresh file:// store, side by side in
# one run (A and B interleaved, after a `sync`): the walk, the files' reads and the packing, not
# the network. Prints the median wall seconds of each, their range and the ratio.
#   bench/datasync/smallpush_ab.sh BIN_A BIN_B [FILES] [RUNS]
# Defaults: 20,000 files of 4 KiB in nested directories, 5 runs.
set -eu
a=$(readlink -f "$1")
b=$(readlink -f "$2")
files=${3:-20000}
runs=${4:-5}
here=$(dirname "$0")
. "$here/../lib/stats.sh"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
python3 "$here/tree.py" files "$work/src" "$files" 4096
now() { date +%s.%N; }
push() {  # push BIN TAG: appends the wall seconds to $work/TAG
  rm -rf "$work/store"
  sync
  t0=$(now)
  "$1" -q --db "$work/$2.db" datasync push "$work/src" "file://$work/store" --name s > /dev/null
  t1=$(now)
  rm -f "$work/$2.db"
  awk "BEGIN {print $t1 - $t0}" >> "$work/$2"
}
push "$a" A && rm "$work/A"  # warm the page cache
n=0
while [ "$n" -lt "$runs" ]; do
  push "$a" A
  push "$b" B
  n=$((n + 1))
done
echo "fresh push of $files files of 4 KiB to a file:// store, $runs runs each, interleaved"
for tag in A B; do
  echo "$tag: $(median_of "$work/$tag") s ($(range_of "$work/$tag"))"
done
echo "B/A: $(ratio_of "$(median_of "$work/B")" "$(median_of "$work/A")")x (below 1: B is faster)"
