#!/bin/sh
# The datasync figures of its issue, side by side with rclone in one run, both talking to the
# same nginx WebDAV server on loopback (started here, stopped on exit), runs interleaved A/B
# after a `sync`, --jobs N for cutover and --transfers N --checkers N for rclone:
#   large    first push of LARGE_MIB in 64 files (cutover push vs rclone copy); then 20 edits of
#            1 MiB at random offsets inside the large files: bytes sent and time of cutover's
#            re-push against a correct rclone re-sync (sync --ignore-times: plain rclone sync
#            against WebDAV compares sizes only and leaves same-size edits unsent); then the
#            same re-push under --bwlimit 100M on both sides
#   small    first push of SMALL_FILES files of 4 KiB (cutover vs rclone; rclone runs once,
#            it needs tens of ms per file); then a re-push with nothing changed, 10,000 files
#   rss      peak RSS of cutover pushing a tree of RSS_FILES small files (file:// store)
#   bench/datasync/issue_figures.sh CUTOVER_BIN [large|small|rss|all] [RUNS]
# Environment: LARGE_MIB (2048), SMALL_FILES (20000), RSS_FILES (1000000), JOBS (8).
# Needs nginx-light, libnginx-mod-http-dav-ext and rclone (a benchmark peer only); the server
# comes from webdav.sh, the trees from tree.py, both beside this script.
set -eu
bin=$(readlink -f "${1:-build/apps/cutover/cutover}")
what=${2:-all}
runs=${3:-3}
large_mib=${LARGE_MIB:-2048}
small_files=${SMALL_FILES:-20000}
rss_files=${RSS_FILES:-1000000}
jobs=${JOBS:-8}
for t in /usr/sbin/nginx rclone python3 /usr/bin/time; do
  command -v "$t" > /dev/null || { echo "missing: $t" >&2; exit 2; }
done
work=$(mktemp -d)
here=$(dirname "$0")
. "$here/webdav.sh"

export CUTOVER_DB="$work/state.db"
export RCLONE_CONFIG_DAV_TYPE=webdav RCLONE_CONFIG_DAV_URL="http://127.0.0.1:$port" RCLONE_CONFIG_DAV_VENDOR=other
rc() { rclone --config /dev/null -q --transfers "$jobs" --checkers "$jobs" "$@"; }
cut() { "$bin" -q "$@"; }
now() { date +%s.%N; }
# Wall seconds of a command (its stdout to $work/out), after a sync so neither pays the other's
# dirty pages.
timed() { sync; t0=$(now); "$@" > "$work/out"; t1=$(now); awk "BEGIN {print $t1 - $t0}"; }
med() { echo "$@" | tr ' ' '\n' | sed '/^$/d' | sort -g | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }
spread() { echo "$@" | tr ' ' '\n' | sed '/^$/d' | sort -g | awk '{a[NR]=$1} END {printf "%.2f-%.2f", a[1], a[NR]}'; }
put_bytes() { awk '$1 == "PUT" {s += $2} END {print s + 0}' "$work/access.log"; }
uploaded() { sed -n 's/.*"uploaded_bytes": *\([0-9]*\).*/\1/p' "$work/out"; }
row() {
  printf '| %s | %.2f s (%s) | %.2f s (%s) | %.2fx |\n' "$1" "$(med $2)" "$(spread $2)" \
    "$(med $3)" "$(spread $3)" "$(awk "BEGIN {print $(med $3) / $(med $2)}")"
}

