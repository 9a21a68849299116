#!/bin/bash
# Phase 2a: 2 nodes x 4 ranks.  Config: phase2a_8proc.yaml, found in
# RYZEN_CONFIG_DIR, else ../configs beside this template, else $SLURM_SUBMIT_DIR/configs, else the
# installed configs (docs/operations.md, "Where files are found").
#   sbatch [-A ACCOUNT -p PARTITION --time=... --mem=... -c N] phase2a_8proc.sh [--set key=value]...
# Extra arguments are config overrides.  Partition, account, QOS, time limit, memory and CPUs per
# task come from sbatch's own flags (or SBATCH_* variables); nothing site-specific is written
# here, and promotion and rollback give the next job the same flags.  The warning signal gives
# ryzen-step 120 s to checkpoint before the time limit; health.stop_signal must name the same
# signal (ryzen-step checks it at start).  A spare node (`sbatch -N <one more> --no-kill`) keeps
# the phase's ranks after a node is lost: ryzen-step runs the steps again without it
# (docs/reliability.md).  Not the default: under --no-kill Slurm ends the job FAILED, not
# requeued, when the lost node is the batch host.
#SBATCH --job-name=ryzen-phase2a_8proc
#SBATCH --nodes=2
#SBATCH --ntasks-per-node=4
#SBATCH --cpus-per-task=1
#SBATCH --requeue
#SBATCH --open-mode=append
#SBATCH --signal=B:USR2@120
#SBATCH --output=%x-%j.out
# Until ryzen-step has its own handlers, a stop signal must not kill the job by its default
# action; ryzen-step then asks Slurm whether a time limit or a preemption is under way.
trap '' USR1 USR2
export OMP_NUM_THREADS=${SLURM_CPUS_PER_TASK:-1}
exec "${RYZEN_STEP:-ryzen-step}" --config phase2a_8proc "$@"
