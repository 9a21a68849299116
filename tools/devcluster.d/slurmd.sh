# shellcheck shell=bash
# devcluster.d/slurmd.sh: the Slurm daemons' start-up (slurmdbd, slurmctld, a slurmd per node) and
# the nodes' readiness.  Sourced by tools/devcluster; uses daemons.sh, packages.sh, cpu.sh and
# netns.sh, and CONF, NODES, NET_MODE, TIMEOUT.
#
# Each start is a no-op for a daemon that runs; a daemon that fails to start stops 'up' with
# the tail of its log (fail_daemon), and leaves the others running for inspection.  A slurmd
# starts in its node's cpu cgroup (cpu.sh) and, in the ns mode, in its node's namespaces
# (netns.sh): its job steps inherit both.  Not here: the configs they read (configs.sh),
# accounts (accounts.sh), stopping (daemons.sh).

start_slurmdbd() {
  alive slurmdbd && return 0
  local bin out i err=
  bin=$(need_bin slurmdbd slurmdbd)
  # slurmdbd reads slurmdbd.conf from the directory of $SLURM_CONF; it daemonizes itself.
  if ! out=$(SLURM_CONF=$CONF detached "$bin" </dev/null 2>&1); then
    echo "$out" >&2
    fail_daemon slurmdbd "failed to start"
  fi
  wait_pid slurmdbd 15 || fail_daemon slurmdbd "did not start"
  # The first start creates the tables (tens of seconds on 2 cores).
  for ((i = 0; i < TIMEOUT * 5; i++)); do
    err=$(sacctmgr -n -P list cluster format=cluster 2>&1 >/dev/null) && return 0
    alive slurmdbd || fail_daemon slurmdbd "exited during start-up"
    sleep 0.2
  done
  warn "sacctmgr said: $err"
  fail_daemon slurmdbd "does not answer sacctmgr on port $DBD_PORT"
}

start_slurmctld() {
  alive slurmctld && return 0
  local bin out
  bin=$(need_bin slurmctld slurmctld)
  if ! out=$(detached "$bin" -f "$CONF" </dev/null 2>&1); then
    echo "$out" >&2
    fail_daemon slurmctld "failed to start"
  fi
  wait_pid slurmctld 15 || fail_daemon slurmctld "did not start"
  local i
  for ((i = 0; i < 150; i++)); do
    scontrol ping 2>/dev/null | grep -q 'is UP' && return 0
    alive slurmctld || fail_daemon slurmctld "exited during start-up"
    sleep 0.1
  done
  fail_daemon slurmctld "does not answer 'scontrol ping'"
}

start_slurmd() {
  local n=$1 bin out prefix=()
  alive "slurmd-$n" && return 0
  bin=$(need_bin slurmd slurmd)
  # In the node's cpu cgroup from the start: its job steps inherit it (apply_cpu_quota).  In
  # the ns mode in the node's namespaces, which its job steps inherit too.
  [[ $NET_MODE == ns ]] && mapfile -d '' -t prefix < <(net_node_prefix "$n")
  if ! out=$(cpu_cgroup_enter "$n" && detached "${prefix[@]}" "$bin" -N "$n" -f "$CONF" </dev/null 2>&1); then
    echo "$out" >&2
    fail_daemon "slurmd-$n" "failed to start"
  fi
}

# Node states as "name state" lines; ready = idle/mixed/allocated/completing and responding.
node_states() { sinfo -h -N -o '%N %T' 2>/dev/null | sort -u; }

nodes_ready() {
  local states count
  states=$(node_states) || return 1
  count=$(awk '$2 ~ /^(idle|mixed|allocated|completing)$/' <<<"$states" | wc -l)
  [[ "$count" -eq ${#NODES[@]} ]]
}

wait_nodes() {
  local i n
  for ((i = 0; i < TIMEOUT * 4; i++)); do
    nodes_ready && return 0
    for n in "${NODES[@]}"; do
      if ((i > 8)) && ! alive "slurmd-$n"; then
        fail_daemon "slurmd-$n" "is not running"
      fi
    done
    sleep 0.25
  done
  warn "nodes not ready after ${TIMEOUT}s:"
  node_states >&2 || true
  for n in slurmctld "${NODES[@]/#/slurmd-}"; do
    echo "---- last lines of $(daemon_log "$n")" >&2
    tail -n 10 "$(daemon_log "$n")" >&2 2>/dev/null || true
  done
  exit 1
}

# Undo a DOWN/DRAIN left over from a previous life (state save survives 'down').
resume_nodes() {
  local bad
  bad=$(node_states | awk '$2 ~ /down|drain|fail/ {print $1}' | paste -sd, -)
  if [[ -n "$bad" ]]; then
    scontrol update nodename="$bad" state=resume >/dev/null 2>&1 || true
  fi
}
