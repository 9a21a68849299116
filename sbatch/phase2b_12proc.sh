#!/bin/bash
# Phase 2b: 3 nodes x 4 ranks.  Config: configs/phase2b_12proc.yaml.
#   sbatch sbatch/phase2b_12proc.sh [--set key=value]...      (extra arguments are config overrides)
# Partition, account and time limit come from sbatch's own flags or the SBATCH_PARTITION,
# SBATCH_ACCOUNT and SBATCH_TIMELIMIT environment variables: nothing site-specific is written
# here.  The warning signal gives ryzen-step 120 s to checkpoint before the time limit (a
# checkpoint of the seed model commits in well under a second: docs/operations.md).
#SBATCH --job-name=ryzen-phase2b_12proc
#SBATCH --nodes=3
#SBATCH --ntasks-per-node=4
#SBATCH --cpus-per-task=1
#SBATCH --requeue
#SBATCH --open-mode=append
#SBATCH --signal=B:USR2@120
#SBATCH --output=%x-%j.out
set -euo pipefail
export OMP_NUM_THREADS=${SLURM_CPUS_PER_TASK:-1}
cd "${SLURM_SUBMIT_DIR:-.}"
exec "${RYZEN_STEP:-ryzen-step}" --config configs/phase2b_12proc.yaml "$@"
