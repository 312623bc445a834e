#!/bin/sh
# The latency `cutover canary mirror` adds on the client's path. One nginx (Debian's nginx-light)
# serves a static JSON file on three loopback ports (primary, secondary, candidate); hey sends a
# fixed rate to the primary directly and through the mirror, interleaved A/B (the order flips each
# round), and the script prints p50 and p99 of each run and the p99 the mirror adds (median of the
# rounds). The mirror's own report at the end says how many copies it compared and dropped.
#   bench/canary/mirror_latency.sh CUTOVER_BIN [ROUNDS] [SECONDS] [CONNECTIONS] [QPS_PER_CONN]
# Defaults: 5 rounds of `hey -z 10s -c 10 -q 100` (1,000 requests/s). MIRROR_FLAGS adds flags to
# the mirror (MIRROR_FLAGS='--methods POST' proxies the GETs without copying them).
set -eu
bin=$1
rounds=${2:-5}
secs=${3:-10}
conns=${4:-10}
qps=${5:-100}
PATH="$PATH:/usr/sbin"
for tool in nginx hey curl python3; do
  if ! command -v "$tool" > /dev/null 2>&1; then
    echo "mirror_latency: $tool not found (scripts/install-deps installs it)" >&2
    exit 3
  fi
done

work=$(mktemp -d)
nginx_pid="" mirror_pid=""
cleanup() {
  [ -n "$mirror_pid" ] && kill "$mirror_pid" 2>/dev/null || true
  [ -n "$nginx_pid" ] && kill "$nginx_pid" 2>/dev/null || true
  wait 2>/dev/null || true
  rm -rf "$work"
}
trap cleanup EXIT

# Free loopback ports, picked by the kernel.
ports=$(python3 -c '
import socket
ss = [socket.socket() for _ in range(4)]
for s in ss: s.bind(("127.0.0.1", 0))
print(" ".join(str(s.getsockname()[1]) for s in ss))')
set -- $ports
p1=$1 p2=$2 p3=$3 pm=$4

mkdir -p "$work/www" "$work/temp"
# An inference-like answer, about 300 bytes.
cat > "$work/www/infer.json" <<'EOF'
{"id":"cmpl-8f14e45f","object":"text_completion","model":"resnet-50","choices":[{"index":0,"label":"tabby cat","score":0.7853981633974483,"logprobs":[-0.2416,-1.9861,-3.0021]}],"usage":{"prompt_tokens":1,"completion_tokens":3,"total_tokens":4},"timing":{"queue_ms":0.4,"infer_ms":3.1}}
EOF
user=""
[ "$(id -u)" -eq 0 ] && user="user root;"
cat > "$work/nginx.conf" <<EOF
$user
worker_processes 1;
daemon off;
pid $work/nginx.pid;
error_log $work/error.log warn;
events { worker_connections 4096; }
http {
  access_log off;
  client_body_temp_path $work/temp/body;
  proxy_temp_path $work/temp/proxy;
  fastcgi_temp_path $work/temp/fastcgi;
  uwsgi_temp_path $work/temp/uwsgi;
  scgi_temp_path $work/temp/scgi;
  keepalive_requests 1000000;
  default_type application/json;
  server { listen 127.0.0.1:$p1; root $work/www; }
  server { listen 127.0.0.1:$p2; root $work/www; }
  server { listen 127.0.0.1:$p3; root $work/www; }
}
EOF
nginx -p "$work" -c "$work/nginx.conf" -e "$work/error.log" &
nginx_pid=$!
# wait_for URL: until it answers (10 s at most).
wait_for() {
  i=0
  until curl -sf "$1" > /dev/null; do
    i=$((i + 1))
    if [ "$i" -gt 100 ]; then cat "$work/error.log" "$work/mirror.err" >&2 2>/dev/null; exit 3; fi
    sleep 0.1
  done
}
for p in $p1 $p2 $p3; do wait_for "http://127.0.0.1:$p/infer.json"; done
"$bin" canary mirror --listen "127.0.0.1:$pm" --primary "http://127.0.0.1:$p1" \
  --secondary "http://127.0.0.1:$p2" --candidate "http://127.0.0.1:$p3" ${MIRROR_FLAGS:-} \
  > "$work/mirror.out" 2> "$work/mirror.err" &
mirror_pid=$!
wait_for "http://127.0.0.1:$pm/infer.json"

# run URL: one hey run; prints "p50_ms p99_ms".
run() {
  hey -z "${secs}s" -c "$conns" -q "$qps" "$1" > "$work/hey.out"
  awk '/ 50% in / {p50 = $3 * 1000} / 99% in / {p99 = $3 * 1000}
       END {printf "%.2f %.2f\n", p50, p99}' "$work/hey.out"
}

direct="http://127.0.0.1:$p1/infer.json"
mirror="http://127.0.0.1:$pm/infer.json"
echo "hey -z ${secs}s -c $conns -q $qps (= $((conns * qps)) requests/s), $rounds rounds, A/B interleaved"
printf '%-6s %-12s %-12s %-12s %-12s %s\n' round direct_p50 direct_p99 mirror_p50 mirror_p99 added_p99
r=1
: > "$work/added"
: > "$work/cols"
while [ "$r" -le "$rounds" ]; do
  if [ $((r % 2)) -eq 1 ]; then
    d=$(run "$direct"); m=$(run "$mirror")
  else
    m=$(run "$mirror"); d=$(run "$direct")
  fi
  set -- $d $m
  added=$(awk -v a="$4" -v b="$2" 'BEGIN {printf "%.2f", a - b}')
  echo "$added" >> "$work/added"
  echo "$1 $2 $3 $4" >> "$work/cols"
  printf '%-6s %-12s %-12s %-12s %-12s %s\n' "$r" "$1 ms" "$2 ms" "$3 ms" "$4 ms" "$added ms"
  r=$((r + 1))
done
# median FILE COLUMN
median() {
  awk -v c="$2" '{print $c}' "$1" | sort -n |
    awk '{v[NR] = $1} END {printf "%.2f", (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2}'
}
printf '%-6s %-12s %-12s %-12s %-12s %s\n' median "$(median "$work/cols" 1) ms" \
  "$(median "$work/cols" 2) ms" "$(median "$work/cols" 3) ms" "$(median "$work/cols" 4) ms" \
  "$(median "$work/added" 1) ms"
kill -TERM "$mirror_pid"
wait "$mirror_pid" || true
mirror_pid=""
sed -n '1,3p' "$work/mirror.out"
