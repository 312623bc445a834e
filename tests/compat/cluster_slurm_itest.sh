#!/usr/bin/env bash
# The cluster suite under Slurm, for real: the namespaced nodes of tests/compat/netns_nodes.sh
# each run slurmd (Debian's slurm-wlm, proctrack/linuxproc, task/none, no accounting,
# SlurmUser=root, spool, pid, log and TmpFS paths per node), node1 also slurmctld, all
# authenticated by one munged of the test's own (its own key and socket). Then, from node1:
#  - `srun --mpi=pmix -N 4` runs the cpu suite: the record names launcher "srun (PMIx)", the four
#    nodes by Slurm's node names, every collective correct, the matrix complete;
#  - `srun` without --mpi=pmix (four worlds of one rank) is refused with the fix, exit 2;
#  - with FAKE_PLUGIN (tests/compat/fake_cluster_device.cc), the cuda path on 2 nodes x 2
#    ranks: each rank takes the device of its Slurm local rank (node1: 0 and 1, node2: 0 and 1)
#    and joins the one communicator with rank 0's id.
# Usage: cluster_slurm_itest.sh BUILD_DIR SOURCE_DIR [FAKE_PLUGIN]. Exit 77 (skip) when not root, without
# slurmd/slurmctld/srun/munged, the MPI plugin, Slurm's PMIx plugin or network namespaces.
# Everything is removed on exit.
set -euo pipefail
build="$1"; src="$2"; fake="${3:-}"
bin="$build/apps/cutover/cutover"
skip() { echo "SKIP: $*"; exit 77; }
fail() { echo "FAIL: $*"; exit 1; }
[ "$(id -u)" -eq 0 ] || skip "needs root (network namespaces, slurmd)"
for t in ip nsenter unshare slurmd slurmctld srun munged; do
  command -v "$t" >/dev/null || skip "$t not installed (slurmd, slurmctld, slurm-client, munge)"
