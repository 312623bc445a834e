#!/usr/bin/env bash
# A cluster made by the test itself: 4 network namespaces (the nodes, each with its own host
# name through `unshare --uts`) joined by veth pairs to a bridge that lives in a fifth namespace,
# so the root namespace is untouched. mpirun starts inside node1 and reaches the others through
# an rsh agent that enters their namespaces. The cluster suite runs twice: unshaped, then with
# node4's link limited by tc tbf in both directions. The shaped run must name node4 and only it,
# the unshaped run no node, and all_reduce bus bandwidth must drop.
# Usage: cluster_netns_itest.sh BUILD_DIR SOURCE_DIR. Exit 77 (skip) when not root, without
# mpirun, the MPI plugin, network namespaces or tbf. Everything is removed on exit.
set -euo pipefail
build="$1"; src="$2"
bin="$build/apps/cutover/cutover"
skip() { echo "SKIP: $*"; exit 77; }
fail() { echo "FAIL: $*"; exit 1; }
[ "$(id -u)" -eq 0 ] || skip "needs root (network namespaces)"
command -v mpirun >/dev/null || skip "mpirun not installed (openmpi-bin)"
for t in ip tc nsenter unshare; do command -v "$t" >/dev/null || skip "$t not installed"; done
[ -e "$build/apps/cutover/libcutover_compat_mpi.so" ] || skip "MPI plugin not built"

prefix="cutover-c$$"
nodes=4
work="$(mktemp -d)"
. "$src/tests/compat/netns_nodes.sh"
cleanup() {
  netns_cleanup
  rm -rf "$work"
}
trap cleanup EXIT
trap 'exit 1' INT TERM
netns_make_nodes || skip "cannot create a network namespace"

export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_btl=tcp,self
export OMPI_MCA_plm_rsh_agent="$work/agent"
export OMPI_MCA_btl_tcp_if_include=10.211.0.0/24 OMPI_MCA_oob_tcp_if_include=10.211.0.0/24

# run NAME: the suite from node1, record in $work/NAME.rec.
run() {
  local t0; t0=$(date +%s%N)
  in_node 1 "exec timeout 240 \
    mpirun --hostfile $work/hosts -np $nodes --map-by node $bin compat run --suite cluster \
    --backend cpu --ops all_reduce -b 1MiB -e 4MiB -f 4 --warmup 1 --reps 3 --pair-bytes 4MiB --pair-reps 2 \
    --passes 3 --fabric netns-veth --record $work/$1.rec" >"$work/$1.out" 2>&1 ||
    { cat "$work/$1.out"; fail "the $1 run failed"; }
  echo "$1 run: $(( ($(date +%s%N) - t0) / 1000000 )) ms to a verdict"
}

run unshaped
# node4 at 50 Mbit/s both ways: its egress on eth0, its ingress on the bridge port.
tc -n "$prefix-n4" qdisc add dev eth0 root tbf rate 50mbit burst 64kb latency 100ms ||
  skip "tc tbf not available in this kernel"
tc -n "$prefix-br" qdisc add dev v4 root tbf rate 50mbit burst 64kb latency 100ms
run shaped

python3 - "$work/unshaped.rec" "$work/shaped.rec" <<'PY' || fail "verdicts wrong (records above)"
import json, sys
a, b = (json.load(open(p)) for p in sys.argv[1:3])
for r in (a, b):
    assert r["complete"] and sorted(n["name"] for n in r["nodes"]) == ["node1", "node2", "node3", "node4"], r["nodes"]
    assert all(c["correct"] for c in r["collectives"])
    assert r["pairwise"]["rule_applied"], r["pairwise"]["rule_reason"]
pa, pb = a["pairwise"], b["pairwise"]
print("unshaped node medians GB/s:", pa["node_median_gbps"], "slow:", pa["slow_nodes"])
print("shaped   node medians GB/s:", pb["node_median_gbps"], "slow:", pb["slow_nodes"])
assert pb["slow_nodes"] == ["node4"], pb["slow_nodes"]
assert pb["slow_links"] == [], pb["slow_links"]
assert pa["slow_nodes"] == [] and pa["slow_links"] == [], (pa["slow_nodes"], pa["slow_links"])
def busbw(r):
    return max(c["busbw_gbps"] for c in r["collectives"] if c["op"] == "all_reduce" and c["bytes"] == 4 << 20)
