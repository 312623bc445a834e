#!/bin/sh
# Two cutover binaries re-pushing an unchanged tree of small files to the same nginx WebDAV
# server on loopback, side by side in one run: each binary pushes the tree once to its own store
# (with its own state file, so its files cache is warm), then re-pushes it RUNS times, A and B
# interleaved after a `sync`. Prints the median wall seconds of each, their range and the ratio.
#   bench/datasync/repush_ab.sh BIN_A BIN_B [FILES] [RUNS]
# Defaults: 10,000 files of 4 KiB, 5 runs. Needs nginx-light and libnginx-mod-http-dav-ext.
set -eu
a=$(readlink -f "$1")
b=$(readlink -f "$2")
files=${3:-10000}
runs=${4:-5}
work=$(mktemp -d)
here=$(dirname "$0")
. "$here/webdav.sh"
python3 "$here/tree.py" files "$work/src" "$files" 4096
now() { date +%s.%N; }
push() {  # push BIN TAG: appends the wall seconds to $work/TAG
  sync
  t0=$(now)
  "$1" -q --db "$work/$2.db" datasync push "$work/src" "http://127.0.0.1:$port/$2" --name s \
    > /dev/null
  t1=$(now)
  awk "BEGIN {print $t1 - $t0}" >> "$work/$2"
}
push "$a" A && rm "$work/A"
push "$b" B && rm "$work/B"
n=0
while [ "$n" -lt "$runs" ]; do
  push "$a" A
  push "$b" B
  n=$((n + 1))
done
median() { sort -g "$1" | awk '{ v[NR] = $1 } END { print v[int((NR + 1) / 2)] }'; }
spread() { sort -g "$1" | awk 'NR == 1 { lo = $1 } { hi = $1 } END { printf "%.2f-%.2f", lo, hi }'; }
echo "re-push of $files unchanged files of 4 KiB to WebDAV (nginx), $runs runs each, interleaved"
for tag in A B; do
  echo "$tag: $(median "$work/$tag") s ($(spread "$work/$tag"))"
done
echo "B/A: $(echo "$(median "$work/B") $(median "$work/A")" | awk '{ printf "%.2f", $1 / $2 }')x (below 1: B is faster)"
