# Sourced by the cluster tests that make their own cluster: NODES network namespaces (the nodes)
# joined by veth pairs to a bridge in a namespace of its own, so the root namespace is untouched.
# Node i has 10.211.0.i/24 on eth0 and, run through `in_node i CMD`, the host name node<i> in a
# UTS namespace of its own. Namespaces are entered with nsenter --net (not `ip netns exec`,
# which remounts /sys: slurmd then fails its cgroup check).
#
# The caller sets `prefix` (unique per run), `nodes` and `work` (a temporary folder), then calls
# netns_make_nodes; netns_cleanup (from its EXIT trap) kills every process left in the
# namespaces and deletes them. Needs root, ip, nsenter and unshare; netns_make_nodes returns 1
# when the kernel refuses a namespace (the caller skips).

netns_names() {
  echo "$prefix-br"
  for i in $(seq 1 "$nodes"); do echo "$prefix-n$i"; done
}

netns_cleanup() {
  for ns in $(netns_names); do
    if [ -e "/run/netns/$ns" ]; then
      for pid in $(ip netns pids "$ns" 2>/dev/null); do kill -9 "$pid" 2>/dev/null || true; done
      ip netns del "$ns" 2>/dev/null || true
    fi
  done
}

# in_node I CMD...: CMD (a shell command line) in node I's network namespace, as host node<I>.
in_node() {
  local i="$1"; shift
  nsenter --net="/run/netns/$prefix-n$i" unshare --uts sh -c "hostname node$i && $*"
}

# Makes the bridge and the nodes, $work/hosts (an mpirun host file, one slot a node) and
# $work/agent (an rsh agent for mpirun: `agent 10.211.0.I CMD` runs CMD in node I).
netns_make_nodes() {
  ip netns add "$prefix-br" || return 1
  ip -n "$prefix-br" link add br0 type bridge
  ip -n "$prefix-br" link set br0 up
  : >"$work/hosts"
  local i ns
  for i in $(seq 1 "$nodes"); do
    ns="$prefix-n$i"
    ip netns add "$ns"
    ip -n "$prefix-br" link add "v$i" type veth peer name eth0 netns "$ns"
    ip -n "$prefix-br" link set "v$i" master br0
    ip -n "$prefix-br" link set "v$i" up
    ip -n "$ns" addr add "10.211.0.$i/24" dev eth0
    ip -n "$ns" link set eth0 up
    ip -n "$ns" link set lo up
    echo "10.211.0.$i slots=1" >>"$work/hosts"
  done
  cat >"$work/agent" <<AGENT
#!/bin/sh
host="\$1"; shift
i="\${host##*.}"
exec nsenter --net=/run/netns/$prefix-n\$i unshare --uts sh -c "hostname node\$i && \$*"
AGENT
  chmod +x "$work/agent"
}