done
[ -e "$build/apps/cutover/libcutover_compat_mpi.so" ] || skip "MPI plugin not built"
ls /usr/lib/*/slurm-wlm/mpi_pmix.so >/dev/null 2>&1 || skip "Slurm's PMIx plugin (mpi_pmix.so) not installed"

prefix="cutover-s$$"
nodes=4
work="$(mktemp -d)"
chmod 755 "$work"  # munged wants its socket's folders searchable by all
. "$src/tests/compat/netns_nodes.sh"
cleanup() {
  netns_cleanup
  [ -f "$work/munge/pid" ] && kill "$(cat "$work/munge/pid")" 2>/dev/null || true
  if [ -n "${KEEP_SLURM_LOGS:-}" ]; then cp "$work"/*.log "$KEEP_SLURM_LOGS/" 2>/dev/null || true; fi
  rm -rf "$work"
}
trap cleanup EXIT
trap 'exit 1' INT TERM
netns_make_nodes || skip "cannot create a network namespace"

# munged: a key and socket of this test only (the host's munged, if any, is left alone).
mkdir -m 755 "$work/munge"
head -c 1024 /dev/urandom >"$work/munge/key"
chmod 600 "$work/munge/key"
munged --socket="$work/munge/sock" --key-file="$work/munge/key" --pid-file="$work/munge/pid" \
  --log-file="$work/munge/log" --seed-file="$work/munge/seed" ||
  { cat "$work/munge/log"; fail "munged did not start"; }

mkdir -p "$work/ctld"
for i in $(seq 1 $nodes); do mkdir -p "$work/spool/node$i" "$work/tmp/node$i"; done
cat >"$work/slurm.conf" <<CONF
ClusterName=cutover-test
SlurmctldHost=node1(10.211.0.1)
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
AuthInfo=socket=$work/munge/sock
CredType=cred/munge
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
MpiDefault=none
ReturnToService=2
StateSaveLocation=$work/ctld
SlurmctldPidFile=$work/slurmctld.pid
SlurmctldLogFile=$work/slurmctld.log
SlurmdSpoolDir=$work/spool/%n
SlurmdPidFile=$work/slurmd-%n.pid
SlurmdLogFile=$work/slurmd-%n.log
TmpFS=$work/tmp/%n
SlurmctldTimeout=30
SlurmdTimeout=30
NodeName=node[1-$nodes] NodeAddr=10.211.0.[1-$nodes] CPUs=1 State=UNKNOWN
PartitionName=test Nodes=ALL Default=YES MaxTime=INFINITE State=UP
CONF
export SLURM_CONF="$work/slurm.conf"

t0=$(date +%s%N)
in_node 1 "exec slurmctld -f $SLURM_CONF" || { cat "$work/slurmctld.log"; fail "slurmctld did not start"; }
for i in $(seq 1 $nodes); do
  in_node "$i" "exec slurmd -f $SLURM_CONF -N node$i" ||
    { cat "$work/slurmd-node$i.log"; fail "slurmd on node$i did not start"; }
done
# Up when all four nodes are idle.
for _ in $(seq 1 100); do
  idle=$(in_node 1 "sinfo -h -N -t idle -o %N" 2>/dev/null | sort -u | wc -l || true)
  [ "$idle" -eq $nodes ] && break
  sleep 0.2
done
[ "$idle" -eq $nodes ] || { in_node 1 "sinfo -N" || true; cat "$work"/*.log; fail "the nodes never became idle"; }
echo "slurm up: $(( ($(date +%s%N) - t0) / 1000000 )) ms"

export OMPI_MCA_btl=tcp,self OMPI_MCA_btl_tcp_if_include=10.211.0.0/24
export OMPI_MCA_oob_tcp_if_include=10.211.0.0/24
t0=$(date +%s%N)
in_node 1 "exec timeout 240 srun --mpi=pmix -N $nodes --ntasks-per-node=1 $bin compat run \
  --suite cluster --backend cpu --ops all_reduce,alltoall -b 1KiB -e 256KiB -f 16 --reps 3 \
  --pair-bytes 256KiB --pair-reps 2 --passes 1 --record $work/slurm.rec" >"$work/srun.out" 2>&1 ||
  { rc=$?; cat "$work/srun.out" "$work"/slurmd-node*.log; fail "srun --mpi=pmix exited $rc"; }
echo "srun --mpi=pmix -N $nodes: $(( ($(date +%s%N) - t0) / 1000000 )) ms"
python3 "$src/tests/harness/validate_schema.py" "$src/docs/schemas/compat-cluster-1.json" \
  "$work/slurm.rec" || fail "the record does not match its schema"
python3 - "$work/slurm.rec" <<'PY' || { cat "$work/srun.out"; fail "the Slurm record is wrong"; }
import json, sys
r = json.load(open(sys.argv[1]))
assert r["complete"] is True and r["world_size"] == 4, r
assert r["launcher"] == "srun (PMIx)", r["launcher"]
assert r["rank_nodes"] == ["node1", "node2", "node3", "node4"], r["rank_nodes"]
assert sorted(n["name"] for n in r["nodes"]) == ["node1", "node2", "node3", "node4"], r["nodes"]
assert r["collectives"] and all(c["correct"] for c in r["collectives"]), r["collectives"]
bw = r["pairwise"]["bw_gbps"]
assert all((bw[a][b] > 0) == (a != b) for a in range(4) for b in range(4)), bw
assert r["pairwise"]["rule_applied"], r["pairwise"]["rule_reason"]
PY
echo "ok: srun --mpi=pmix -N 4: launcher srun (PMIx), nodes node1..node4, every collective correct"

# Plain srun (no PMIx): four singletons that cannot see each other, refused with the fix.
set +e
in_node 1 "exec timeout 120 srun -N 2 --ntasks-per-node=1 $bin compat run --suite cluster \
  --record $work/plain.rec" >"$work/plain.out" 2>&1
rc=$?
set -e
[ "$rc" -eq 2 ] || { cat "$work/plain.out"; fail "srun without PMIx: exit $rc, want 2"; }
grep -q "srun --mpi=pmix" "$work/plain.out" || { cat "$work/plain.out"; fail "the fix is not named"; }
[ ! -e "$work/plain.rec" ] || fail "srun without PMIx wrote a record"
echo "ok: srun without --mpi=pmix refused with the fix, exit 2"

# The cuda path under srun, on the fake device: 2 nodes x 2 ranks (-O: one CPU a node).
[ -n "$fake" ] || exit 0
mkdir -p "$work/fakelog"
in_node 1 "CUTOVER_CUDA_PLUGIN=$fake CUTOVER_FAKE_GPUS=2 CUTOVER_FAKE_CLUSTER_LOG=$work/fakelog \
  exec timeout 240 srun --mpi=pmix -N 2 --ntasks-per-node=2 -O $bin compat run --suite cluster \
  --backend cuda --ops all_reduce -b 1KiB -e 4KiB -f 4 --reps 2 --pair-bytes 16KiB --passes 1 \
  --record $work/fake.rec" >"$work/fake.out" 2>&1 ||
  { rc=$?; cat "$work/fake.out"; fail "srun of the cuda path exited $rc"; }
python3 - "$work/fake.rec" "$work/fakelog" <<'PY' || { cat "$work/fake.out"; fail "the cuda path under srun"; }
import json, os, sys
r = json.load(open(sys.argv[1]))
assert r["complete"] and r["launcher"] == "srun (PMIx)" and r["transport"]["kind"] == "nccl", r
assert all(c["correct"] for c in r["collectives"]), r["collectives"]
devs = [(d["node"], d["device"]) for d in r["transport"]["devices"]]
assert devs == [("node1", 0), ("node1", 1), ("node2", 0), ("node2", 1)], devs
assert "NCCL_ALGO=Ring" in r["transport"]["note"], r["transport"]
assert sorted(r["pairwise"]["intra_node_gbps"]) == ["node1", "node2"], r["pairwise"]
# Two nodes, no NCCL_ALGO: all_reduce measured again on a second communicator with Ring.
ring = r["ring_all_reduce"]
assert ring["algo"] == "Ring", ring
assert [(c["bytes"], c["in_place"]) for c in ring["collectives"]] == \
    [(c["bytes"], c["in_place"]) for c in r["collectives"]], ring
assert all(c["correct"] for c in ring["collectives"]), ring
logs = [[l.split() for l in open(os.path.join(sys.argv[2], "rank%d" % k))] for k in range(4)]
assert all(len(l) == 2 for l in logs), logs
for comm, algo in ((0, "-"), (1, "Ring")):
    assert len({l[comm][-1] for l in logs}) == 1, logs  # one id per communicator
    assert [(int(l[comm][5]), l[comm][7]) for l in logs] == [(0, algo), (1, algo), (0, algo), (1, algo)], logs
assert logs[0][0][-1] != logs[0][1][-1], "the second communicator reused the first one's id"
PY
echo "ok: the cuda path under srun: device = Slurm local rank on each node, one id per communicator, the Ring pass on two nodes, all correct"
