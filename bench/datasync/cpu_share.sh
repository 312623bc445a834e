#!/bin/sh
# Where the CPU goes in a first push: user+sys seconds of the client (cutover push or rclone
# copy) and of nginx (the WebDAV server, same machine) for LARGE_MIB in 64 files, runs
# interleaved after a `sync`, each into an empty store. On a machine where client and server
# share the cores, wall time follows their sum.
#   bench/datasync/cpu_share.sh CUTOVER_BIN [RUNS]
# Environment: LARGE_MIB (2048), JOBS (8). Needs nginx-light, libnginx-mod-http-dav-ext, rclone.
set -eu
bin=$(readlink -f "${1:-build/apps/cutover/cutover}")
runs=${2:-3}
large_mib=${LARGE_MIB:-2048}
jobs=${JOBS:-8}
work=$(mktemp -d)
here=$(dirname "$0")
. "$here/webdav.sh"
export CUTOVER_DB="$work/state.db"
export RCLONE_CONFIG_DAV_TYPE=webdav RCLONE_CONFIG_DAV_URL="http://127.0.0.1:$port" RCLONE_CONFIG_DAV_VENDOR=other
mkdir -p "$work/large"
i=0
while [ $i -lt 64 ]; do head -c $((large_mib * 1024 / 64))K /dev/urandom > "$work/large/part-$i.bin"; i=$((i + 1)); done
# CPU seconds nginx (master and workers) has used so far.
nginx_cpu() {
  for p in $nginx_pid $(pgrep -P "$nginx_pid"); do cat "/proc/$p/stat"; done |
    awk -v hz="$(getconf CLK_TCK)" '{s += $14 + $15} END {printf "%.2f", s / hz}'
}
# Runs a command; prints "wall client_cpu nginx_cpu".
measure() {
  sync
  a=$(nginx_cpu)
  /usr/bin/time -f "%e %U %S" -o "$work/time" "$@" > /dev/null
  b=$(nginx_cpu)
  awk -v a="$a" -v b="$b" '{printf "%.2f %.2f %.2f\n", $1, $2 + $3, b - a}' "$work/time"
}
echo "| run | tool | wall s | client CPU s | nginx CPU s | total CPU s |"
echo "|---|---|---|---|---|---|"
r=0
while [ $r -lt "$runs" ]; do
  set -- $(measure "$bin" -q datasync push "$work/large" "http://127.0.0.1:$port/c$r" --name v1 --jobs "$jobs")
  echo "| $r | cutover push | $1 | $2 | $3 | $(awk "BEGIN {print $2 + $3}") |"
  set -- $(measure rclone --config /dev/null -q --transfers "$jobs" --checkers "$jobs" copy "$work/large" "dav:r$r")
  echo "| $r | rclone copy | $1 | $2 | $3 | $(awk "BEGIN {print $2 + $3}") |"
  rm -rf "$work/root/c$r" "$work/root/r$r"
  r=$((r + 1))
done
