#!/bin/sh
# Two cutover binaries pushing the same dataset, side by side in one run: each run pushes to a
# fresh file:// store (so every chunk is sent), A and B interleaved, after a `sync`. Prints the
# median wall and CPU (user + sys) seconds of each and their ratio. The dataset stays in the page
# cache after the first read, so the figure is the client's chunk, hash and write work.
#   bench/datasync/push_ab.sh BIN_A BIN_B [SIZE_MIB] [FILES] [RUNS]
set -eu
a=$1
b=$2
size=${3:-512}
files=${4:-16}
runs=${5:-5}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
mkdir -p "$work/src"
per=$((size / files))
i=0
while [ "$i" -lt "$files" ]; do
  head -c "$((per * 1048576))" /dev/urandom > "$work/src/f$i.bin"
  i=$((i + 1))
done
cat "$work/src"/* > /dev/null

# run BIN TAG N: one push into a fresh store; appends "wall cpu" to $work/TAG.
run() {
  rm -rf "$work/store"
  sync
  /usr/bin/time -f '%e %U %S' -o "$work/t" "$1" --db "$work/$2.db" -q datasync push \
    "$work/src" "file://$work/store" --name s --jobs 2 > /dev/null
  rm -f "$work/$2.db"
  awk '{ printf "%s %.2f\n", $1, $2 + $3 }' "$work/t" >> "$work/$2"
}

n=0
while [ "$n" -lt "$runs" ]; do
  run "$a" A
  run "$b" B
  n=$((n + 1))
done

. "$(dirname "$0")/../lib/stats.sh"
echo "push of $size MiB in $files files, file:// store, --jobs 2, $runs runs each, interleaved"
for tag in A B; do
  echo "$tag: wall $(median_of "$work/$tag" 1) s ($(range_of "$work/$tag" 1)), cpu $(median_of "$work/$tag" 2) s ($(range_of "$work/$tag" 2))"
done
echo "B/A: wall $(ratio_of "$(median_of "$work/B" 1)" "$(median_of "$work/A" 1)")x, cpu $(ratio_of "$(median_of "$work/B" 2)" "$(median_of "$work/A" 2)")x (below 1: B is faster)"