print("all_reduce 4 MiB busbw GB/s: unshaped %.3f, shaped %.3f" % (busbw(a), busbw(b)))
assert busbw(b) < busbw(a), "all_reduce did not slow down"
PY
echo "ok: node4 named alone when shaped, no node when unshaped, all_reduce busbw dropped"
[ -n "${CUTOVER_KEEP_CLUSTER_RECORDS:-}" ] && cp "$work/unshaped.rec" "$work/shaped.rec" "$CUTOVER_KEEP_CLUSTER_RECORDS/"

# The assessment of the move from the unshaped cluster to the shaped one: node4 is a slow node of
# the target (a risk, not a blocker), and each side is held against the floors of its fabric: one
# floor at a size both reached (set above what veth gives), one at a size neither reached.
cat >"$work/floors.json" <<'FLOORS'
{"schema": "cutover.fabric-floors/1", "version": 1, "floors": [
 {"fabric": "netns-veth", "collective": "all_reduce", "scope": "inter-node", "nodes": 4,
  "bytes": 4194304, "busbw_gbps": 1000, "source": "the test: above what veth gives"},
 {"fabric": "netns-veth", "collective": "all_reduce", "scope": "inter-node", "nodes": 4,
  "bytes": 1073741824, "busbw_gbps": 1, "source": "the test: a size the run never reaches"}]}
FLOORS
# Both sides one GPU host (a fixture root): the host diff has nothing to say, the cluster all.
fp="$work/fp.json"
"$bin" -q probe collect --root "$src/tests/fixtures/hosts/h100-cuda12.4" --out "$fp" >/dev/null ||
  fail "probe collect of the fixture host failed"
"$bin" assess --source "$fp" --target "$fp" --cluster "$work/unshaped.rec" "$work/shaped.rec"   --fabric-floors "$work/floors.json" --out "$work/report" >"$work/assess.out" 2>&1 ||
  { rc=$?; cat "$work/assess.out"; fail "assess exited $rc"; }
python3 "$src/tests/harness/validate_schema.py" "$src/docs/schemas/report-2.json"   "$work/report/report.json" || fail "report.json does not match its schema"
python3 - "$work/report" <<'PY' || fail "the cluster section is wrong"
import json, sys
d = sys.argv[1]
r = json.load(open(d + "/report.json"))
assert r["verdict"] == "go-with-risks", r["verdict"]
codes = [(f["severity"], f["code"], f["message"]) for f in r["findings"]]
slow = [c for c in codes if c[1] == "cluster.slow_node"]
assert slow == [("warning", "cluster.slow_node", "the target cluster's pairwise matrix names slow node(s): node4")], codes
below = [c for c in codes if c[1] == "cluster.below_floor"]
assert len(below) == 2 and all(c[0] == "warning" for c in below), below
assert [c[1] for c in codes if c[1] == "cluster.slower"] == ["cluster.slower"], codes
assert not [c for c in codes if c[0] == "blocker"], codes
c = r["cluster"]
assert c["source_fabric"] == c["target_fabric"] == "netns-veth"
assert [(f["side"], f["below"]) for f in c["floors"]] == [("source", True), ("target", True)], c["floors"]
assert len(c["notes"]) == 2 and all("never reached that size (largest 4.0 MiB)" in n for n in c["notes"]), c["notes"]
assert c["compare"]["slow"]["target"]["slow_nodes"] == ["node4"]
cov = {x["area"]: x["assessed"] for x in r["coverage"]}
assert cov["cluster"] is True, cov
html = open(d + "/report.html").read()
assert 'id="chart-cluster-busbw"' in html and 'id="heatmap-target"' in html, "charts missing"
assert 'stroke="#b3261e"' not in html.split('id="heatmap-source"')[1].split("</figure>")[0], "the source has no slow link"
assert 'fill="#b3261e">node4' in html.split('id="heatmap-target"')[1], "node4 not marked in the heat map"
md = open(d + "/report.md").read()
assert "## Cluster" in md and "slow nodes node4" in md, md
PY
echo "ok: assess --cluster names node4 as the target's slow node, holds both sides against the floors, draws the charts"
