#!/bin/sh
# cutover datasync against rclone, side by side in one run, both talking to the same nginx
# WebDAV server on loopback (started here, stopped on exit):
#   initial upload   datasync push     vs  rclone copy SRC dav:rclone
#   update upload    after 1 MiB of one file and one small file changed
#   download         datasync pull     vs  rclone copy dav:rclone DEST
# rclone's update is timed with --ignore-times: without it rclone misses a change that keeps
# a file's size on a WebDAV server without modtimes (the script checks and says so).
# Each step runs RUNS times on fresh remote paths (the update step on top of a fresh initial
# upload each time); the median wall time of each tool and their ratio are printed, with the
# bytes each sent for the update (cutover from its --json summary, rclone from nginx's log).
#   bench/datasync/vs_rclone.sh [CUTOVER_BIN] [SIZE_MIB] [RUNS] [SMALL_FILES]
# Needs nginx-light and libnginx-mod-http-dav-ext (scripts/install-deps installs them) and
# rclone (apt-get install rclone; a benchmark peer only, not a test dependency).
set -eu
bin=${1:-build/apps/cutover/cutover}
size=${2:-256}
runs=${3:-3}
small=${4:-500}
jobs=8
for t in /usr/sbin/nginx rclone; do command -v "$t" > /dev/null || { echo "missing: $t" >&2; exit 2; }; done
work=$(mktemp -d)
mkdir -p "$work/src"
[ "$small" -eq 0 ] || mkdir "$work/src/small"  # rclone copies no empty directory
. "$(dirname "$0")/webdav.sh"

# The dataset: 8 large files and $small small ones (4-20 KiB).
i=0
while [ $i -lt 8 ]; do head -c $((size / 8))M /dev/urandom > "$work/src/part-$i.bin"; i=$((i + 1)); done
i=0
while [ $i -lt "$small" ]; do head -c $((4096 + (i * 331) % 16384)) /dev/urandom > "$work/src/small/s$i"; i=$((i + 1)); done
change() {
  dd if=/dev/urandom of="$work/src/part-3.bin" bs=1M count=1 seek=$((size / 16)) conv=notrunc 2> /dev/null
  [ "$small" -le 7 ] || head -c 5000 /dev/urandom > "$work/src/small/s7"
}

export CUTOVER_DB="$work/state.db"
export RCLONE_CONFIG_DAV_TYPE=webdav RCLONE_CONFIG_DAV_URL="http://127.0.0.1:$port" RCLONE_CONFIG_DAV_VENDOR=other
rc() { rclone --config /dev/null -q --transfers $jobs --checkers $jobs "$@"; }
cut() { "$bin" -q "$@"; }
now() { date +%s.%N; }
timed() { t0=$(now); "$@" > "$work/out"; t1=$(now); awk "BEGIN {print $t1 - $t0}"; }
med() { echo "$@" | tr ' ' '\n' | sort -g | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }
put_bytes() { awk '$1 == "PUT" {s += $2} END {print s + 0}' "$work/access.log"; }

c_init="" r_init="" c_upd="" r_upd="" c_get="" r_get="" c_upd_bytes=0 r_upd_bytes=0 r_default=""
r=0
while [ $r -lt "$runs" ]; do
  dav="http://127.0.0.1:$port/cut$r"
  c_init="$c_init $(timed cut datasync push "$work/src" "$dav" --name v1 --jobs $jobs)"
  r_init="$r_init $(timed rc copy "$work/src" "dav:rclone$r")"
  change
  : > "$work/access.log"
  c_upd="$c_upd $(timed cut --json datasync push "$work/src" "$dav" --name v2 --jobs $jobs)"
  c_upd_bytes=$(sed -n 's/.*"uploaded_bytes": *\([0-9]*\).*/\1/p' "$work/out")
  # Plain WebDAV keeps no modification times, so rclone's default check (size, and modtime
  # where the remote has one) misses a same-size change: see whether it did, then measure the
  # update that is correct, --ignore-times (every file sent again).
  if [ $r -eq 0 ]; then
    rc copy "$work/src" "dav:rclone$r"
    rm -rf "$work/probe"; rc copy "dav:rclone$r" "$work/probe"
    if diff -r "$work/src" "$work/probe" > /dev/null; then r_default="carried the change"
    else r_default="MISSED the same-size change (restore differs)"; fi
  fi
  : > "$work/access.log"
  r_upd="$r_upd $(timed rc copy --ignore-times "$work/src" "dav:rclone$r")"
  r_upd_bytes=$(put_bytes)
  rm -rf "$work/dest-c" "$work/dest-r"
  c_get="$c_get $(timed cut datasync pull "$dav" --name v2 "$work/dest-c" --jobs $jobs)"
  r_get="$r_get $(timed rc copy "dav:rclone$r" "$work/dest-r")"
  diff -r "$work/src" "$work/dest-c" > /dev/null || { echo "cutover restore differs" >&2; exit 1; }
  diff -r "$work/src" "$work/dest-r" > /dev/null || { echo "rclone restore differs" >&2; exit 1; }
  r=$((r + 1))
done
row() { printf '%-16s %8.2f s %8.2f s %7.2fx\n' "$1" "$(med $2)" "$(med $3)" "$(awk "BEGIN {print $(med $3) / $(med $2)}")"; }
echo "dataset: $size MiB in 8 files + $small small files; WebDAV (nginx) on loopback; --jobs/--transfers $jobs; median of $runs"
printf '%-16s %10s %10s %8s\n' step cutover rclone "rclone/cutover"
row "initial upload" "$c_init" "$r_init"
row "update upload" "$c_upd" "$r_upd"
row "download" "$c_get" "$r_get"
echo "update sent: cutover $c_upd_bytes bytes, rclone --ignore-times $r_upd_bytes bytes (PUT request bytes)"
echo "rclone copy with default flags: $r_default"
