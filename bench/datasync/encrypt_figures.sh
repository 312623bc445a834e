#!/bin/sh
# Push and pull of a 256 MiB tree to a file:// store, plain and with --encrypt, N times each
# (alternating, so load drifts hit both alike); prints every time and the median and range.
#   sh bench/datasync/encrypt_figures.sh CUTOVER_BIN [N]
# The tree: 15 random files of 16 MiB (chunked) and 4096 random files of 4 KiB (packed).
# Every push goes to an empty store with an empty state file, every pull into an empty DEST.
set -eu
BIN=$(realpath "$1")
N=${2:-3}
W=$(mktemp -d "${TMPDIR:-/tmp}/cutover-enc-bench.XXXXXX")
trap 'rm -rf "$W"' EXIT
mkdir -p "$W/src/small"
i=0
while [ $i -lt 15 ]; do head -c 16777216 /dev/urandom > "$W/src/big$i"; i=$((i + 1)); done
head -c 16777216 /dev/urandom | split -b 4096 -a 4 - "$W/src/small/f"
head -c 32 /dev/urandom > "$W/key"
chmod 600 "$W/key"
echo "tree: $(du -sb "$W/src" | cut -f1) bytes in $(find "$W/src" -type f | wc -l) files"

now() { date +%s.%N; }
run() {  # run MODE I: one push and one pull; appends "push_s pull_s" to $W/MODE
  mode=$1
  flag=""
  [ "$mode" = encrypt ] && flag="--encrypt $W/key"
  rm -rf "$W/store" "$W/dest" "$W/db"
  t0=$(now)
  CUTOVER_DB="$W/db" "$BIN" datasync push "$W/src" "file://$W/store" --name s $flag > /dev/null
  t1=$(now)
  CUTOVER_DB="$W/db" "$BIN" datasync pull "file://$W/store" --name s "$W/dest" $flag > /dev/null
  t2=$(now)
  diff -r "$W/src" "$W/dest" > /dev/null
  echo "$(echo "$t1 - $t0" | bc) $(echo "$t2 - $t1" | bc)" >> "$W/$mode"
}
i=0
while [ $i -lt "$N" ]; do run plain; run encrypt; i=$((i + 1)); done
for mode in plain encrypt; do
  for col in 1 2; do
    what=push; [ $col = 2 ] && what=pull
    cut -d' ' -f$col "$W/$mode" | sort -n | awk -v m="$mode" -v w="$what" '
      { v[NR] = $1 } END { printf "%-8s %s: median %.2f s (%.2f-%.2f), runs:", m, w, v[int((NR + 1) / 2)], v[1], v[NR];
        for (i = 1; i <= NR; i++) printf " %.2f", v[i]; printf "\n" }'
  done
done