large() {
  src="$work/large"
  mkdir -p "$src"
  i=0
  while [ $i -lt 64 ]; do head -c $((large_mib * 1024 / 64))K /dev/urandom > "$src/part-$i.bin"; i=$((i + 1)); done
  total=$((large_mib * 1024 * 1024))
  c_init="" r_init="" c_upd="" r_upd="" c_bw="" r_bw="" c_bytes="" r_bytes=""
  r=0
  while [ $r -lt "$runs" ]; do
    # A fresh copy of the dataset each run, so every run edits the same way from the start.
    rm -rf "$work/cur"; cp -a "$src" "$work/cur"
    dav="http://127.0.0.1:$port/c$r"
    c_init="$c_init $(timed cut datasync push "$work/cur" "$dav" --name v1 --jobs "$jobs")"
    r_init="$r_init $(timed rc copy "$work/cur" "dav:r$r")"
    # 20 edits of 1 MiB at seeded random offsets inside the large files (1% of 2 GiB).
    python3 "$here/tree.py" edit "$work/cur" "$r" 20
    c_upd="$c_upd $(timed cut --json datasync push "$work/cur" "$dav" --name v2 --jobs "$jobs")"
    c_bytes="$c_bytes $(uploaded)"
    : > "$work/access.log"
    r_upd="$r_upd $(timed rc sync --ignore-times "$work/cur" "dav:r$r")"
    r_bytes="$r_bytes $(put_bytes)"
    rm -rf "$work/check"; cut datasync pull "$dav" --name v2 "$work/check" --jobs "$jobs" > /dev/null
    diff -r "$work/cur" "$work/check" > /dev/null || { echo "cutover restore differs" >&2; exit 1; }
    # The same edit again under --bwlimit 100M on both sides (another 20 edits).
    python3 "$here/tree.py" edit "$work/cur" "$((r + 50))" 20
    c_bw="$c_bw $(timed cut datasync push "$work/cur" "$dav" --name v3 --jobs "$jobs" --bwlimit 100M)"
    r_bw="$r_bw $(timed rc sync --ignore-times --bwlimit 100M "$work/cur" "dav:r$r")"
    rm -rf "$work/root/c$r" "$work/root/r$r" "$work/check"
    r=$((r + 1))
  done
  echo "### $large_mib MiB in 64 files, --jobs $jobs, median of $runs (range)"
  echo "| step | cutover | rclone | rclone / cutover |"
  echo "|---|---|---|---|"
  row "first push (rclone copy)" "$c_init" "$r_init"
  row "re-push after 20 x 1 MiB edits (rclone sync --ignore-times)" "$c_upd" "$r_upd"
  row "the same under --bwlimit 100M" "$c_bw" "$r_bw"
  cb=$(med $c_bytes); rb=$(med $r_bytes)
  echo
  echo "re-push sent: cutover $cb bytes ($(awk "BEGIN {printf \"%.2f\", 100 * $cb / $total}")% of $total), rclone $rb PUT bytes ($(awk "BEGIN {printf \"%.1f\", 100 * $rb / $total}")%)"
  rm -rf "$src" "$work/cur"
}

small() {
  src="$work/small"
  python3 "$here/tree.py" files "$src" "$small_files" 4096
  c_init="" r_init=""
  r=0
  while [ $r -lt "$runs" ]; do
    c_init="$c_init $(timed cut datasync push "$src" "http://127.0.0.1:$port/s$r" --name v1 --jobs "$jobs")"
    r=$((r + 1))
  done
  r_init="$(timed rc copy "$src" "dav:rs")"
  echo "### $small_files files of 4 KiB, --jobs $jobs (cutover: median of $runs; rclone: 1 run)"
  echo "| step | cutover | rclone | rclone / cutover |"
  echo "|---|---|---|---|"
  row "first push (rclone copy)" "$c_init" "$r_init"
  # Nothing changed, 10,000 files: the files cache answers without reading a file.
  rm -rf "$src"
  python3 "$here/tree.py" files "$src" 10000 4096
  cut datasync push "$src" "http://127.0.0.1:$port/n" --name v1 --jobs "$jobs" > /dev/null
  same=""
  r=0
  while [ $r -lt 5 ]; do
    same="$same $(timed cut datasync push "$src" "http://127.0.0.1:$port/n" --name v1 --jobs "$jobs")"
    r=$((r + 1))
  done
  echo
  echo "re-push of 10,000 unchanged files: median $(med $same) s of 5 ($(spread $same) s)"
  rm -rf "$src"
}

rss() {
  src="$work/many"
  python3 "$here/tree.py" files "$src" "$rss_files" 8
  sync
  /usr/bin/time -f '%M %e' -o "$work/rss" "$bin" -q datasync push "$src" "file://$work/rss-store" --name many --jobs "$jobs" > /dev/null
  read -r kb secs < "$work/rss"
  echo "push of $rss_files small files to file://: peak RSS $((kb / 1024)) MiB, $secs s wall"
  rm -rf "$src" "$work/rss-store"
}

case "$what" in
  large) large ;;
  small) small ;;
  rss) rss ;;
  all) large; echo; small; echo; rss ;;
  *) echo "usage: $0 CUTOVER_BIN [large|small|rss|all] [RUNS]" >&2; exit 2 ;;
esac
