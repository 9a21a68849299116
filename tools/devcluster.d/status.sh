# shellcheck shell=bash
# devcluster.d/status.sh: 'status', what runs and how the nodes are.  Sourced by tools/devcluster;
# uses daemons.sh, slurmd.sh's nodes_ready, cpu.sh's cpu_quota_status, netns.sh's net_status, and
# CONF, CLUSTER, MUNGE_SOCKET.
#
# Each daemon (running / STOPPED, pid, log), sinfo, the CPU quota, the network, and (site) the
# associations; exit 1 unless every daemon runs and all nodes are ready.  Not here: 'env'
# (env.sh).

cmd_status() {
  export SLURM_CONF=$CONF
  local d pid rc=0 profile
  profile=$(recorded_profile)
  echo "state dir: $STATE ($profile profile)"
  for d in $(profile_daemons "$profile"); do
    if pid=$(recorded_pid "$d"); then
      printf '  %-10s running  pid %-8s log %s\n' "$d" "$pid" "$(daemon_log "$d")"
    elif healthy "$d"; then
      printf '  %-10s running  (not started by devcluster) socket %s\n' "$d" "$MUNGE_SOCKET"
    else
      printf '  %-10s STOPPED  %-12s log %s\n' "$d" "" "$(daemon_log "$d")"
      rc=1
    fi
  done
  if alive slurmctld && [[ -f "$CONF" ]]; then
    sinfo -N -l || rc=1
    cpu_quota_status
    net_status
    nodes_ready || { warn "not all nodes are ready"; rc=1; }
    if [[ $profile == site ]]; then
      sacctmgr -n -P list associations cluster="$CLUSTER" format=account,user,qos 2>/dev/null |
        awk -F'|' 'BEGIN { print "associations (account|user|qos):" } { print "  " $0 }' || rc=1
    fi
  else
    warn "cluster is not up"
    rc=1
  fi
  return $rc
}
