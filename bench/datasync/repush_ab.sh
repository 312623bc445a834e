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
. "$here/../lib/stats.sh"
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
echo "re-push of $files unchanged files of 4 KiB to WebDAV (nginx), $runs runs each, interleaved"
for tag in A B; do
  echo "$tag: $(median_of "$work/$tag") s ($(range_of "$work/$tag"))"
done
echo "B/A: $(ratio_of "$(median_of "$work/B")" "$(median_of "$work/A")")x (below 1: B is faster)"
