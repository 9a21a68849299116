#!/usr/bin/env bash
# devcluster.sh: the one-machine Slurm cluster of tools/devcluster (docs/devcluster.md) comes up
# and behaves like a real multi-node cluster:
#   up         tools/devcluster up succeeds (or finds the cluster already up)
#   nodes      sinfo shows n1..n4 idle
#   srun       srun -N2 -n4 --mpi=pmix runs tasks on two different virtual nodes
#   requeue    scontrol requeue of a running batch job: it runs again within seconds with
#              SLURM_RESTART_COUNT=1 (bounded wait; the measured delay is printed)
# The cluster is LEFT RUNNING on purpose: the end-to-end tests that follow reuse it. Stop it with
# `tools/devcluster down`. Needs root (slurmd does); skipped (exit 77) otherwise. About 15 s.
set -u
src=${top_srcdir:-.}
devcluster=$src/tools/devcluster
tmp=$(mktemp -d /tmp/rz-devcluster-XXXXXX)
job=
# shellcheck disable=SC2317  # called from the EXIT trap
cleanup() {
  if [ -n "$job" ]; then scancel "$job" 2>/dev/null; fi
  rm -rf "$tmp"
}
trap cleanup EXIT
. "$src/tests/lib.sh"

if [ "$(id -u)" -ne 0 ]; then
  echo "SKIP: tools/devcluster needs root (it starts slurmd and slurmctld); run the tests as root"
  exit 77
fi

# wait_for SECONDS COMMAND...: poll every 0.2 s until COMMAND succeeds; false on timeout.
wait_for() {
  local limit=$1 i
  shift
  for ((i = 0; i < limit * 5; i++)); do
    "$@" && return 0
    sleep 0.2
  done
  return 1
}

t0=$(date +%s)
expect "up" 0 "" -- "$devcluster" up
echo "     | up took $(($(date +%s) - t0)) s: $(tail -n 1 "$tmp/out")"
eval "$("$devcluster" env)"

# (1) four idle nodes
sinfo -h -N -o '%N %T' 2>&1 | sort -u >"$tmp/sinfo"
if [ "$(cat "$tmp/sinfo")" = "$(printf 'n%s idle\n' 1 2 3 4)" ]; then
  ok "sinfo: n1..n4 idle"
else
  bad "sinfo: n1..n4 idle"; show "$tmp/sinfo"
fi

# (2) one step over two virtual nodes, with PMIx
expect "srun -N2 -n4 --mpi=pmix" 0 "n[1-4]" -- \
  timeout 60 srun -N2 -n4 --mpi=pmix printenv SLURMD_NODENAME
nodes=$(sort -u "$tmp/out" | grep -c '^n[1-4]$')
check "srun spans 2 nodes (got $nodes)" [ "$nodes" -eq 2 ]

# (5) requeue of a running batch job restarts it within seconds
cat >"$tmp/job.sh" <<'EOF'
#!/bin/bash
echo "run restart=${SLURM_RESTART_COUNT:-0} node=$SLURMD_NODENAME"
sleep 120
EOF
job=$(sbatch --parsable --requeue --open-mode=append -t 3 -J rz-devcluster-test \
  -D "$tmp" -o "$tmp/job.out" "$tmp/job.sh" 2>"$tmp/sbatch.err")
if [ -z "$job" ]; then
  bad "sbatch"; show "$tmp/sbatch.err"
elif ! wait_for 30 grep -qs 'restart=0' "$tmp/job.out"; then
  bad "batch job starts within 30 s"; squeue -j "$job" >"$tmp/sq" 2>&1; show "$tmp/sq"
else
  ok "batch job starts"
  t0=$(date +%s%N)
  expect "scontrol requeue" 0 "" -- scontrol requeue "$job"
  if wait_for 30 grep -qs 'restart=1' "$tmp/job.out"; then
    ms=$((($(date +%s%N) - t0) / 1000000))
    ok "requeued job runs again with SLURM_RESTART_COUNT=1 after ${ms} ms"
  else
    bad "requeued job runs again within 30 s"
    scontrol show job "$job" >"$tmp/sq" 2>&1; show "$tmp/sq"; show "$tmp/job.out"
  fi
fi

finish
