# shellcheck shell=bash
# devcluster.d/cpu.sh: the per-node CPU quota.  Sourced by tools/devcluster.
#
# CPU quota (--cpu-quota, RYZEN_DEVCLUSTER_CPU_QUOTA): each node's processes run in the cgroup v1
# cpu controller's /sys/fs/cgroup/cpu/slurm_nX.  start_slurmd starts slurmd there, so its
# slurmstepd and job tasks inherit it (Slurm's cgroup/v1 plugin moves them in cpuset, memory,
# freezer and cpuacct only; where cpu and cpuacct share one hierarchy, Slurm's job cgroups are
# below slurm_nX and the quota, set on the parent, still holds).  cpu.cfs_quota_us /
# cpu.cfs_period_us = CORES, or -1 (no limit).  By default (auto) each node gets the machine's
# online CPUs over the nodes: four machines of equal speed that together have the machine's
# CPUs, as separate hosts would, whatever the machine (0.5 core on 2 CPUs, 4 on 16).  ryzen-train's
# preflight reads the quota back (health.json ranks[].cpu_quota) and every report's topology
# counts it in what each rank has of a core.  A slow CPU on demand: the end-to-end suites must
# pass with each node at a quarter of a core (tools/check --slow).
#
# A quota is not a slower CPU: a node that has used its quota stops until the period ends, and
# ranks that wait on each other every step stall with it.  So the period is the shortest the
# kernel allows for the share (its quota must be at least 1 ms: 2 ms at half a core, 4 ms at a
# quarter, 1 ms from one core up), and the kernel hands the quota to the CPUs in 250 us slices
# (set_cfs_slice).  docs/devcluster.md has the measurements behind both.
# ---------------------------------------------------------------------------------------------
CPU_CGROUP_ROOT=/sys/fs/cgroup/cpu
CFS_MIN_QUOTA_US=1000 # the kernel's minimum quota per period
CFS_MAX_PERIOD_US=1000000

# quota_cores: CPU_QUOTA as a number of cores ("auto": online CPUs / nodes; "none": 0).
quota_cores() {
  case ${CPU_QUOTA:-auto} in
    auto) awk -v c="$(getconf _NPROCESSORS_ONLN)" -v n="${#NODES[@]}" 'BEGIN { printf "%g\n", c / n }' ;;
    none) echo 0 ;;
    *) echo "$CPU_QUOTA" ;;
  esac
}

# quota_us: "QUOTA PERIOD" in microseconds for CPU_QUOTA cores (the shortest period whose quota is
# the kernel's 1 ms minimum, and not under 1 ms); "-1 PERIOD" for no limit.
quota_us() {
  local q
  q=$(quota_cores)
  [[ $q =~ ^([0-9]+|[0-9]*\.[0-9]+)$ ]] ||
    die "--cpu-quota / RYZEN_DEVCLUSTER_CPU_QUOTA: '$q' is not a number of cores (e.g. 0.25), auto or none"
  awk -v q="$q" -v m="$CFS_MIN_QUOTA_US" -v max="$CFS_MAX_PERIOD_US" 'BEGIN {
    if (q == 0) { print -1, 100000; exit 0 }
    p = int(m / q + 0.999999); if (p < 1000) p = 1000
    if (p > max) exit 1 # the kernel refuses a period over 1 s
    printf "%d %d\n", int(q * p + 0.5), p }' ||
    die "--cpu-quota $q: below the kernel's minimum of 0.001 core (1 ms per 1 s period)"
}

# The kernel hands a cgroup's quota out to each CPU in slices (kernel.sched_cfs_bandwidth_slice_us,
# 5000 by default): one CPU's first slice may be a node's whole quota, and the node's ranks on
# the other CPU then wait for the next period.  A quota brings slices of 250 us, a quarter of
# the smallest quota a period has; the machine's own value is kept in the state directory and
# put back by 'down' or by an 'up' without a quota.
CFS_SLICE=/proc/sys/kernel/sched_cfs_bandwidth_slice_us
CFS_SLICE_US=250
cfs_slice_saved() { echo "$STATE/cfs-slice.orig"; }

set_cfs_slice() {
  [[ -w $CFS_SLICE ]] || return 0
  [[ -e $(cfs_slice_saved) ]] || cat "$CFS_SLICE" >"$(cfs_slice_saved)"
  echo "$CFS_SLICE_US" >"$CFS_SLICE"
}

restore_cfs_slice() {
  local f
  f=$(cfs_slice_saved)
  [[ -e $f && -w $CFS_SLICE ]] || return 0
  cat "$f" >"$CFS_SLICE" && rm -f "$f"
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
  local us n d pid moved=0 got period
  read -r us period <<<"$(quota_us)"
  if ! have_cpu_cgroup; then
    [[ $us == -1 ]] && return 0
    if [[ ${CPU_QUOTA:-auto} == auto ]]; then
      note "CPU quota: none (no writable cgroup v1 cpu controller at $CPU_CGROUP_ROOT; the nodes" \
        "share the machine's CPUs, and the reports' topology says so)"
      return 0
    fi
    die "--cpu-quota needs the cgroup v1 cpu controller at $CPU_CGROUP_ROOT (not found or not" \
      "writable); the site profile needs cgroup v1 too (docs/devcluster.md)"
  fi
  for n in "${NODES[@]}"; do
    d=$(node_cpu_cgroup "$n")
    mkdir -p "$d"
    echo -1 >"$d/cpu.cfs_quota_us" # a new period must fit the quota in force
    echo "$period" >"$d/cpu.cfs_period_us"
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
    restore_cfs_slice
    note "CPU quota: none (nodes may use every CPU of the machine)"
  else
    set_cfs_slice
    note "CPU quota: $(quota_cores) core per node (${CPU_QUOTA:-auto}; cpu.cfs_quota_us=$us per cpu.cfs_period_us=$period in $CPU_CGROUP_ROOT/slurm_nX)"
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
  if [[ -r $CFS_SLICE ]]; then
    echo "  cfs bandwidth slice: $(cat "$CFS_SLICE") us (kernel.sched_cfs_bandwidth_slice_us)"
  fi
}
