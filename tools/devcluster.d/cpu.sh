# shellcheck shell=bash
# devcluster.d/cpu.sh: the per-node CPU quota.  Sourced by tools/devcluster.
#
# CPU quota (--cpu-quota, RYZEN_DEVCLUSTER_CPU_QUOTA): each node's processes run in the cgroup v1
# cpu controller's /sys/fs/cgroup/cpu/slurm_nX.  start_slurmd starts slurmd there, so its
# slurmstepd and job tasks inherit it (Slurm's cgroup/v1 plugin moves them in cpuset, memory,
# freezer and cpuacct only; where cpu and cpuacct share one hierarchy, Slurm's job cgroups are
# below slurm_nX and the quota, set on the parent, still holds).  cpu.cfs_quota_us /
# cpu.cfs_period_us = CORES, or -1 (no limit).  A slow CPU on demand: the end-to-end suites must
# pass with each node at a quarter of a core (tools/check --slow).
# ---------------------------------------------------------------------------------------------
CPU_CGROUP_ROOT=/sys/fs/cgroup/cpu
CFS_PERIOD_US=10000

# quota_us: the CFS quota in microseconds per period for CPU_QUOTA cores; -1 for no limit.
quota_us() {
  local q=${CPU_QUOTA:-0}
  [[ $q =~ ^([0-9]+|[0-9]*\.[0-9]+)$ ]] ||
    die "--cpu-quota / RYZEN_DEVCLUSTER_CPU_QUOTA: '$q' is not a number of cores (e.g. 0.25)"
  awk -v q="$q" -v p="$CFS_PERIOD_US" 'BEGIN {
    if (q == 0) { print -1; exit 0 }
    us = int(q * p + 0.5)
    if (us < 1000) exit 1 # the kernel refuses a quota under 1 ms
    print us }' ||
    die "--cpu-quota $q: below the kernel's minimum of $((1000 * 100 / CFS_PERIOD_US))% of a core" \
      "(1 ms per ${CFS_PERIOD_US} us period)"
}

have_cpu_cgroup() { [[ -w $CPU_CGROUP_ROOT/cgroup.procs && -e $CPU_CGROUP_ROOT/cpu.cfs_quota_us ]]; }

node_cpu_cgroup() { echo "$CPU_CGROUP_ROOT/slurm_$1"; }

# cpu_cgroup_enter NODE: move the calling (sub)shell into NODE's cpu cgroup, made if missing; a
# no-op without a cgroup v1 cpu controller (apply_cpu_quota refuses a quota there).
cpu_cgroup_enter() {
  have_cpu_cgroup || return 0
  local d
  d=$(node_cpu_cgroup "$1")
  mkdir -p "$d"
  echo "$BASHPID" >"$d/cgroup.procs"
}

# node_pids NODE: the pids of NODE's slurmd and of every process in its Slurm job cgroups
# (slurmstepd and the tasks: proctrack/cgroup keeps them all in freezer/slurm_nX).
node_pids() {
  recorded_pid "slurmd-$1" || true
  find "/sys/fs/cgroup/freezer/slurm_$1" -name cgroup.procs -exec cat {} + 2>/dev/null || true
}

# apply_cpu_quota: set every node's quota, and move into the node's cgroup any of its processes
# that run outside it (a slurmd started before the quota existed, and its jobs), so that the
# switch holds for a cluster that was already up.  Then read it back: each slurmd must be in
# its node's cgroup, whose quota must be the one asked for.
apply_cpu_quota() {
  local us n d pid moved=0 got
  us=$(quota_us)
  if ! have_cpu_cgroup; then
    [[ $us == -1 ]] && return 0
    die "--cpu-quota needs the cgroup v1 cpu controller at $CPU_CGROUP_ROOT (not found or not" \
      "writable); the site profile needs cgroup v1 too (docs/devcluster.md)"
  fi
  for n in "${NODES[@]}"; do
    d=$(node_cpu_cgroup "$n")
    mkdir -p "$d"
    echo "$CFS_PERIOD_US" >"$d/cpu.cfs_period_us"
    echo "$us" >"$d/cpu.cfs_quota_us"
    for pid in $(node_pids "$n"); do
      [[ $(cpu_cgroup_of "$pid") == "/slurm_$n" ]] && continue
      echo "$pid" >"$d/cgroup.procs" 2>/dev/null && moved=$((moved + 1)) # gone meanwhile: fine
    done
    pid=$(recorded_pid "slurmd-$n") || continue
    got=$(cpu_cgroup_of "$pid")
    [[ $got == "/slurm_$n" ]] || die "slurmd of $n (pid $pid) is in cpu cgroup '$got', not /slurm_$n"
    [[ $(cat "$d/cpu.cfs_quota_us") == "$us" ]] || die "$d/cpu.cfs_quota_us is not $us"
  done
  ((moved == 0)) || note "moved $moved running process(es) into their node's cpu cgroup"
  if [[ $us == -1 ]]; then
    note "CPU quota: none (nodes may use every CPU of the machine)"
  else
    note "CPU quota: ${CPU_QUOTA} core per node (cpu.cfs_quota_us=$us per cpu.cfs_period_us=$CFS_PERIOD_US in $CPU_CGROUP_ROOT/slurm_nX)"
  fi
}

# cpu_cgroup_of PID: the process's path in the cpu hierarchy ("/slurm_n1"), from /proc/PID/cgroup.
cpu_cgroup_of() {
  awk -F: '$2 ~ /(^|,)cpu(,|$)/ { print $3; exit }' "/proc/$1/cgroup" 2>/dev/null
}

# cpu_quota_status: one line per node for 'status'.
cpu_quota_status() {
  have_cpu_cgroup || return 0
  local n d q
  for n in "${NODES[@]}"; do
    d=$(node_cpu_cgroup "$n")
    [[ -r $d/cpu.cfs_quota_us ]] || continue
    q=$(cat "$d/cpu.cfs_quota_us")
    if [[ $q == -1 ]]; then
      echo "  cpu quota $n: none ($d)"
    else
      echo "  cpu quota $n: $(awk -v q="$q" -v p="$(cat "$d/cpu.cfs_period_us")" 'BEGIN { printf "%g", q / p }') core ($q us per $(cat "$d/cpu.cfs_period_us") us, $d)"
    fi
  done
}
