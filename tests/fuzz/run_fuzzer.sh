#!/bin/sh
# run_fuzzer.sh BINARY CORPUS_DIR WORK_DIR SECONDS
# Runs one libFuzzer target for SECONDS on a copy of its seed corpus (the committed corpus is
# never written to), then prints its executions per second. Exits 1 when the fuzzer found a crash,
# naming the input to keep in the corpus once fixed.
set -eu
bin=$1 src=$2 work=$3 secs=$4
name=$(basename "$bin")
rm -rf "$work"
mkdir -p "$work/corpus" "$work/artifacts"
if [ -d "$src" ]; then
  find "$src" -maxdepth 1 -type f -exec cp {} "$work/corpus/" \;
fi
log="$work/fuzz.log"
rc=0
"$bin" -max_total_time="$secs" -timeout=10 -print_final_stats=1 \
  -artifact_prefix="$work/artifacts/" "$work/corpus" >"$log" 2>&1 || rc=$?
runs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -n 1)
rate=$(sed -n 's/^stat::average_exec_per_sec: *//p' "$log" | tail -n 1)
files=$(find "$work/corpus" -type f | wc -l)
grep '^Done ' "$log" || true
echo "$name: ${rate:-?} exec/s (${runs:-?} runs in ${secs} s), corpus now $files files"
if [ "$rc" -ne 0 ]; then
  tail -n 40 "$log"
  echo "$name: FAILED (exit $rc); crash inputs in $work/artifacts:" >&2
  ls "$work/artifacts" >&2
  echo "fix the bug, then copy the input into $src/ so every build replays it" >&2
  exit 1
fi
