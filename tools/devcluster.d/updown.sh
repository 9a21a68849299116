# shellcheck shell=bash
# devcluster.d/updown.sh: 'up' and 'down', the order of the cluster's life.  Sourced by
# tools/devcluster; uses every other devcluster.d file, and parse_up_args's UP_PROFILE and UP_NET.
#
# up: packages, configs, a switch of profile or network mode, the ports, then munged, the
# users, MariaDB, slurmdbd, the accounts, slurmctld, the slurmd, and the CPU quota and link
# rate; a no-op for a cluster already up and healthy.  down: running jobs cancelled, then the
# daemons in reverse order, the cgroups and the namespaces.  Not here: how one daemon is started
# or stopped (daemons.sh, munge.sh, mariadb.sh, slurmd.sh).

cmd_up() {
  [[ $(id -u) -eq 0 ]] || die "must run as root (slurmd, the cgroups and the users need it)"
  local profile old running=0 t0=$SECONDS n daemons all
  parse_up_args "$@"
  profile=$UP_PROFILE
  set_profile "$profile"
  ensure_packages "$profile"
  export SLURM_CONF=$CONF
  local old_net
  old_net=$(recorded_net_mode)
  if [[ $profile == light ]]; then NET_MODE=loopback; else NET_MODE=$(net_choose "$UP_NET"); fi

  prepare_dirs "$profile"
  old=$(recorded_profile)
  mapfile -t daemons < <(profile_daemons "$profile")
  if [[ -f "$CONF" && ($old != "$profile" || $old_net != "$NET_MODE") ]]; then
    note "switching from the $old profile ($old_net network) to $profile ($NET_MODE network):" \
      "stopping it (its job state is kept)"
    NET_MODE=$old_net cmd_down
  fi
  if write_confs "$profile"; then
    # A new or changed config (e.g. this script was updated): daemons from the old one go.
    mapfile -t all < <(all_daemons)
    running=$(count_alive "${all[@]}")
    if ((running > 0)); then
      note "configuration changed: restarting the $running running daemon(s)"
      cmd_down
    fi
    rm -rf "${STATE:?}/ctld" "${STATE:?}/spool" # job state of a script from before the profiles
  elif (($(count_healthy "${daemons[@]}") == ${#daemons[@]})) && nodes_ready; then
    [[ $profile == light ]] || users_exist || ensure_users
    [[ $NET_MODE == ns ]] && net_up # idempotent: a setting this script gained since is applied
    apply_cpu_quota
    note "already up ($profile profile, $NET_MODE network, $STATE)"
    return 0
  fi
  check_ports "${daemons[@]}"
  echo "$profile" >"$PROFILE_FILE"
  echo "$NET_MODE" >"$NET_MODE_FILE"
  [[ $NET_MODE == ns ]] && net_up
  start_munged
  if [[ $profile == site ]]; then
    ensure_users
    start_mariadb
    start_slurmdbd
    setup_accounts
  fi
  start_slurmctld
  for n in "${NODES[@]}"; do start_slurmd "$n"; done
  sleep 0.5
  resume_nodes
  wait_nodes
  apply_cpu_quota
  if [[ $NET_MODE == ns ]]; then
    for n in "${NODES[@]}"; do link_apply "$n" "$LINK_DEFAULT_RATE" 0 no; done
  fi
  if [[ $profile == site ]]; then
    note "up in $((SECONDS - t0))s: site profile, ${#NODES[@]} nodes x $SITE_CPUS CPUs x" \
      "$SITE_MEM_MB MB, $NET_MODE network, partitions batch (default) and urgent, SLURM_CONF=$CONF"
  else
    note "up in $((SECONDS - t0))s: light profile, ${#NODES[@]} nodes x $LIGHT_CPUS CPUs," \
      "partition batch, SLURM_CONF=$CONF"
  fi
}

# The per-node cgroups slurmd made (cgroup v1: <controller>/slurm_nX/...), and cpu/slurm_nX that
# start_slurmd made: removed once empty.
remove_cgroups() {
  local n d
  for n in "${NODES[@]}"; do
    for d in /sys/fs/cgroup/*/"slurm_$n"; do
      [[ -d "$d" ]] || continue
      find "$d" -depth -type d -exec rmdir {} \; 2>/dev/null || true
      [[ -d "$d" ]] && warn "cgroup $d is still in use; left in place"
    done
  done
  restore_cfs_slice
  return 0
}

cmd_down() {
  export SLURM_CONF=$CONF
  local rc=0 i jobs=()
  # Jobs still running would leave their slurmstepd and tasks behind: cancel them first.
  # (Pending jobs stay in the saved state and run after the next 'up'.)
  if alive slurmctld; then
    mapfile -t jobs < <(squeue -h -t running,suspended,configuring,completing -o %i 2>/dev/null | sort -u)
    if ((${#jobs[@]} > 0)); then
      note "cancelling running jobs: ${jobs[*]}"
      scancel "${jobs[@]}" 2>/dev/null || true
      for ((i = 0; i < 120; i++)); do
        [[ -z "$(squeue -h -t running,suspended,configuring,completing -o %i 2>/dev/null)" ]] && break
        sleep 0.25
      done
    fi
  fi
  stop_daemons "${NODES[@]/#/slurmd-}" slurmctld || rc=1
  stop_daemons slurmdbd || rc=1 # after slurmctld, which reports to it while shutting down
  # Last: slurmdbd writes to MariaDB and everything authenticates through munged until here.
  stop_daemons mariadbd munged || rc=1
  munge_forget_socket_dir
  remove_cgroups
  [[ $NET_MODE == ns ]] && net_down
  return $rc
}
